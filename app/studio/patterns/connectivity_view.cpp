#include "patterns/connectivity_view.h"

#include <QApplication>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "patterns/pattern_colors.h"

namespace stx::studio {

namespace {

constexpr double kMinZoom = 1.0 / 64;
constexpr double kMaxZoom = 64;

uchar index_of(ConnectivityView::Cell cell) { return static_cast<uchar>(cell); }

QVector<QRgb> color_table(const QPalette& palette) {
  using Role = PatternColors::Role;
  const PatternColors colors = PatternColors::forPalette(palette);
  // Indexed by ConnectivityView::Cell.
  return {colors.color(Role::later).rgb(), colors.color(Role::none).rgb(), colors.color(Role::a1).rgb(),
          colors.color(Role::a2).rgb(), colors.color(Role::both).rgb()};
}

// Zoom steps: whole pixels per cell from 1 up, so that nearest-neighbour cells all have the same size.
double step_zoom(double zoom, int steps) {
  for (; steps > 0; --steps)
    zoom = zoom >= 1 ? std::max(zoom + 1, std::round(zoom * 1.25)) : std::min(1.0, zoom * 1.25);
  for (; steps < 0; ++steps) {
    zoom = zoom > 1 ? std::max(1.0, std::min(zoom - 1, std::round(zoom / 1.25))) : zoom / 1.25;
  }
  return zoom;
}

}  // namespace

ConnectivityView::ConnectivityView(QWidget* parent) : QAbstractScrollArea(parent) {
  setMouseTracking(true);
  viewport()->setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  viewport()->setCursor(Qt::CrossCursor);
  setMinimumSize(160, 160);
}

QImage ConnectivityView::buildCells(const engine::PatternSpec& spec) {
  const int n = static_cast<int>(spec.n);
  QImage cells(n, n, QImage::Format_Indexed8);
  cells.setColorTable(color_table(QPalette()));
  const bool dense = spec.pattern == "dense";
  for (int i = 0; i < n; ++i) {
    uchar* row = cells.scanLine(i);
    // Whole rows by memset: dense n = 4096 is 8M attended cells, too many to visit one set at a time.
    std::memset(row, index_of(dense ? Cell::both : Cell::none), static_cast<size_t>(i) + 1);
    std::memset(row + i + 1, index_of(Cell::later), static_cast<size_t>(n - i - 1));
    if (dense) continue;
    for (const int64_t j : engine::attended_positions(spec, engine::PatternPart::a1, i))
      row[j] = index_of(Cell::a1);
    for (const int64_t j : engine::attended_positions(spec, engine::PatternPart::a2, i)) {
      row[j] = index_of(row[j] == index_of(Cell::a1) ? Cell::both : Cell::a2);
    }
  }
  return cells;
}

void ConnectivityView::setSpec(const engine::PatternSpec& spec) {
  spec_ = spec;
  cells_ = buildCells(spec);
  reduced_ = QImage();
  reducedZoom_ = 0;
  applyColors();
  query_ = std::clamp(query_, 0, size() - 1);
  if (fit_) zoom_ = fitZoom();
  zoom_ = clampZoom(zoom_);
  updateScrollBars();
  viewport()->update();
  emit zoomChanged(zoom_);
}

ConnectivityView::Cell ConnectivityView::cell(int query, int key) const {
  if (query < 0 || key < 0 || query >= size() || key >= size()) return Cell::later;
  return static_cast<Cell>(cells_.constScanLine(query)[key]);
}

void ConnectivityView::setQuery(int query) {
  query_ = std::clamp(query, 0, std::max(0, size() - 1));
  const QRect row = cellRect(query_, 0);
  if (row.bottom() < 0 || row.top() >= viewport()->height()) {
    QScrollBar* bar = verticalScrollBar();
    bar->setValue(bar->value() + row.center().y() - viewport()->height() / 2);
  }
  viewport()->update();
}

void ConnectivityView::setZoom(double pixelsPerCell) {
  if (pixelsPerCell <= 0) {
    fitToView();
    return;
  }
  zoomAround(pixelsPerCell, QPointF(viewport()->rect().center()), false);
}

void ConnectivityView::zoomIn() {
  zoomAround(step_zoom(zoom_, 1), QPointF(viewport()->rect().center()), false);
}

void ConnectivityView::zoomOut() {
  zoomAround(step_zoom(zoom_, -1), QPointF(viewport()->rect().center()), false);
}

void ConnectivityView::fitToView() { zoomAround(fitZoom(), QPointF(viewport()->rect().center()), true); }

double ConnectivityView::fitZoom() const {
  if (size() == 0) return 1;
  const double fit = static_cast<double>(std::min(viewport()->width(), viewport()->height())) / size();
  // Whole pixels per cell when the matrix fits at 1:1 or more, so that every cell has the same size.
  return fit >= 1 ? std::floor(fit) : fit;
}

double ConnectivityView::clampZoom(double zoom) const {
  const double lowest = std::max(kMinZoom, std::min(1.0, fitZoom()));
  return std::clamp(zoom, lowest, std::max(kMaxZoom, fitZoom()));
}

void ConnectivityView::zoomAround(double zoom, const QPointF& anchor, bool fit) {
  zoom = clampZoom(zoom);
  const QPoint before = origin();
  const double cellX = (anchor.x() - before.x()) / zoom_;
  const double cellY = (anchor.y() - before.y()) / zoom_;
  zoom_ = zoom;
  fit_ = fit;
  updateScrollBars();
  horizontalScrollBar()->setValue(static_cast<int>(std::lround(cellX * zoom_ - anchor.x())));
  verticalScrollBar()->setValue(static_cast<int>(std::lround(cellY * zoom_ - anchor.y())));
  viewport()->update();
  emit zoomChanged(zoom_);
}

int ConnectivityView::contentSize() const {
  // The epsilon keeps n * (width / n) from rounding up to one pixel more than the view, which would bring
  // in a scroll bar and shrink the view it was fitted to.
  return static_cast<int>(std::ceil(size() * zoom_ - 1e-6));
}

QPoint ConnectivityView::origin() const {
  const int content = contentSize();
  const QSize view = viewport()->size();
  const int x = content < view.width() ? (view.width() - content) / 2 : -horizontalScrollBar()->value();
  const int y = content < view.height() ? (view.height() - content) / 2 : -verticalScrollBar()->value();
  return {x, y};
}

void ConnectivityView::updateScrollBars() {
  const int content = contentSize();
  const QSize view = viewport()->size();
  horizontalScrollBar()->setRange(0, std::max(0, content - view.width()));
  verticalScrollBar()->setRange(0, std::max(0, content - view.height()));
  horizontalScrollBar()->setPageStep(view.width());
  verticalScrollBar()->setPageStep(view.height());
  const int step = std::max(8, static_cast<int>(zoom_));
  horizontalScrollBar()->setSingleStep(step);
  verticalScrollBar()->setSingleStep(step);
}

QRect ConnectivityView::cellRect(int query, int key) const {
  const QPoint o = origin();
  const int left = static_cast<int>(std::floor(key * zoom_));
  const int top = static_cast<int>(std::floor(query * zoom_));
  const int right = std::max(left + 1, static_cast<int>(std::floor((key + 1) * zoom_)));
  const int bottom = std::max(top + 1, static_cast<int>(std::floor((query + 1) * zoom_)));
  return QRect(o.x() + left, o.y() + top, right - left, bottom - top);
}

bool ConnectivityView::cellAt(const QPoint& point, int* query, int* key) const {
  const QPoint o = origin();
  const int row = static_cast<int>(std::floor((point.y() - o.y()) / zoom_));
  const int column = static_cast<int>(std::floor((point.x() - o.x()) / zoom_));
  if (row < 0 || column < 0 || row >= size() || column >= size()) return false;
  *query = row;
  *key = column;
  return true;
}

void ConnectivityView::applyColors() {
  const QVector<QRgb> table = color_table(palette());
  if (!cells_.isNull()) cells_.setColorTable(table);
  if (!reduced_.isNull()) reduced_.setColorTable(table);
}

const QImage& ConnectivityView::reducedCells() {
  if (!reduced_.isNull() && reducedZoom_ == zoom_) return reduced_;
  // Each screen pixel covers a block of cells and shows the largest class in it (Cell's order), so a
  // one-cell-wide A2 diagonal stays visible when a 4096-wide matrix is fitted into a few hundred pixels.
  const int n = size();
  const int out = contentSize();
  std::vector<int> first(static_cast<size_t>(out) + 1);
  for (int k = 0; k < out; ++k)
    first[static_cast<size_t>(k)] = std::min(n - 1, static_cast<int>(std::floor(k / zoom_)));
  first[static_cast<size_t>(out)] = n;
  QImage reduced(out, out, QImage::Format_Indexed8);
  reduced.setColorTable(cells_.colorTable());
  std::vector<uchar> rowMax(static_cast<size_t>(n));
  for (int y = 0; y < out; ++y) {
    const int r0 = first[static_cast<size_t>(y)];
    const int r1 = std::max(r0 + 1, first[static_cast<size_t>(y) + 1]);
    std::memcpy(rowMax.data(), cells_.constScanLine(r0), static_cast<size_t>(n));
    for (int r = r0 + 1; r < r1; ++r) {
      const uchar* row = cells_.constScanLine(r);
      for (int j = 0; j < n; ++j)
        rowMax[static_cast<size_t>(j)] = std::max(rowMax[static_cast<size_t>(j)], row[j]);
    }
    uchar* line = reduced.scanLine(y);
    for (int x = 0; x < out; ++x) {
      const int c0 = first[static_cast<size_t>(x)];
      const int c1 = std::max(c0 + 1, first[static_cast<size_t>(x) + 1]);
      line[x] = *std::max_element(rowMax.begin() + c0, rowMax.begin() + c1);
    }
  }
  reduced_ = reduced;
  reducedZoom_ = zoom_;
  return reduced_;
}

void ConnectivityView::paintEvent(QPaintEvent*) {
  QPainter painter(viewport());
  painter.fillRect(viewport()->rect(), palette().color(QPalette::Window));
  if (cells_.isNull()) return;
  const QPoint o = origin();
  const QRect view = viewport()->rect();
  const int n = size();
  // Only the visible part is copied and converted: QPainter would otherwise convert all 16M cells.
  if (zoom_ >= 1) {
    const int c0 = std::clamp(static_cast<int>(std::floor(-o.x() / zoom_)), 0, n);
    const int c1 = std::clamp(static_cast<int>(std::ceil((view.width() - o.x()) / zoom_)), 0, n);
    const int r0 = std::clamp(static_cast<int>(std::floor(-o.y() / zoom_)), 0, n);
    const int r1 = std::clamp(static_cast<int>(std::ceil((view.height() - o.y()) / zoom_)), 0, n);
    if (c1 > c0 && r1 > r0) {
      const QRectF target(o.x() + c0 * zoom_, o.y() + r0 * zoom_, (c1 - c0) * zoom_, (r1 - r0) * zoom_);
      painter.setRenderHint(QPainter::SmoothPixmapTransform, false);  // nearest neighbour: crisp cells
      painter.drawImage(target, cells_.copy(c0, r0, c1 - c0, r1 - r0));
      if (zoom_ >= 8) {
        painter.setPen(PatternColors::forPalette(palette()).gridLine());
        for (int c = c0; c <= c1; ++c)
          painter.drawLine(QPointF(o.x() + c * zoom_, target.top()),
                           QPointF(o.x() + c * zoom_, target.bottom()));
        for (int r = r0; r <= r1; ++r)
          painter.drawLine(QPointF(target.left(), o.y() + r * zoom_),
                           QPointF(target.right(), o.y() + r * zoom_));
      }
    }
  } else {
    const QImage& reduced = reducedCells();
    const QRect visible = QRect(o, reduced.size()).intersected(view);
    if (!visible.isEmpty()) painter.drawImage(visible.topLeft(), reduced.copy(visible.translated(-o)));
  }
  const PatternColors colors = PatternColors::forPalette(palette());
  const int content = contentSize();
  // A frame: the future half's faint tint alone hardly stands out from the window around it.
  painter.setPen(QPen(colors.gridLine(), 1));
  painter.setBrush(Qt::NoBrush);
  painter.drawRect(QRect(o, QSize(content, content)).adjusted(-1, -1, 0, 0));
  // The picked query's row: a translucent band with solid edges, at least 3 px tall when zoomed out, and
  // arrow heads in the margins so that a thin row is found at a glance.
  const QRect row = cellRect(query_, 0);
  const int height = std::max(3, row.height());
  const QRect band(o.x(), row.center().y() - height / 2, content, height);
  const QColor highlight = colors.highlight();
  QColor fill = highlight;
  fill.setAlpha(90);
  painter.fillRect(band, fill);
  painter.setPen(QPen(highlight, 1));
  painter.drawLine(band.topLeft(), band.topRight());
  painter.drawLine(band.bottomLeft(), band.bottomRight());
  const int arrow = 9;
  const int y = band.center().y();
  painter.setRenderHint(QPainter::Antialiasing, true);
  painter.setPen(Qt::NoPen);
  painter.setBrush(highlight);
  if (o.x() >= arrow + 3) {
    const int tip = o.x() - 3;
    painter.drawPolygon(QPolygon(
        {QPoint(tip, y), QPoint(tip - arrow, y - arrow / 2 - 1), QPoint(tip - arrow, y + arrow / 2 + 1)}));
  }
  if (view.width() - (o.x() + content) >= arrow + 3) {
    const int tip = o.x() + content + 2;
    painter.drawPolygon(QPolygon(
        {QPoint(tip, y), QPoint(tip + arrow, y - arrow / 2 - 1), QPoint(tip + arrow, y + arrow / 2 + 1)}));
  }
}

void ConnectivityView::resizeEvent(QResizeEvent* event) {
  QAbstractScrollArea::resizeEvent(event);
  if (fit_ && size() > 0) {
    const double fit = fitZoom();
    if (fit != zoom_) {
      zoom_ = clampZoom(fit);
      emit zoomChanged(zoom_);
    }
  }
  updateScrollBars();
}

void ConnectivityView::wheelEvent(QWheelEvent* event) {
  // The wheel zooms about the pointer (panning is by dragging or the scroll bars); a touchpad's small
  // deltas add up to whole steps.
  wheelAngle_ += event->angleDelta().y();
  const int steps = wheelAngle_ / 120;
  wheelAngle_ -= steps * 120;
  if (steps != 0) zoomAround(step_zoom(zoom_, steps), event->position(), false);
  event->accept();
}

void ConnectivityView::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return QAbstractScrollArea::mousePressEvent(event);
  pressed_ = true;
  panning_ = false;
  pressPos_ = event->position().toPoint();
  pressScroll_ = QPoint(horizontalScrollBar()->value(), verticalScrollBar()->value());
  event->accept();
}

void ConnectivityView::mouseMoveEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  if (pressed_) {
    // A drag pans; a click (a press and release without moving) picks the row.
    if (!panning_ && (pos - pressPos_).manhattanLength() >= QApplication::startDragDistance()) {
      panning_ = true;
      viewport()->setCursor(Qt::ClosedHandCursor);
    }
    if (panning_) {
      horizontalScrollBar()->setValue(pressScroll_.x() - (pos.x() - pressPos_.x()));
      verticalScrollBar()->setValue(pressScroll_.y() - (pos.y() - pressPos_.y()));
    }
  }
  int query = -1, key = -1;
  if (!cellAt(pos, &query, &key)) query = key = -1;
  emit cellHovered(query, key);
}

void ConnectivityView::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || !pressed_) return QAbstractScrollArea::mouseReleaseEvent(event);
  pressed_ = false;
  if (panning_) {
    panning_ = false;
    viewport()->setCursor(Qt::CrossCursor);
    return;
  }
  int query = 0, key = 0;
  if (cellAt(event->position().toPoint(), &query, &key)) {
    setQuery(query);
    emit queryPicked(query);
  }
}

void ConnectivityView::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoomIn(); return;
    case Qt::Key_Minus: zoomOut(); return;
    case Qt::Key_0: fitToView(); return;
    case Qt::Key_Up:
    case Qt::Key_Down: {
      const int query =
          std::clamp(query_ + (event->key() == Qt::Key_Up ? -1 : 1), 0, std::max(0, size() - 1));
      setQuery(query);
      emit queryPicked(query);
      return;
    }
    default: QAbstractScrollArea::keyPressEvent(event);
  }
}

void ConnectivityView::leaveEvent(QEvent* event) {
  emit cellHovered(-1, -1);
  QAbstractScrollArea::leaveEvent(event);
}

void ConnectivityView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::PaletteChange) {
    applyColors();
    viewport()->update();
  }
  QAbstractScrollArea::changeEvent(event);
}

void ConnectivityView::scrollContentsBy(int, int) { viewport()->update(); }

}  // namespace stx::studio
