// The connectivity matrix of a pattern, as in the paper's Figure 3 (bottom row): row i is query i, column j
// is key j, and each cell says whether i attends to j through A1, A2 or both. The cells live in a QImage,
// one pixel per cell, so even n = 4096 (16M cells) is one buffer; the view zooms and pans over it, and a
// click picks a query row.
#pragma once

#include <QAbstractScrollArea>
#include <QImage>
#include <QPoint>

#include "stx/engine/pattern_view.h"

namespace stx::studio {

class ConnectivityView : public QAbstractScrollArea {
  Q_OBJECT

 public:
  // A cell's class; it is also the cell's pixel index in cellImage(), and the order matters: when zoomed
  // out, one screen pixel shows the largest class among its cells so that thin A2 lines do not vanish.
  enum class Cell : uchar { later = 0, none = 1, a1 = 2, a2 = 3, both = 4 };

  explicit ConnectivityView(QWidget* parent = nullptr);

  // Builds the matrix of `spec` (validated by the caller, n <= 4096).
  void setSpec(const engine::PatternSpec& spec);
  const engine::PatternSpec& spec() const { return spec_; }
  int size() const { return cells_.width(); }
  // The drawn cells: n x n, Format_Indexed8, pixel index = Cell.
  const QImage& cellImage() const { return cells_; }
  Cell cell(int query, int key) const;

  // Highlights row `query` and scrolls it into view when it is not visible.
  void setQuery(int query);
  int query() const { return query_; }

  // Screen pixels per cell. fitsView(): the zoom follows the view's size ("Fit").
  double zoom() const { return zoom_; }
  bool fitsView() const { return fit_; }
  void setZoom(double pixelsPerCell);
  void zoomIn();
  void zoomOut();
  void fitToView();
  // Where cell (query, key) is drawn, in viewport coordinates (it may lie outside the viewport).
  QRect cellRect(int query, int key) const;
  // The cell under a viewport point; false outside the matrix.
  bool cellAt(const QPoint& point, int* query, int* key) const;

  // Cells -> matrix of `spec`, row i filled from attended_positions (dense rows are filled directly).
  static QImage buildCells(const engine::PatternSpec& spec);

 signals:
  void queryPicked(int query);
  // The cell under the mouse; (-1, -1) when it leaves the matrix.
  void cellHovered(int query, int key);
  void zoomChanged(double pixelsPerCell);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void leaveEvent(QEvent* event) override;
  void changeEvent(QEvent* event) override;
  void scrollContentsBy(int dx, int dy) override;

 private:
  double fitZoom() const;
  double clampZoom(double zoom) const;
  // Zooms keeping the cell under `anchor` (viewport coordinates) in place.
  void zoomAround(double zoom, const QPointF& anchor, bool fit);
  int contentSize() const;
  QPoint origin() const;
  void updateScrollBars();
  void applyColors();
  const QImage& reducedCells();

  engine::PatternSpec spec_;
  QImage cells_;
  QImage reduced_;  // cells_ at zoom_ < 1, each pixel the largest class of its block
  double reducedZoom_ = 0;
  int query_ = 0;
  double zoom_ = 1;
  bool fit_ = true;
  QPoint pressPos_;
  QPoint pressScroll_;
  bool pressed_ = false;
  bool panning_ = false;
  int wheelAngle_ = 0;
};

}  // namespace stx::studio
