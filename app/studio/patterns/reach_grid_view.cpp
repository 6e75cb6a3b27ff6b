#include "patterns/reach_grid_view.h"

#include <QEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "patterns/pattern_colors.h"

namespace stx::studio {

namespace {

QVector<QRgb> color_table(const QPalette& palette) {
  using Role = PatternColors::Role;
  const PatternColors colors = PatternColors::forPalette(palette);
  // Indexed by ReachGridView::Mark.
  return {colors.color(Role::later).rgb(),  colors.color(Role::none).rgb(), colors.color(Role::reach).rgb(),
          colors.color(Role::a1).rgb(),     colors.color(Role::a2).rgb(),   colors.color(Role::both).rgb(),
          colors.color(Role::outside).rgb()};
}

}  // namespace

ReachGridView::ReachGridView(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void ReachGridView::setPattern(const engine::PatternSpec& spec, int query) {
  using engine::PatternPart;
  const int n = static_cast<int>(spec.n);
  query_ = std::clamp(query, 0, n - 1);
  marks_.assign(static_cast<size_t>(n), Mark::later);
  std::fill(marks_.begin(), marks_.begin() + query_ + 1, Mark::unreached);
  if (engine::attended_count(spec, query_) == query_ + 1) {
    // The query attends to every earlier position itself (dense, or a sparse pattern with c = l or l = 1),
    // so all of them are in reach; the engine's two-hop walk would visit (i + 1)^2 pairs to say so.
    std::fill(marks_.begin(), marks_.begin() + query_ + 1, Mark::reach);
  } else {
    for (const int64_t p : engine::two_hop_reach(spec, query_)) marks_[static_cast<size_t>(p)] = Mark::reach;
  }
  reachCount_ = static_cast<int>(std::count(marks_.begin(), marks_.end(), Mark::reach));
  if (spec.pattern == "dense") {
    std::fill(marks_.begin(), marks_.begin() + query_ + 1, Mark::both);
  } else {
    for (const int64_t p : engine::attended_positions(spec, PatternPart::a1, query_)) {
      marks_[static_cast<size_t>(p)] = Mark::a1;
    }
    for (const int64_t p : engine::attended_positions(spec, PatternPart::a2, query_)) {
      Mark& m = marks_[static_cast<size_t>(p)];
      m = m == Mark::a1 ? Mark::both : Mark::a2;
    }
  }
  const int width = static_cast<int>(std::max<int64_t>(1, spec.stride));
  const int height = (n + width - 1) / width;
  image_ = QImage(width, height, QImage::Format_Indexed8);
  image_.fill(static_cast<uint>(Mark::outside));
  for (int p = 0; p < n; ++p)
    image_.scanLine(p / width)[p % width] = static_cast<uchar>(marks_[static_cast<size_t>(p)]);
  applyColors();
  update();
}

ReachGridView::Mark ReachGridView::mark(int position) const {
  if (position < 0 || position >= static_cast<int>(marks_.size())) return Mark::outside;
  return marks_[static_cast<size_t>(position)];
}

bool ReachGridView::inReach(int position) const {
  const Mark m = mark(position);
  return m == Mark::reach || m == Mark::a1 || m == Mark::a2 || m == Mark::both;
}

double ReachGridView::cellSize() const {
  if (image_.isNull()) return 1;
  return std::min(static_cast<double>(width() - 2) / image_.width(),
                  static_cast<double>(height() - 2) / image_.height());
}

QPointF ReachGridView::origin() const {
  const double cell = cellSize();
  return {(width() - cell * image_.width()) / 2, (height() - cell * image_.height()) / 2};
}

QRectF ReachGridView::cellRect(int position) const {
  const int width = std::max(1, image_.width());
  const double cell = cellSize();
  const QPointF o = origin();
  return {o.x() + (position % width) * cell, o.y() + (position / width) * cell, cell, cell};
}

void ReachGridView::applyColors() {
  if (!image_.isNull()) image_.setColorTable(color_table(palette()));
}

void ReachGridView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  if (image_.isNull()) return;
  const double cell = cellSize();
  const QPointF o = origin();
  const QRectF grid(o, QSizeF(cell * image_.width(), cell * image_.height()));
  painter.setRenderHint(QPainter::SmoothPixmapTransform, false);  // nearest neighbour: one block per position
  painter.drawImage(grid, image_);
  const PatternColors colors = PatternColors::forPalette(palette());
  // Lines between cells only where they leave room for the colours.
  if (cell >= 5) {
    painter.setPen(QPen(colors.gridLine(), 1));
    for (int c = 0; c <= image_.width(); ++c)
      painter.drawLine(QPointF(o.x() + c * cell, grid.top()), QPointF(o.x() + c * cell, grid.bottom()));
    for (int r = 0; r <= image_.height(); ++r)
      painter.drawLine(QPointF(grid.left(), o.y() + r * cell), QPointF(grid.right(), o.y() + r * cell));
  }
  // The query: a thick outline in the text colour, grown to stay visible when cells are tiny.
  QRectF query = cellRect(query_);
  const double grow = std::max(0.0, (6 - cell) / 2);
  query.adjust(-grow, -grow, grow, grow);
  painter.setRenderHint(QPainter::Antialiasing, false);
  painter.setPen(QPen(colors.outline(), cell >= 10 ? 3 : 2));
  painter.setBrush(Qt::NoBrush);
  painter.drawRect(query);
}

void ReachGridView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::PaletteChange) {
    applyColors();
    update();
  }
  QWidget::changeEvent(event);
}

}  // namespace stx::studio
