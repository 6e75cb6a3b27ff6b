#include "image/image_loader.h"

#include <QThread>
#include <exception>

namespace stx::studio {

ImageLoader::ImageLoader(QObject* parent) : QObject(parent) {}

ImageLoader::~ImageLoader() {
  if (thread_) {
    thread_->wait();
    delete thread_;
  }
}

void ImageLoader::load(const QString& path, stx::engine::ImageShape shape) {
  const Job job{path, shape};
  if (thread_) {
    next_ = job;  // decoded once the running one ends; anything queued before is dropped
    return;
  }
  start(job);
}

void ImageLoader::start(const Job& job) {
  running_ = job;
  auto outcome = std::make_shared<Outcome>();
  outcome_ = outcome;
  thread_ = QThread::create([job, outcome] {
    try {
      outcome->bytes = stx::engine::load_image_bytes(job.path.toStdString(), job.shape);
    } catch (const std::exception& e) {
      outcome->error = QString::fromStdString(e.what());
    }
  });
  thread_->setObjectName(QStringLiteral("stx image loader"));
  // finished is emitted on the loader thread; with `this` as context it is delivered on the GUI thread.
  connect(thread_, &QThread::finished, this, &ImageLoader::finished);
  thread_->start();
}

void ImageLoader::finished() {
  QThread* done = thread_;
  thread_ = nullptr;
  done->wait();
  done->deleteLater();
  const std::shared_ptr<Outcome> outcome = outcome_;
  const Job job = running_;
  if (next_) {
    const Job next = *next_;
    next_.reset();
    start(next);  // a newer file was asked for: this result is out of date
    return;
  }
  if (outcome->error.isEmpty()) {
    emit loaded(job.path, outcome->bytes);
  } else {
    emit failed(job.path, outcome->error);
  }
}

}  // namespace stx::studio
