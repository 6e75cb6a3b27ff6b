// The engine on a background thread. EngineWorker lives on a QThread and runs one job at a time: open a
// model, sample, regenerate, inspect attention, train, estimate a run, scan a data folder. It knows no
// widgets; results leave it only through signals carrying value types (engine_types.h), which Qt queues
// to the GUI thread.
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <optional>

#include "core/engine_types.h"

namespace stx::studio {

class EngineWorker : public QObject {
  Q_OBJECT

 public:
  explicit EngineWorker(QObject* parent = nullptr);

  // Thread safe, from any thread: the running job stops at its next check (within one decode or training
  // step). A training job writes its final checkpoint first.
  void requestStop() { cancel_.store(true); }
  // Clears a stop request; EngineHost calls it when it queues a job while none is pending.
  void clearStop() { cancel_.store(false); }
  // The threads the next jobs run on (0: every core); EngineHost sets it, on the worker's thread, with each
  // job it queues.
  void setThreadLimit(int threads) { threads_ = threads; }

  // The jobs; each runs on the worker's thread when called there (EngineHost queues them).
  void openModel(const QString& path);
  void generate(const stx::engine::SampleRequest& request);
  void regenerate(const stx::studio::Bytes& previous, qint64 keep, const stx::engine::SampleRequest& request);
  void inspect(const stx::studio::Bytes& bytes, int layer, int head, qint64 position);
  void train(const stx::engine::TrainOptions& options);
  void estimate(const stx::engine::TrainOptions& options, int steps);
  // kind: "image" | "audio" | "text"; the image shape is the model's (images are resized to it).
  void scanFolder(const QString& folder, const QString& kind, int imageHeight, int imageWidth, int imageChannels);

 signals:
  void jobStarted(stx::studio::EngineJob job);
  void jobFinished(stx::studio::EngineJob job, bool ok);
  // A job failed: the plain-words reason, naming the file where there is one.
  void failed(stx::studio::EngineJob job, const QString& message);
  void logLine(int level, const QString& text);  // level: 0 info, 1 warning, 2 error

  // Where the model runs is each request's (SampleRequest::device), so opening says nothing about it.
  void modelOpened(const stx::engine::ModelSummary& summary);
  void sampleStarted(const stx::engine::SampleStarted& started);
  void sampleProgress(const stx::engine::SampleProgress& progress);
  void sampleBytes(const stx::engine::SampleBytes& bytes);
  void attentionProbe(const stx::engine::AttentionProbe& probe);
  void sampleFinished(const stx::engine::SampleResult& result);
  void inspected(const stx::engine::AttentionProbe& probe);

  void trainProgress(const stx::engine::TrainProgress& progress);
  void validationDone(const stx::engine::ValidationDone& validation);
  void checkpointSaved(const stx::engine::CheckpointSaved& saved);
  void trainEnded(const stx::engine::JobEnded& end);
  void estimated(const stx::engine::TrainingEstimate& estimate);

  void scanProgress(qint64 filesDone, qint64 filesTotal);
  void scanFinished(const stx::studio::DatasetScan& scan);

 private:
  void forward(const stx::engine::Event& event);
  // Refuses a request for a device this machine lacks, in the studio's words rather than the engine's
  // (which name the command line's --device).
  static void checkDevice(const stx::engine::SampleRequest& request);
  // Runs `job`, turning exceptions into failed(); brackets it with
  // jobStarted / jobFinished.
  template <typename Job>
  void run(EngineJob name, Job&& job);

  std::atomic<bool> cancel_{false};
  std::optional<stx::engine::LoadedModel> model_;  // only touched on the worker's thread
  int threads_ = 0;
};

}  // namespace stx::studio
