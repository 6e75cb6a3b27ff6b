#include "wizard/training_chart.h"

#include <QtCharts/QChart>
#include <QtCharts/QLineSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>
#include <limits>

namespace stx::studio {

namespace {

constexpr int kMaxLossPoints = 2000;
constexpr int kFlushMs = 100;

// Ticks at 1, 2 or 5 times a power of ten, about five of them, and a range that starts and ends on a tick,
// so the labels are round numbers that sit where the points are. smallest: the least tick interval.
void set_nice_range(QValueAxis* axis, double low, double high, double smallest) {
  const double raw = std::max(high - low, 1e-9) / 5.0;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double interval = 10 * magnitude;
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw) {
      interval = m * magnitude;
      break;
    }
  }
  interval = std::max(interval, smallest);
  const double first = std::floor(low / interval) * interval;
  const double last = std::max(std::ceil(high / interval) * interval, first + interval);
  axis->setTickType(QValueAxis::TicksDynamic);
  axis->setTickAnchor(0);
  axis->setTickInterval(interval);
  // A hair beyond the last tick, or rounding in the tick positions can drop the top label.
  axis->setRange(first, last + interval * 1e-6);
}

}  // namespace

TrainingChart::TrainingChart(QWidget* parent) : QChartView(parent) {
  auto* chart = new QChart;
  chart->setMargins(QMargins(4, 4, 4, 4));
  chart->legend()->setAlignment(Qt::AlignBottom);
  loss_ = new QLineSeries;
  loss_->setName(tr("training loss (bits/byte)"));
  validation_ = new QLineSeries;
  validation_->setName(tr("validation (bits/byte)"));
  validation_->setPointsVisible(true);
  QPen pen = validation_->pen();
  pen.setWidth(2);
  validation_->setPen(pen);
  chart->addSeries(loss_);
  chart->addSeries(validation_);
  stepAxis_ = new QValueAxis;
  stepAxis_->setTitleText(tr("step"));
  stepAxis_->setLabelFormat(QStringLiteral("%d"));
  bitsAxis_ = new QValueAxis;
  bitsAxis_->setTitleText(tr("bits/byte"));
  bitsAxis_->setLabelFormat(QStringLiteral("%.2f"));
  chart->addAxis(stepAxis_, Qt::AlignBottom);
  chart->addAxis(bitsAxis_, Qt::AlignLeft);
  for (QLineSeries* series : {loss_, validation_}) {
    series->attachAxis(stepAxis_);
    series->attachAxis(bitsAxis_);
  }
  setChart(chart);
  setRenderHint(QPainter::Antialiasing);
  setMinimumHeight(220);
  flushTimer_.setSingleShot(true);
  flushTimer_.setInterval(kFlushMs);
  connect(&flushTimer_, &QTimer::timeout, this, &TrainingChart::flush);
  clear();
}

void TrainingChart::clear() {
  flushTimer_.stop();
  pendingLoss_.clear();
  pendingValidation_.clear();
  loss_->clear();
  validation_->clear();
  lossSpacing_ = 1;
  lastLossStep_ = -1;
  set_nice_range(stepAxis_, 0, 10, 1);
  set_nice_range(bitsAxis_, 0, 8, 0);
}

void TrainingChart::addLoss(qint64 step, double bitsPerByte) {
  if (!std::isfinite(bitsPerByte)) return;
  if (lastLossStep_ >= 0 && step - lastLossStep_ < lossSpacing_ && step > lastLossStep_) return;
  lastLossStep_ = step;
  pendingLoss_.append(QPointF(static_cast<double>(step), bitsPerByte));
  if (!flushTimer_.isActive()) flushTimer_.start();
}

void TrainingChart::addValidation(qint64 step, double bitsPerByte) {
  if (!std::isfinite(bitsPerByte)) return;
  pendingValidation_.append(QPointF(static_cast<double>(step), bitsPerByte));
  if (!flushTimer_.isActive()) flushTimer_.start();
}

void TrainingChart::flush() {
  flushTimer_.stop();
  if (pendingLoss_.isEmpty() && pendingValidation_.isEmpty()) return;
  // One append call per series: each call repaints, so a batch costs one repaint, not one per point.
  if (!pendingLoss_.isEmpty()) loss_->append(pendingLoss_);
  if (!pendingValidation_.isEmpty()) validation_->append(pendingValidation_);
  pendingLoss_.clear();
  pendingValidation_.clear();
  if (loss_->count() > kMaxLossPoints) thinLoss();
  rescale();
}

void TrainingChart::thinLoss() {
  const QList<QPointF> points = loss_->points();
  QList<QPointF> kept;
  kept.reserve(points.size() / 2 + 1);
  for (qsizetype i = 0; i < points.size(); i += 2) kept.append(points[i]);
  if (!points.isEmpty() && kept.last() != points.last()) kept.append(points.last());
  loss_->replace(kept);
  lossSpacing_ *= 2;
}

void TrainingChart::rescale() {
  double minStep = std::numeric_limits<double>::max(), maxStep = std::numeric_limits<double>::lowest();
  double low = std::numeric_limits<double>::max(), high = std::numeric_limits<double>::lowest();
  for (const QLineSeries* series : {loss_, validation_}) {
    for (const QPointF& p : series->points()) {
      minStep = std::min(minStep, p.x());
      maxStep = std::max(maxStep, p.x());
      low = std::min(low, p.y());
      high = std::max(high, p.y());
    }
  }
  if (minStep > maxStep) return;
  set_nice_range(stepAxis_, std::min(0.0, minStep), std::max(maxStep, minStep + 1), 1);
  const double pad = std::max(0.02, 0.05 * (high - low));
  set_nice_range(bitsAxis_, std::max(0.0, low - pad), high + pad, 0);
}

}  // namespace stx::studio
