// Decodes an image file into model bytes off the GUI thread: a large photo takes a noticeable moment to
// decode and resize, and the window must stay responsive. EngineHost has no job for it, and the engine's
// loader needs no model, so a short-lived thread does it. The newest request wins; an older result that
// arrives late is dropped.
#pragma once

#include <QObject>
#include <QString>
#include <memory>
#include <optional>

#include "core/engine_types.h"
#include "stx/engine/data/image_io.h"

class QThread;

namespace stx::studio {

class ImageLoader : public QObject {
  Q_OBJECT

 public:
  explicit ImageLoader(QObject* parent = nullptr);
  // Waits for a running decode (bounded by the engine's size limits) so that no thread outlives the loader.
  ~ImageLoader() override;

  // Loads `path` at `shape` (the open model's height, width and channels).
  void load(const QString& path, stx::engine::ImageShape shape);
  bool loading() const { return thread_ != nullptr; }

 signals:
  void loaded(const QString& path, const stx::studio::Bytes& bytes);
  // message names the file and the reason, as the engine words it.
  void failed(const QString& path, const QString& message);

 private:
  struct Job {
    QString path;
    stx::engine::ImageShape shape;
  };
  struct Outcome {
    Bytes bytes;
    QString error;
  };
  void start(const Job& job);
  void finished();

  QThread* thread_ = nullptr;
  Job running_;
  std::shared_ptr<Outcome> outcome_;
  std::optional<Job> next_;
};

}  // namespace stx::studio
