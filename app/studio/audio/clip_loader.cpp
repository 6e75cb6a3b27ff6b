#include "audio/clip_loader.h"

#include <QThread>
#include <exception>
#include <memory>

#include "stx/engine/audio_io.h"

namespace stx::studio {

namespace {

struct LoadResult {
  Bytes clip;
  QString error;
};

}  // namespace

ClipLoader::ClipLoader(QObject* parent) : QObject(parent) {}

ClipLoader::~ClipLoader() {
  if (!thread_) return;
  thread_->disconnect(this);
  thread_->wait();
  delete thread_;
}

bool ClipLoader::load(const QString& path) {
  if (thread_) return false;
  auto result = std::make_shared<LoadResult>();
  thread_ = QThread::create([path, result] {
    try {
      result->clip = stx::engine::load_audio_mulaw(path.toStdString());
    } catch (const std::exception& e) {
      result->error = QString::fromStdString(e.what());
    }
  });
  // Queued to this object's (the GUI) thread once the loading thread has ended.
  connect(thread_, &QThread::finished, this, [this, path, result] {
    thread_->deleteLater();
    thread_ = nullptr;
    if (result->error.isEmpty()) {
      emit loaded(path, result->clip);
    } else {
      emit failed(path, result->error);
    }
  });
  thread_->start();
  return true;
}

}  // namespace stx::studio
