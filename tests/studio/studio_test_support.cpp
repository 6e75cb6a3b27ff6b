// LibTorch first: its headers use `slots` as a name, which Qt's headers define as a macro.
#include "stx/engine/checkpoint.h"
#include "stx/models/model_config.h"
#include "stx/models/sparse_transformer.h"

#include <nlohmann/json.hpp>

#include "studio_test_support.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QThread>

namespace stx::studio::test {

QString make_tiny_model(const QString& folder, const QString& kind) {
  models::ModelConfig c;
  c.name = "tiny-" + kind.toStdString();
  c.d_model = 32;
  c.layers = 2;
  c.heads = 2;
  c.d_ff = 64;
  c.block = 16;
  if (kind == "image") {
    c.kind = models::DataKind::image;
    c.image_height = 8;
    c.image_width = 8;
    c.image_channels = 1;
    c.context = 64;
    c.pattern = kernels::Pattern::strided;
    c.stride = 8;
  } else if (kind == "audio") {
    c.kind = models::DataKind::audio;
    c.context = 256;
    c.pattern = kernels::Pattern::strided;
    c.stride = 16;
  } else {
    c.kind = models::DataKind::text;
    c.context = 128;
    c.pattern = kernels::Pattern::fixed;
    c.stride = 16;
    c.summary = 4;
  }
  QDir().mkpath(folder);
  models::SparseTransformer model(c);
  engine::write_checkpoint_files(folder.toStdString(), c, nlohmann::json::object(), model, nullptr, nullptr);
  return folder;
}

bool wait_until(const std::function<bool()>& done, int timeoutMs) {
  QElapsedTimer timer;
  timer.start();
  while (!done()) {
    if (timer.elapsed() > timeoutMs) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(2);
  }
  return true;
}

}  // namespace stx::studio::test
