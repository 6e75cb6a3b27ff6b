// The picked query's view of the sequence, as in the paper's Figure 3 (top row): positions on a grid l
// wide (position p at row p / l, column p % l), coloured by how they reach the query: A1, A2, both, or
// only through two layers (two_hop_reach). The query cell is outlined.
#pragma once

#include <QImage>
#include <QWidget>
#include <vector>

#include "stx/engine/pattern_view.h"

namespace stx::studio {

class ReachGridView : public QWidget {
  Q_OBJECT

 public:
  // A position's mark; also its pixel index in gridImage(). `outside` fills the last row past n.
  enum class Mark : uchar { later = 0, unreached = 1, reach = 2, a1 = 3, a2 = 4, both = 5, outside = 6 };

  explicit ReachGridView(QWidget* parent = nullptr);

  // Marks every position of `spec` (validated by the caller) for `query`. The grid is spec.stride wide
  // (for dense too, where l only sets the grid's width).
  void setPattern(const engine::PatternSpec& spec, int query);
  int query() const { return query_; }
  int columns() const { return image_.width(); }
  int rows() const { return image_.height(); }
  Mark mark(int position) const;
  // Whether `position` can influence the query within two layers (every mark from reach to both).
  bool inReach(int position) const;
  // How many positions are in reach (two_hop_reach(spec, query).size()).
  int reachCount() const { return reachCount_; }
  // One pixel per grid cell, Format_Indexed8, pixel index = Mark.
  const QImage& gridImage() const { return image_; }
  // Where position `position` is drawn, in widget coordinates.
  QRectF cellRect(int position) const;

  QSize sizeHint() const override { return {360, 360}; }
  QSize minimumSizeHint() const override { return {120, 120}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  double cellSize() const;
  QPointF origin() const;
  void applyColors();

  std::vector<Mark> marks_;
  QImage image_;
  int query_ = 0;
  int reachCount_ = 0;
};

}  // namespace stx::studio
