// A progress bar with tokens/s and ETA, and a Stop button: the bottom row of every long job.
#pragma once

#include <QWidget>

class QLabel;
class QProgressBar;
class QPushButton;

namespace stx::studio {

// "0:07", "12:30", "1:02:03".
QString format_duration(double seconds);

class JobProgress : public QWidget {
  Q_OBJECT

 public:
  explicit JobProgress(QWidget* parent = nullptr);

  void start(const QString& what);                 // shows the bar at 0 and enables Stop
  // done of total units; rate in `unit`s per second (negative: unknown); eta in seconds (negative: unknown).
  void update(qint64 done, qint64 total, double rate, const QString& unit, double etaSeconds);
  void finish(const QString& message);            // hides Stop, keeps the message

  QPushButton* stopButton() const { return stop_; }
  QProgressBar* bar() const { return bar_; }
  QLabel* label() const { return label_; }

 signals:
  void stopRequested();

 private:
  QProgressBar* bar_;
  QLabel* label_;
  QPushButton* stop_;
};

}  // namespace stx::studio
