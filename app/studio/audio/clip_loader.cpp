#include "audio/clip_loader.h"

#include <QStringList>
#include <QThread>
#include <exception>
#include <memory>

#include "stx/engine/data/audio_io.h"

namespace stx::studio {

namespace {

struct LoadResult {
  Bytes clip;
  QString error;
  QStringList warnings;  // read anyway, with something to say (a truncated WAV)
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
      stx::engine::AudioWarnings warnings;
      result->clip = stx::engine::load_audio_mulaw(path.toStdString(), {}, &warnings);
      for (const std::string& line : warnings.lines) result->warnings << QString::fromStdString(line);
    } catch (const std::exception& e) {
      result->error = QString::fromStdString(e.what());
    }
  });
  // Queued to this object's (the GUI) thread once the loading thread has ended.
  connect(thread_, &QThread::finished, this, [this, path, result] {
    thread_->deleteLater();
    thread_ = nullptr;
    if (result->error.isEmpty()) {
      for (const QString& warning : result->warnings) emit warned(warning);
      emit loaded(path, result->clip);
    } else {
      emit failed(path, result->error);
    }
  });
  thread_->start();
  return true;
}

}  // namespace stx::studio
