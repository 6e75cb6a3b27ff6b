// LibTorch first: its headers use `slots` as a name, which Qt's headers define as a macro.
#include "stx/engine/checkpoint.h"
#include "stx/models/model_config.h"
#include "stx/models/sparse_transformer.h"

#include <nlohmann/json.hpp>

#include "studio_test_support.h"
#include "tiny_model.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QThread>

namespace stx::studio::test {

QString make_tiny_model(const QString& folder, const QString& kind, double temperature, double min_p) {
  models::ModelConfig c = stx::test::tiny_model_config(models::parse_data_kind(kind.toStdString()));
  if (c.kind == models::DataKind::text) c.context = 128;
  QDir().mkpath(folder);
  models::SparseTransformer model(c);
  engine::SamplingSettings sampling;
  sampling.temperature = temperature;
  sampling.min_p = min_p;
  engine::write_checkpoint_files(folder.toStdString(), c, nlohmann::json::object(), sampling, model, nullptr, nullptr);
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
