// The engine's value types, made known to Qt's meta-type system so that they travel through queued
// signals between the worker thread and the GUI thread.
#pragma once

#include <QMetaType>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <vector>

#include "stx/engine/events.h"
#include "stx/engine/model_session.h"
#include "stx/engine/sample_request.h"
#include "stx/engine/trainer.h"
#include "stx/engine/training_estimate.h"

namespace stx::studio {

using Bytes = std::vector<uint8_t>;

// The jobs the engine worker runs. Its signals name a job with this, never with text.
enum class EngineJob { openModel, generate, regenerate, inspect, train, estimate, scan };

// A job in the words of a message: "open model", "generate", ...
inline QString jobName(EngineJob job) {
  switch (job) {
    case EngineJob::openModel: return QStringLiteral("open model");
    case EngineJob::generate: return QStringLiteral("generate");
    case EngineJob::regenerate: return QStringLiteral("regenerate");
    case EngineJob::inspect: return QStringLiteral("inspect");
    case EngineJob::train: return QStringLiteral("train");
    case EngineJob::estimate: return QStringLiteral("estimate");
    case EngineJob::scan: return QStringLiteral("scan");
  }
  return QStringLiteral("job");
}

// What a folder scan found, for the training wizard's Data page.
struct DatasetScan {
  QString folder;
  QString kind;                  // "image" | "audio" | "text"
  qint64 files = 0;              // files used
  qint64 total_bytes = 0;        // bytes of training + validation data after decoding
  double audio_seconds = 0;      // audio only: the duration at 12 kHz
  QStringList skipped;           // "name: reason", one per unreadable file
  std::vector<Bytes> previews;   // a few decoded items: images (H*W*C), audio (mu-law), text (bytes)
  int image_width = 0, image_height = 0, image_channels = 0;
  QString error;                 // set when the folder cannot be used at all, in plain words
};

}  // namespace stx::studio

Q_DECLARE_METATYPE(stx::studio::Bytes)
Q_DECLARE_METATYPE(stx::studio::EngineJob)
Q_DECLARE_METATYPE(stx::studio::DatasetScan)
Q_DECLARE_METATYPE(stx::engine::ModelSummary)
Q_DECLARE_METATYPE(stx::engine::SampleRequest)
Q_DECLARE_METATYPE(stx::engine::SampleResult)
Q_DECLARE_METATYPE(stx::engine::SampleStarted)
Q_DECLARE_METATYPE(stx::engine::SampleProgress)
Q_DECLARE_METATYPE(stx::engine::SampleBytes)
Q_DECLARE_METATYPE(stx::engine::AttentionProbe)
Q_DECLARE_METATYPE(stx::engine::TrainOptions)
Q_DECLARE_METATYPE(stx::engine::TrainProgress)
Q_DECLARE_METATYPE(stx::engine::ValidationDone)
Q_DECLARE_METATYPE(stx::engine::CheckpointSaved)
Q_DECLARE_METATYPE(stx::engine::JobEnded)
Q_DECLARE_METATYPE(stx::engine::TrainingEstimate)
