// Owns one EngineWorker and the QThread it lives on, from the GUI thread. Every call queues a job to the
// worker and returns at once; connect to worker()'s signals for the results. Each tab and the training
// wizard has its own host, so that a generation in one tab never waits for another.
//
//   EngineHost host;
//   connect(host.worker(), &EngineWorker::sampleBytes, this, &ImageTab::onBytes);
//   host.openModel(path);
//   host.generate(request);
//   host.stop();
#pragma once

#include <QObject>
#include <QThread>

#include "core/engine_worker.h"

namespace stx::studio {

class EngineHost : public QObject {
  Q_OBJECT

 public:
  explicit EngineHost(QObject* parent = nullptr);
  // Stops the running job, then the thread: requestInterruption(); quit(); wait().
  ~EngineHost() override;

  EngineWorker* worker() const { return worker_; }
  // True from the moment a job is queued until it has finished.
  bool busy() const { return pending_ > 0; }
  // A generation (or regeneration) is queued or running: work a user would lose by quitting.
  bool generating() const { return generations_ > 0; }

  void openModel(const QString& path);
  void generate(const stx::engine::SampleRequest& request);
  void regenerate(const Bytes& previous, qint64 keep, const stx::engine::SampleRequest& request);
  void inspect(const Bytes& bytes, int layer, int head, qint64 position);
  void train(const stx::engine::TrainOptions& options);
  void estimate(const stx::engine::TrainOptions& options, int steps);
  void scanFolder(const QString& folder, const QString& kind, int imageHeight = 0, int imageWidth = 0,
                  int imageChannels = 0);
  // Asks the running job to stop (and drops none of what it made). Safe when idle.
  void stop();

  // The threads that jobs queued from now on run on, in every host (0: every core). GUI thread only.
  static void setThreadLimit(int threads);
  static int threadLimit();
  // How often a generating job sends the tabs what it made (SampleRequest::event_interval_seconds): 30
  // times a second while the job's threads leave a core free for the GUI, else 10 times.
  static double previewIntervalSeconds();

 signals:
  void busyChanged(bool busy);

 private:
  template <typename Call>
  void queue(Call&& call);

  QThread thread_;
  EngineWorker* worker_ = nullptr;
  int pending_ = 0;      // jobs queued and not finished, as seen on the GUI thread
  int generations_ = 0;  // of which generate / regenerate
  std::optional<EngineJob> job_;
};

}  // namespace stx::studio
