#include "core/engine_worker.h"

#include <exception>
#include <filesystem>

#include "core/device_choice.h"
#include "stx/engine/data/audio_io.h"
#include "stx/engine/data/dataset.h"
#include "stx/engine/error.h"
#include "stx/engine/threads.h"

namespace stx::studio {

namespace {

constexpr size_t kPreviewImages = 6;
constexpr size_t kPreviewAudioBytes = 3 * stx::engine::kSampleRate;  // three seconds
constexpr size_t kPreviewTextBytes = 600;
constexpr int kMaxSkippedListed = 200;

QString path_text(const std::filesystem::path& path) { return QString::fromStdString(path.string()); }

}  // namespace

EngineWorker::EngineWorker(QObject* parent) : QObject(parent) {}

template <typename Job>
void EngineWorker::run(EngineJob name, Job&& job) {
  emit jobStarted(name);
  bool ok = false;
  try {
    stx::engine::set_thread_limit(threads_);  // Edit > Preferences > Threads
    stx::engine::use_job_threads();  // on this thread: LibTorch and OpenMP count threads per thread
    stx::engine::with_plain_errors(job);  // LibTorch's errors, the JSON reader's...: one plain line
    ok = true;
  } catch (const stx::engine::Error& e) {
    // The tab shows it (context()->showError), which also logs it: no logLine here, or it would log twice.
    emit failed(name, QString::fromStdString(e.what()));
  }
  emit jobFinished(name, ok);
}

void EngineWorker::forward(const stx::engine::Event& event) {
  using namespace stx::engine;
  if (const auto* e = std::get_if<SampleBytes>(&event)) {
    emit sampleBytes(*e);
  } else if (const auto* e = std::get_if<SampleProgress>(&event)) {
    emit sampleProgress(*e);
  } else if (const auto* e = std::get_if<AttentionProbe>(&event)) {
    emit attentionProbe(*e);
  } else if (const auto* e = std::get_if<SampleStarted>(&event)) {
    emit sampleStarted(*e);
  } else if (const auto* e = std::get_if<TrainProgress>(&event)) {
    emit trainProgress(*e);
  } else if (const auto* e = std::get_if<ValidationDone>(&event)) {
    emit validationDone(*e);
  } else if (const auto* e = std::get_if<CheckpointSaved>(&event)) {
    emit checkpointSaved(*e);
  } else if (const auto* e = std::get_if<LogLine>(&event)) {
    emit logLine(static_cast<int>(e->level), QString::fromStdString(e->text));
  } else if (const auto* e = std::get_if<JobEnded>(&event)) {
    (void)e;  // train() returns the same value; trainEnded is emitted from there
  }
}

void EngineWorker::openModel(const QString& path) {
  run(EngineJob::openModel, [&] {
    model_.reset();
    model_ = stx::engine::LoadedModel::open(path.toStdString());
    emit logLine(0, tr("opened %1").arg(path_text(model_->summary().folder)));
    emit modelOpened(model_->summary());
  });
}

void EngineWorker::checkDevice(const stx::engine::SampleRequest& request) {
  const QString problem = device_problem(request.device);
  if (!problem.isEmpty()) throw std::runtime_error(problem.toStdString());
}

void EngineWorker::generate(const stx::engine::SampleRequest& request) {
  run(EngineJob::generate, [&] {
    if (!model_) throw std::runtime_error(tr("no model is open: pick one first").toStdString());
    checkDevice(request);
    const stx::engine::SampleResult result =
        model_->sample(request, [this](const stx::engine::Event& e) { forward(e); }, &cancel_);
    emit sampleFinished(result);
  });
}

void EngineWorker::regenerate(const Bytes& previous, qint64 keep, const stx::engine::SampleRequest& request) {
  run(EngineJob::regenerate, [&] {
    if (!model_) throw std::runtime_error(tr("no model is open: pick one first").toStdString());
    checkDevice(request);
    const stx::engine::SampleResult result = model_->regenerate(
        previous, keep, request, [this](const stx::engine::Event& e) { forward(e); }, &cancel_);
    emit sampleFinished(result);
  });
}

void EngineWorker::inspect(const Bytes& bytes, int layer, int head, qint64 position) {
  run(EngineJob::inspect, [&] {
    if (!model_) throw std::runtime_error(tr("no model is open: pick one first").toStdString());
    emit inspected(model_->inspect(bytes, layer, head, position));
  });
}

void EngineWorker::train(const stx::engine::TrainOptions& options) {
  run(EngineJob::train, [&] {
    const stx::engine::JobEnded end =
        stx::engine::train(options, [this](const stx::engine::Event& e) { forward(e); }, cancel_);
    emit trainEnded(end);
  });
}

void EngineWorker::estimate(const stx::engine::TrainOptions& options, int steps) {
  run(EngineJob::estimate, [&] { emit estimated(stx::engine::estimate_training(options, steps, &cancel_)); });
}

void EngineWorker::scanFolder(const QString& folder, const QString& kind, int imageHeight, int imageWidth,
                              int imageChannels) {
  run(EngineJob::scan, [&] {
    namespace engine = stx::engine;
    DatasetScan scan;
    scan.folder = folder;
    scan.kind = kind;
    engine::DatasetOptions options;
    options.kind = engine::parse_data_kind(kind.toStdString());
    options.image = engine::ImageShape{imageHeight, imageWidth, imageChannels};
    options.progress = [this](size_t done, size_t total) {
      emit scanProgress(static_cast<qint64>(done), static_cast<qint64>(total));
      return !cancel_.load();
    };
    engine::Dataset data;
    try {
      data = engine::open_dataset(folder.toStdString(), options);
    } catch (const std::exception& e) {
      scan.error = QString::fromStdString(e.what());
      emit scanFinished(scan);
      return;
    }
    if (cancel_.load()) {
      scan.error = tr("the scan was stopped");
      emit scanFinished(scan);
      return;
    }
    scan.files = static_cast<qint64>(data.train_files.size() + data.validation_files.size());
    scan.total_bytes = static_cast<qint64>(data.train.size() + data.validation.size());
    for (const engine::SkippedFile& skipped : data.skipped) {
      if (scan.skipped.size() >= kMaxSkippedListed) {
        scan.skipped << tr("... and %1 more").arg(data.skipped.size() - kMaxSkippedListed);
        break;
      }
      scan.skipped << QString::fromStdString(skipped.reason);
    }
    const std::vector<uint8_t>& source = data.train.empty() ? data.validation : data.train;
    if (options.kind == engine::DataKind::image) {
      scan.image_height = imageHeight;
      scan.image_width = imageWidth;
      scan.image_channels = imageChannels;
      const size_t record = data.record_bytes;
      for (size_t i = 0; i < kPreviewImages && (i + 1) * record <= source.size(); ++i) {
        scan.previews.emplace_back(source.begin() + i * record, source.begin() + (i + 1) * record);
      }
    } else {
      const size_t take = std::min(source.size(), options.kind == engine::DataKind::audio ? kPreviewAudioBytes
                                                                                          : kPreviewTextBytes);
      if (take > 0) scan.previews.emplace_back(source.begin(), source.begin() + take);
      if (options.kind == engine::DataKind::audio) {
        scan.audio_seconds = static_cast<double>(scan.total_bytes) / engine::kSampleRate;
      }
    }
    if (scan.files == 0 || scan.total_bytes == 0) {
      scan.error = tr("%1 holds no readable %2 files").arg(folder, kind);
    }
    emit scanFinished(scan);
  });
}

}  // namespace stx::studio
