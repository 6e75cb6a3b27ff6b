#include "audio/waveform_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <array>
#include <cmath>

#include "stx/engine/mulaw.h"
#include "stx/engine/data/audio_io.h"

namespace stx::studio {

namespace {

constexpr int kMargin = 6;
constexpr int kAxisHeight = 22;
constexpr int kLaneGap = 4;
constexpr int kMinTickSpacing = 72;  // pixels between time labels

const QColor kGenerated(52, 101, 196);
const QColor kPrompt(150, 96, 200);
const QColor kAttention(235, 120, 0);
const QColor kAttentionNow(210, 30, 30);
const QColor kPlayhead(20, 150, 60);


QString seconds_label(double seconds, double step) {
  const int decimals = step >= 1.0 ? 0 : step >= 0.1 ? 1 : step >= 0.01 ? 2 : 3;
  return QStringLiteral("%1 s").arg(seconds, 0, 'f', decimals);
}

}  // namespace

WaveformView::WaveformView(QWidget* parent) : QWidget(parent), repaint_(this) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setToolTip(
      tr("Click a lane to select that sample; after generating, click a point to see what the model "
         "attended to there"));
}

void WaveformView::reset(int count, const Bytes& prompt, qint64 length) {
  lanes_.assign(static_cast<size_t>(std::max(count, 0)), prompt);
  promptBytes_ = static_cast<qint64>(prompt.size());
  title_.clear();
  length_ = std::max<qint64>(length, promptBytes_);
  selected_ = std::clamp(selected_, 0, std::max(count - 1, 0));
  playhead_ = -1;
  cursor_ = -1;
  clearAttention();
  repaint_.markDirty();
}

void WaveformView::appendBytes(int lane, qint64 position, const std::string& bytes) {
  if (lane < 0 || lane >= laneCount() || position < 0) return;
  Bytes& data = lanes_[static_cast<size_t>(lane)];
  data.resize(static_cast<size_t>(position), 128);  // 128 is mu-law silence
  data.insert(data.end(), bytes.begin(), bytes.end());
  repaint_.markDirty();
}

void WaveformView::setSamples(const std::vector<Bytes>& samples, qint64 promptBytes) {
  lanes_ = samples;
  promptBytes_ = promptBytes;
  selected_ = std::clamp(selected_, 0, std::max(laneCount() - 1, 0));
  repaint_.markDirty();
}

void WaveformView::clear() {
  reset(0, {}, 0);
  selected_ = 0;
}

void WaveformView::setTitle(const QString& title) {
  title_ = title;
  repaint_.markDirty();
}

const Bytes& WaveformView::laneBytes(int lane) const {
  static const Bytes none;
  return lane >= 0 && lane < laneCount() ? lanes_[static_cast<size_t>(lane)] : none;
}

void WaveformView::setSelectedLane(int lane) {
  if (lane == selected_ || lane < 0 || lane >= laneCount()) return;
  selected_ = lane;
  playhead_ = -1;
  cursor_ = -1;
  repaint_.markDirty();
}

void WaveformView::setPlayhead(qint64 frame) {
  if (frame == playhead_) return;
  playhead_ = frame;
  repaint_.markDirty();
}

void WaveformView::setAttention(int lane, qint64 position, const std::vector<int64_t>& positions,
                                const std::vector<float>& weights) {
  attentionLane_ = lane;
  attentionPosition_ = position;
  attentionPositions_ = positions;
  attentionWeights_ = weights;
  attentionWeights_.resize(positions.size(), 1.0f);
  repaint_.markDirty();
}

void WaveformView::clearAttention() {
  attentionLane_ = -1;
  attentionPosition_ = -1;
  attentionPositions_.clear();
  attentionWeights_.clear();
  repaint_.markDirty();
}

QRect WaveformView::plotRect() const { return rect().adjusted(kMargin, kMargin, -kMargin, -kAxisHeight); }

qint64 WaveformView::span() const {
  qint64 longest = length_;
  for (const Bytes& lane : lanes_) longest = std::max(longest, static_cast<qint64>(lane.size()));
  return std::max<qint64>(longest, 1);
}

QRect WaveformView::laneRect(int lane) const {
  const QRect plot = plotRect();
  const int count = std::max(laneCount(), 1);
  const int height = std::max((plot.height() - (count - 1) * kLaneGap) / count, 8);
  return {plot.left(), plot.top() + lane * (height + kLaneGap), plot.width(), height};
}

int WaveformView::xForPosition(qint64 position) const {
  const QRect plot = plotRect();
  return plot.left() + static_cast<int>(std::lround(static_cast<double>(position) * plot.width() /
                                                    static_cast<double>(span())));
}

qint64 WaveformView::positionAt(int x) const {
  const QRect plot = plotRect();
  const double fraction = static_cast<double>(x - plot.left()) / std::max(plot.width(), 1);
  return std::clamp<qint64>(static_cast<qint64>(std::floor(fraction * static_cast<double>(span()))), 0,
                            span() - 1);
}

void WaveformView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().window());
  if (lanes_.empty()) {
    painter.setPen(palette().color(QPalette::PlaceholderText));
    painter.drawText(
        plotRect(), Qt::AlignCenter | Qt::TextWordWrap,
        tr("Generate to see the waveform here.\nOpen or drop a clip to continue it as a prompt."));
    paintAxis(painter);
    return;
  }
  for (int lane = 0; lane < laneCount(); ++lane) paintLane(painter, lane);
  paintAxis(painter);
}

void WaveformView::paintLane(QPainter& painter, int lane) const {
  const QRect r = laneRect(lane);
  const bool selected = lane == selected_;
  painter.fillRect(r, palette().base());
  if (promptBytes_ > 0) {  // the prompt region, shaded
    QColor shade = kPrompt;
    shade.setAlpha(28);
    painter.fillRect(QRect(QPoint(r.left(), r.top()), QPoint(xForPosition(promptBytes_), r.bottom())), shade);
  }
  const int middle = r.center().y();
  const double half = r.height() / 2.0 - 2.0;
  painter.setPen(palette().color(QPalette::Mid));
  painter.drawLine(r.left(), middle, r.right(), middle);

  const Bytes& data = lanes_[static_cast<size_t>(lane)];
  const std::array<float, 256>& table = stx::engine::mulaw_amplitude_table();
  auto y_for = [&](uint8_t byte) { return middle - table[byte] * half; };
  const auto size = static_cast<qint64>(data.size());
  const double perPixel = static_cast<double>(span()) / std::max(r.width(), 1);
  painter.save();
  painter.setClipRect(r);
  if (perPixel <= 1.0) {
    // Fewer bytes than pixels: a line through every sample, the prompt part in its colour.
    painter.setRenderHint(QPainter::Antialiasing);
    QPainterPath prompt, generated;
    for (qint64 i = 0; i < size; ++i) {
      const QPointF point((xForPosition(i) + xForPosition(i + 1)) / 2.0, y_for(data[static_cast<size_t>(i)]));
      QPainterPath& path = i < promptBytes_ ? prompt : generated;
      if (path.elementCount() == 0) {      // isEmpty() is still true after a lone moveTo
        if (i == promptBytes_ && i > 0) {  // join the generated part to the prompt's last point
          path.moveTo((xForPosition(i - 1) + xForPosition(i)) / 2.0, y_for(data[static_cast<size_t>(i - 1)]));
          path.lineTo(point);
        } else {
          path.moveTo(point);
        }
      } else {
        path.lineTo(point);
      }
    }
    painter.setPen(QPen(kPrompt, 1.5));
    painter.drawPath(prompt);
    painter.setPen(QPen(kGenerated, 1.5));
    painter.drawPath(generated);
  } else {
    // More bytes than pixels: each column's min and max, one vertical run of pixels per column, filled as
    // rectangles (a pen per column through the stroker cost most of a frame at 30 frames a second).
    for (int column = 0; column < r.width(); ++column) {
      const auto begin = static_cast<qint64>(column * perPixel);
      const qint64 end = std::min(size, static_cast<qint64>((column + 1) * perPixel));
      if (begin >= size) break;
      const auto [low, high] =
          std::minmax_element(data.begin() + begin, data.begin() + std::max(end, begin + 1));
      const int x = r.left() + column;
      const auto top = static_cast<int>(std::floor(y_for(*high)));
      const auto bottom = std::max(static_cast<int>(std::ceil(y_for(*low))), top);
      painter.fillRect(x, top, 1, bottom - top + 1, begin < promptBytes_ ? kPrompt : kGenerated);
    }
  }
  painter.restore();

  if (lane == attentionLane_) paintAttention(painter, r);
  if (selected && cursor_ >= 0) {
    painter.setPen(QPen(palette().color(QPalette::Text), 1, Qt::DashLine));
    painter.drawLine(xForPosition(cursor_), r.top(), xForPosition(cursor_), r.bottom());
  }
  if (selected && playhead_ >= 0) {
    painter.setPen(QPen(kPlayhead, 2));
    painter.drawLine(xForPosition(playhead_), r.top(), xForPosition(playhead_), r.bottom());
  }

  QFont font = painter.font();
  font.setBold(selected);
  painter.setFont(font);
  painter.setPen(selected ? palette().color(QPalette::Highlight) : palette().color(QPalette::Mid));
  painter.drawRect(r.adjusted(0, 0, -1, -1));
  if (selected) painter.drawRect(r.adjusted(1, 1, -2, -2));
  painter.setPen(palette().color(QPalette::Text));
  QString label = tr("Sample %1").arg(lane + 1);
  if (!title_.isEmpty() && laneCount() == 1) {
    label = title_;
  } else if (promptBytes_ > 0 && lane == 0) {
    label += QStringLiteral("   ") + tr("(prompt shaded)");
  }
  painter.drawText(r.adjusted(6, 3, -6, -3), Qt::AlignLeft | Qt::AlignTop, label);
  font.setBold(false);
  painter.setFont(font);
}

void WaveformView::paintAttention(QPainter& painter, const QRect& r) const {
  float strongest = 0.0f;
  for (float w : attentionWeights_) strongest = std::max(strongest, w);
  if (strongest <= 0.0f) strongest = 1.0f;
  // One bar per pixel column, for the strongest key in it: hundreds of keys share a few hundred columns
  // once a sample is longer than the view is wide, and a bar each would be drawn over and over.
  std::vector<float> column_share(static_cast<size_t>(std::max(width(), 1)), -1.0f);
  for (size_t i = 0; i < attentionPositions_.size(); ++i) {
    const int x = (xForPosition(attentionPositions_[i]) + xForPosition(attentionPositions_[i] + 1)) / 2;
    if (x < 0 || x >= static_cast<int>(column_share.size())) continue;
    const float share = std::clamp(attentionWeights_[i] / strongest, 0.0f, 1.0f);
    column_share[static_cast<size_t>(x)] = std::max(column_share[static_cast<size_t>(x)], share);
  }
  for (size_t x = 0; x < column_share.size(); ++x) {
    const float share = column_share[x];
    if (share < 0.0f) continue;
    QColor color = kAttention;
    color.setAlpha(70 + static_cast<int>(185 * share));
    const int height = static_cast<int>(r.height() * (0.1 + 0.5 * share));  // the waveform stays readable
    painter.fillRect(static_cast<int>(x) - 1, r.bottom() - height, 2, height + 1, color);  // 2 px wide
  }
  if (attentionPosition_ >= 0) {
    const int x = (xForPosition(attentionPosition_) + xForPosition(attentionPosition_ + 1)) / 2;
    painter.setPen(QPen(kAttentionNow, 2));
    painter.drawLine(x, r.top(), x, r.bottom());
    painter.setBrush(kAttentionNow);
    painter.drawPolygon(QPolygon({QPoint(x - 5, r.top()), QPoint(x + 5, r.top()), QPoint(x, r.top() + 7)}));
    painter.setBrush(Qt::NoBrush);
  }
}

void WaveformView::paintAxis(QPainter& painter) const {
  const QRect plot = plotRect();
  const int baseline = plot.bottom() + 3;
  painter.setPen(palette().color(QPalette::Text));
  painter.drawLine(plot.left(), baseline, plot.right(), baseline);
  const double seconds = static_cast<double>(span()) / stx::engine::kSampleRate;
  if (lanes_.empty()) return;
  static const double steps[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1,
                                 2,     5,     10,    15,   30,   60,   120, 300, 600, 1800};
  double step = steps[std::size(steps) - 1];
  for (double s : steps) {
    if (s / seconds * plot.width() >= kMinTickSpacing) {
      step = s;
      break;
    }
  }
  const QFontMetrics metrics(painter.font());
  for (int i = 0;; ++i) {
    const double t = i * step;
    if (t > seconds + 1e-9) break;
    const int x = xForPosition(static_cast<qint64>(std::llround(t * stx::engine::kSampleRate)));
    painter.drawLine(x, baseline, x, baseline + 4);
    const QString text = seconds_label(t, step);
    const int width = metrics.horizontalAdvance(text);
    const int left = std::clamp(x - width / 2, 0, this->width() - width);
    painter.drawText(left, baseline + 4 + metrics.ascent(), text);
  }
}

void WaveformView::mousePressEvent(QMouseEvent* event) {
  const QPoint point = event->position().toPoint();
  for (int lane = 0; lane < laneCount(); ++lane) {
    if (!laneRect(lane).contains(point)) continue;
    if (lane != selected_) {
      setSelectedLane(lane);
      emit laneSelected(lane);
    }
    const qint64 position = positionAt(point.x());
    if (position < static_cast<qint64>(laneBytes(lane).size())) {
      cursor_ = position;
      repaint_.markDirty();
      emit positionClicked(lane, position);
    }
    return;
  }
  QWidget::mousePressEvent(event);
}

}  // namespace stx::studio
