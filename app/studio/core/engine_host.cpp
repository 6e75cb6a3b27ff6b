#include "core/engine_host.h"

#include <QMetaObject>

#include <algorithm>

#include "stx/engine/threads.h"

namespace stx::studio {

namespace {

// Edit > Preferences > Threads, passed to the worker with each job.
int g_thread_limit = 0;

// Qt needs each value type that crosses threads registered once before the first queued signal.
void register_types_once() {
  static const bool registered = [] {
    qRegisterMetaType<Bytes>();
    qRegisterMetaType<EngineJob>();
    qRegisterMetaType<DatasetScan>();
    qRegisterMetaType<stx::engine::ModelSummary>();
    qRegisterMetaType<stx::engine::SampleRequest>();
    qRegisterMetaType<stx::engine::SampleResult>();
    qRegisterMetaType<stx::engine::SampleStarted>();
    qRegisterMetaType<stx::engine::SampleProgress>();
    qRegisterMetaType<stx::engine::SampleBytes>();
    qRegisterMetaType<stx::engine::AttentionProbe>();
    qRegisterMetaType<stx::engine::TrainOptions>();
    qRegisterMetaType<stx::engine::TrainProgress>();
    qRegisterMetaType<stx::engine::ValidationDone>();
    qRegisterMetaType<stx::engine::CheckpointSaved>();
    qRegisterMetaType<stx::engine::JobEnded>();
    qRegisterMetaType<stx::engine::TrainingEstimate>();
    return true;
  }();
  (void)registered;
}

}  // namespace

EngineHost::EngineHost(QObject* parent) : QObject(parent) {
  register_types_once();
  worker_ = new EngineWorker;
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(worker_, &EngineWorker::jobStarted, this, [this](EngineJob job) { job_ = job; });
  connect(worker_, &EngineWorker::jobFinished, this, [this](EngineJob job, bool) {
    if (job == EngineJob::generate || job == EngineJob::regenerate) --generations_;
    if (--pending_ == 0) {
      job_.reset();
      emit busyChanged(false);
    }
  });
  thread_.setObjectName(QStringLiteral("stx engine"));
  thread_.start();
}

EngineHost::~EngineHost() {
  worker_->requestStop();
  thread_.requestInterruption();
  thread_.quit();
  thread_.wait();
}

template <typename Call>
void EngineHost::queue(Call&& call) {
  // A stop pressed while a job waits in the queue must stop that job too, so the flag is cleared only when
  // nothing is pending.
  if (pending_++ == 0) {
    worker_->clearStop();
    emit busyChanged(true);
  }
  QMetaObject::invokeMethod(
      worker_,
      [w = worker_, threads = g_thread_limit, call = std::forward<Call>(call)]() mutable {
        w->setThreadLimit(threads);
        call();
      },
      Qt::QueuedConnection);
}

void EngineHost::setThreadLimit(int threads) { g_thread_limit = std::max(0, threads); }
int EngineHost::threadLimit() { return g_thread_limit; }

// Drawing a preview costs the GUI thread a few milliseconds (the waveform with its attention bars, the text
// view, the image). When the job's threads use every core, that time is taken from one of them, and a
// decoder step on two threads waits whenever either has lost its core: on 2 cores, with 30 previews a second
// the studio generated at 0.63x (audio) and 0.68x (text) of stx sample's rate, the GUI thread taking 10-17%
// of a core; with 10 a second, at 0.86x and 1.00x (stx-studio-bench, docs/benchmarks.md).
double EngineHost::previewIntervalSeconds() {
  const int threads = g_thread_limit > 0 ? g_thread_limit : stx::engine::job_threads();
  return stx::engine::usable_cores() > threads ? 1.0 / 30 : 1.0 / 10;
}

void EngineHost::openModel(const QString& path) {
  queue([w = worker_, path] { w->openModel(path); });
}

void EngineHost::generate(const stx::engine::SampleRequest& request) {
  ++generations_;
  queue([w = worker_, request] { w->generate(request); });
}

void EngineHost::regenerate(const Bytes& previous, qint64 keep, const stx::engine::SampleRequest& request) {
  ++generations_;
  queue([w = worker_, previous, keep, request] { w->regenerate(previous, keep, request); });
}

void EngineHost::inspect(const Bytes& bytes, int layer, int head, qint64 position) {
  queue([w = worker_, bytes, layer, head, position] { w->inspect(bytes, layer, head, position); });
}

void EngineHost::train(const stx::engine::TrainOptions& options) {
  queue([w = worker_, options] { w->train(options); });
}

void EngineHost::estimate(const stx::engine::TrainOptions& options, int steps) {
  queue([w = worker_, options, steps] { w->estimate(options, steps); });
}

void EngineHost::scanFolder(const QString& folder, const QString& kind, int imageHeight, int imageWidth,
                            int imageChannels) {
  queue([w = worker_, folder, kind, imageHeight, imageWidth, imageChannels] {
    w->scanFolder(folder, kind, imageHeight, imageWidth, imageChannels);
  });
}

void EngineHost::stop() { worker_->requestStop(); }

}  // namespace stx::studio
