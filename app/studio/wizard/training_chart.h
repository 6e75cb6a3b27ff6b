// The Run page's live curves: training loss and validation bits/byte against the step. Points arrive after
// every optimiser step; they are buffered and drawn a few times a second, the axes follow the data, and a
// long run is thinned (every other point dropped, the spacing doubled) so the chart never holds more than
// a few thousand points.
#pragma once

#include <QList>
#include <QPointF>
#include <QTimer>
#include <QtCharts/QChartView>

class QLineSeries;
class QValueAxis;

namespace stx::studio {

class TrainingChart : public QChartView {
  Q_OBJECT

 public:
  explicit TrainingChart(QWidget* parent = nullptr);

  void clear();
  void addLoss(qint64 step, double bitsPerByte);
  void addValidation(qint64 step, double bitsPerByte);
  // Draws the buffered points now (a timer does it otherwise).
  void flush();

  QLineSeries* lossSeries() const { return loss_; }
  QLineSeries* validationSeries() const { return validation_; }
  QValueAxis* bitsAxis() const { return bitsAxis_; }

 private:
  void thinLoss();
  void rescale();

  QLineSeries* loss_;
  QLineSeries* validation_;
  QValueAxis* stepAxis_;
  QValueAxis* bitsAxis_;
  QTimer flushTimer_;
  QList<QPointF> pendingLoss_, pendingValidation_;
  qint64 lossSpacing_ = 1;  // steps between kept loss points; doubles at each thinning
  qint64 lastLossStep_ = -1;
};

}  // namespace stx::studio
