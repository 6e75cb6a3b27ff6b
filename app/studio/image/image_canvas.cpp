#include "image/image_canvas.h"

#include <QApplication>
#include <QImage>
#include <QMouseEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>
#include <map>

namespace stx::studio {

namespace {

constexpr int kMargin = 12;
constexpr int kGap = 14;
constexpr int kPreferredCellPixels = 200;  // a 28x28 image at 7x, an 8x8 one at 25x
constexpr int kLineGrabPixels = 5;
const QColor kBackground(32, 33, 37);
const QColor kCheckerDark(46, 47, 52);
const QColor kCheckerLight(60, 61, 67);
const QColor kLine(255, 214, 10);
const QColor kAttention(255, 140, 0);

// Integer zooms first (crisp pixels), then fractions for images too large for the window.
std::vector<double> candidate_scales(int largestSide) {
  std::vector<double> scales;
  const int preferred =
      std::max(1, static_cast<int>(std::lround(double(kPreferredCellPixels) / largestSide)));
  for (int s = preferred; s >= 1; --s) scales.push_back(s);
  for (int d = 2; d <= 8; ++d) scales.push_back(1.0 / d);
  return scales;
}

}  // namespace

ImageCanvas::ImageCanvas(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void ImageCanvas::setShape(int height, int width, int channels) {
  height_ = height;
  width_ = width;
  channels_ = channels;
  prompt_.clear();
  promptLabel_.clear();
  resetSamples(0);
  cutRow_ = std::clamp(cutRow_, 0, std::max(0, height_ - 1));
  updateGeometry();
  update();
}

void ImageCanvas::setPrompt(const Bytes& image, const QString& label) {
  prompt_ = static_cast<qint64>(image.size()) == imageBytes() ? image : Bytes{};
  promptLabel_ = label;
  updateGeometry();
  update();
}

void ImageCanvas::resetSamples(int count) {
  const auto size = static_cast<size_t>(imageBytes());
  samples_.assign(static_cast<size_t>(count), Bytes(size, 0));
  known_.assign(static_cast<size_t>(count), std::vector<uint8_t>(size, 0));
  notes_.assign(static_cast<size_t>(count), QString());
  attention_.assign(static_cast<size_t>(count), AttentionOverlay{});
  selected_ = count > 0 ? std::clamp(selected_, 0, count - 1) : -1;
  hoveredSample_ = -1;
  hoveredPixel_ = -1;
  updateGeometry();
  update();
}

void ImageCanvas::writeBytes(int sample, qint64 position, const uint8_t* bytes, qint64 size) {
  if (sample < 0 || sample >= sampleCount() || position < 0) return;
  Bytes& target = samples_[static_cast<size_t>(sample)];
  std::vector<uint8_t>& known = known_[static_cast<size_t>(sample)];
  const qint64 end = std::min<qint64>(position + size, static_cast<qint64>(target.size()));
  for (qint64 i = position; i < end; ++i) {
    target[static_cast<size_t>(i)] = bytes[i - position];
    known[static_cast<size_t>(i)] = 1;
  }
  repaint_.markDirty();
}

void ImageCanvas::forgetFrom(int sample, qint64 position) {
  if (sample < 0 || sample >= sampleCount()) return;
  std::vector<uint8_t>& known = known_[static_cast<size_t>(sample)];
  std::fill(known.begin() + std::clamp<qint64>(position, 0, static_cast<qint64>(known.size())), known.end(),
            0);
  repaint_.markDirty();
}

qint64 ImageCanvas::receivedBytes(int sample) const {
  if (sample < 0 || sample >= sampleCount()) return 0;
  const std::vector<uint8_t>& known = known_[static_cast<size_t>(sample)];
  return std::find(known.begin(), known.end(), 0) - known.begin();
}

void ImageCanvas::setNote(int sample, const QString& note) {
  if (sample < 0 || sample >= sampleCount()) return;
  notes_[static_cast<size_t>(sample)] = note;
  repaint_.markDirty();
}

void ImageCanvas::setAttention(int sample, const AttentionOverlay& overlay) {
  if (sample < 0 || sample >= sampleCount()) return;
  attention_[static_cast<size_t>(sample)] = overlay;
  repaint_.markDirty();
}

void ImageCanvas::clearAttention() {
  for (AttentionOverlay& overlay : attention_) overlay = AttentionOverlay{};
  repaint_.markDirty();
}

const AttentionOverlay& ImageCanvas::attention(int sample) const {
  static const AttentionOverlay none;
  return sample >= 0 && sample < sampleCount() ? attention_[static_cast<size_t>(sample)] : none;
}

void ImageCanvas::setSelectedSample(int sample) {
  selected_ = sample >= 0 && sample < sampleCount() ? sample : -1;
  update();
}

void ImageCanvas::setCutRow(int row) {
  row = std::clamp(row, 0, std::max(0, height_ - 1));
  if (row == cutRow_) return;
  cutRow_ = row;
  update();
}

void ImageCanvas::userSetsRow(int row) {
  const int before = cutRow_;
  setCutRow(row);
  if (cutRow_ != before) emit cutRowChanged(cutRow_);
}

QRect ImageCanvas::sampleRect(int sample) const {
  if (sample < 0 || sample >= sampleCount()) return {};
  return cellRect(grid(), sample + promptOffset());
}

QRect ImageCanvas::promptRect() const { return hasPrompt() ? cellRect(grid(), 0) : QRect(); }

ImageCanvas::Grid ImageCanvas::gridFor(QSize size) const {
  Grid g;
  const int cells = cellCount();
  if (cells == 0 || height_ <= 0 || width_ <= 0) return g;
  const int label = fontMetrics().height() + 6;
  const int usableWidth = size.width() - 2 * kMargin, usableHeight = size.height() - 2 * kMargin;
  const std::vector<double> scales = candidate_scales(std::max(height_, width_));
  for (size_t i = 0; i < scales.size(); ++i) {
    g.scale = scales[i];
    g.cellWidth = std::max(1, static_cast<int>(std::lround(width_ * g.scale)));
    g.cellHeight = std::max(1, static_cast<int>(std::lround(height_ * g.scale)));
    g.columns = std::clamp((usableWidth + kGap) / (g.cellWidth + kGap), 1, cells);
    const int rows = (cells + g.columns - 1) / g.columns;
    if (rows * (g.cellHeight + label + kGap) - kGap <= usableHeight) break;  // the largest zoom that fits
  }
  const int gridWidth = g.columns * (g.cellWidth + kGap) - kGap;
  g.left = std::max(kMargin, (size.width() - gridWidth) / 2);
  g.top = kMargin;
  return g;
}

ImageCanvas::Grid ImageCanvas::grid() const { return gridFor(size()); }

QRect ImageCanvas::cellRect(const Grid& g, int cell) const {
  const int label = fontMetrics().height() + 6;
  const int column = cell % g.columns, row = cell / g.columns;
  return QRect(g.left + column * (g.cellWidth + kGap), g.top + row * (g.cellHeight + label + kGap),
               g.cellWidth, g.cellHeight);
}

QSize ImageCanvas::sizeHint() const {
  if (height_ <= 0 || width_ <= 0) return QSize(640, 480);
  const int cells = std::max(1, cellCount());
  const int largest = std::max(height_, width_);
  const int scale = std::max(1, static_cast<int>(std::lround(double(kPreferredCellPixels) / largest)));
  const int columns = std::min(cells, 4), rows = (cells + columns - 1) / columns;
  const int label = fontMetrics().height() + 6;
  return QSize(2 * kMargin + columns * (width_ * scale + kGap) - kGap,
               2 * kMargin + rows * (height_ * scale + label + kGap) - kGap);
}

QSize ImageCanvas::minimumSizeHint() const { return QSize(240, 200); }

QImage ImageCanvas::toImage(const Bytes& bytes, const std::vector<uint8_t>* known) const {
  QImage image(width_, height_, QImage::Format_RGB32);
  const int c = channels_;
  for (int y = 0; y < height_; ++y) {
    auto* line = reinterpret_cast<QRgb*>(image.scanLine(y));
    for (int x = 0; x < width_; ++x) {
      const size_t at = (static_cast<size_t>(y) * width_ + x) * c;
      // A pixel shows once all its channels arrived; RGB bytes of one pixel come one after another.
      const bool ready = !known || (*known)[at + c - 1] != 0;
      if (!ready) {
        line[x] = ((x + y) & 1) ? kCheckerLight.rgb() : kCheckerDark.rgb();
      } else if (c >= 3) {
        line[x] = qRgb(bytes[at], bytes[at + 1], bytes[at + 2]);
      } else {
        line[x] = qRgb(bytes[at], bytes[at], bytes[at]);
      }
    }
  }
  return image;
}

bool ImageCanvas::lineShownOn(int cell) const {
  // The line matters where it is used: the prompt image for Generate, the selected sample for Regenerate.
  if (hasPrompt() && cell == 0) return true;
  return cell - promptOffset() == selected_ && selected_ >= 0;
}

void ImageCanvas::drawAttention(QPainter& painter, const QRect& rect, double scale,
                                const AttentionOverlay& overlay) {
  if (overlay.position < 0 || channels_ <= 0) return;
  // Channels of one pixel are separate positions: their weights add up on the pixel.
  std::map<qint64, double> perPixel;
  for (size_t i = 0; i < overlay.positions.size() && i < overlay.weights.size(); ++i) {
    perPixel[overlay.positions[i] / channels_] += overlay.weights[i];
  }
  double largest = 0;
  for (const auto& [pixel, weight] : perPixel) largest = std::max(largest, weight);
  auto pixelRect = [&](qint64 pixel) {
    const qint64 row = pixel / width_, column = pixel % width_;
    return QRectF(rect.left() + column * scale, rect.top() + row * scale, scale, scale);
  };
  for (const auto& [pixel, weight] : perPixel) {
    QColor tint = kAttention;
    // Every attended pixel stays visible (alpha >= 50) and the image still shows through the strongest.
    tint.setAlpha(50 + static_cast<int>(std::lround(150.0 * (largest > 0 ? weight / largest : 0))));
    painter.fillRect(pixelRect(pixel), tint);
  }
  const QRectF current = pixelRect(overlay.position / channels_).adjusted(0.5, 0.5, -0.5, -0.5);
  painter.setBrush(Qt::NoBrush);
  painter.setPen(QPen(Qt::black, 3));
  painter.drawRect(current);
  painter.setPen(QPen(QColor(80, 220, 255), 1.5));
  painter.drawRect(current);
}

void ImageCanvas::drawCell(QPainter& painter, const Grid& g, int cell) {
  const QRect rect = cellRect(g, cell);
  const int sample = cell - promptOffset();
  const bool isPrompt = sample < 0;
  const QImage image =
      isPrompt ? toImage(prompt_, nullptr)
               : toImage(samples_[static_cast<size_t>(sample)], &known_[static_cast<size_t>(sample)]);
  // Nearest-neighbour when zooming in keeps pixels square; smoothing only when shrinking a large image.
  painter.setRenderHint(QPainter::SmoothPixmapTransform, g.scale < 1);
  painter.drawImage(rect, image);

  const int lineY = rect.top() + static_cast<int>(std::lround(cutRow_ * g.scale));
  if (isPrompt && cutRow_ < height_) {
    // The rows that are not kept: dimmed and hatched, since the model draws them anew.
    const QRect dropped(rect.left(), lineY, rect.width(), rect.bottom() - lineY + 1);
    painter.fillRect(dropped, QColor(0, 0, 0, 150));
    painter.fillRect(dropped, QBrush(QColor(255, 255, 255, 40), Qt::BDiagPattern));
  }
  if (!isPrompt) drawAttention(painter, rect, g.scale, attention_[static_cast<size_t>(sample)]);

  const bool selected = !isPrompt && sample == selected_;
  painter.setBrush(Qt::NoBrush);
  painter.setPen(selected ? QPen(palette().color(QPalette::Highlight), 3) : QPen(QColor(90, 92, 100), 1));
  painter.drawRect(rect.adjusted(-2, -2, 1, 1));

  if (lineShownOn(cell)) {
    painter.setPen(QPen(kLine, 2));
    painter.drawLine(rect.left() - 6, lineY, rect.right() + 6, lineY);
    QPolygon handle;  // a small grip at the left end: the line can be dragged
    handle << QPoint(rect.left() - 8, lineY - 5) << QPoint(rect.left() - 2, lineY)
           << QPoint(rect.left() - 8, lineY + 5);
    painter.setBrush(kLine);
    painter.drawPolygon(handle);
  }

  QString label = isPrompt ? tr("Prompt: %1").arg(promptLabel_) : tr("#%1").arg(sample + 1);
  if (!isPrompt && !notes_[static_cast<size_t>(sample)].isEmpty()) {
    label += QStringLiteral(" · ") + notes_[static_cast<size_t>(sample)];
  }
  const QRect labelRect(rect.left() - 4, rect.bottom() + 4, rect.width() + 8, fontMetrics().height() + 2);
  painter.setPen(selected ? QColor(255, 255, 255) : QColor(200, 202, 210));
  painter.drawText(labelRect, Qt::AlignLeft | Qt::AlignVCenter,
                   fontMetrics().elidedText(label, Qt::ElideRight, labelRect.width()));
}

void ImageCanvas::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), kBackground);
  if (cellCount() == 0 || imageBytes() == 0) {
    painter.setPen(QColor(170, 172, 180));
    const QString hint =
        imageBytes() == 0
            ? tr("Choose an image model on the left.")
            : tr("Press Generate to draw samples.\nOpen or drop an image to complete it instead.");
    painter.drawText(rect(), Qt::AlignCenter, hint);
    return;
  }
  const Grid g = grid();
  for (int cell = 0; cell < cellCount(); ++cell) drawCell(painter, g, cell);
}

ImageCanvas::Hit ImageCanvas::hitTest(QPoint point) const {
  Hit hit;
  const Grid g = grid();
  for (int cell = 0; cell < cellCount(); ++cell) {
    const QRect rect = cellRect(g, cell);
    // A few pixels of slack around a cell, so that the line can be grabbed at the edges.
    if (!rect.adjusted(-kLineGrabPixels - 4, -kLineGrabPixels, kLineGrabPixels, kLineGrabPixels)
             .contains(point)) {
      continue;
    }
    hit.cell = cell;
    hit.sample = cell - promptOffset();
    hit.rect = rect;
    if (rect.contains(point)) {
      hit.row = std::clamp(static_cast<int>((point.y() - rect.top()) / g.scale), 0, height_ - 1);
      hit.column = std::clamp(static_cast<int>((point.x() - rect.left()) / g.scale), 0, width_ - 1);
    }
    break;
  }
  return hit;
}

int ImageCanvas::rowAt(const QRect& rect, int y) const {
  const double scale = double(rect.height()) / std::max(1, height_);
  return static_cast<int>(std::lround((y - rect.top()) / scale));
}

void ImageCanvas::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  press_ = hitTest(event->position().toPoint());
  pressPoint_ = event->position().toPoint();
  if (press_.cell < 0) return;
  const int lineY = press_.rect.top() + cutRow_ * press_.rect.height() / std::max(1, height_);
  draggingLine_ = lineShownOn(press_.cell) && std::abs(pressPoint_.y() - lineY) <= kLineGrabPixels;
}

void ImageCanvas::mouseMoveEvent(QMouseEvent* event) {
  const QPoint point = event->position().toPoint();
  if ((event->buttons() & Qt::LeftButton) && press_.cell >= 0) {
    // A vertical drag anywhere on a cell moves the line; a click without moving selects.
    if (!draggingLine_ && std::abs(point.y() - pressPoint_.y()) >= QApplication::startDragDistance()) {
      draggingLine_ = true;
      // The line on a sample is where Regenerate starts: dragging on one picks that sample.
      if (press_.sample >= 0 && press_.sample != selected_) {
        setSelectedSample(press_.sample);
        emit sampleSelected(press_.sample);
      }
    }
    if (draggingLine_) {
      setCursor(Qt::SizeVerCursor);
      userSetsRow(rowAt(press_.rect, point.y()));
    }
    return;
  }
  const Hit hit = hitTest(point);
  const int lineY = hit.rect.top() + cutRow_ * hit.rect.height() / std::max(1, height_);
  const bool nearLine =
      hit.cell >= 0 && lineShownOn(hit.cell) && std::abs(point.y() - lineY) <= kLineGrabPixels;
  setCursor(nearLine ? Qt::SizeVerCursor : Qt::ArrowCursor);
  const int sample = hit.sample >= 0 && hit.row >= 0 ? hit.sample : -1;
  const qint64 pixel = sample >= 0 ? static_cast<qint64>(hit.row) * width_ + hit.column : -1;
  if (sample != hoveredSample_ || pixel != hoveredPixel_) {
    hoveredSample_ = sample;
    hoveredPixel_ = pixel;
    emit pixelHovered(sample, pixel);
  }
}

void ImageCanvas::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  const bool wasDragging = draggingLine_;
  draggingLine_ = false;
  unsetCursor();
  if (wasDragging || press_.cell < 0) return;
  const Hit hit = hitTest(event->position().toPoint());
  if (hit.cell != press_.cell || hit.sample < 0) return;
  setSelectedSample(hit.sample);
  emit sampleSelected(hit.sample);
  if (hit.row >= 0) emit pixelClicked(hit.sample, static_cast<qint64>(hit.row) * width_ + hit.column);
}

void ImageCanvas::leaveEvent(QEvent*) {
  if (hoveredSample_ < 0) return;
  hoveredSample_ = -1;
  hoveredPixel_ = -1;
  emit pixelHovered(-1, -1);
}

}  // namespace stx::studio
