#include "core/generation_tab.h"

#include <QComboBox>
#include <QFileInfo>
#include <QTimer>
#include <algorithm>

#include "core/device_choice.h"
#include "core/engine_host.h"
#include "core/model_picker.h"
#include "core/model_text.h"
#include "core/sampling_controls.h"
#include "core/studio_context.h"

namespace stx::studio {

GenerationTab::GenerationTab(const QString& kind, StudioContext* context, QWidget* parent)
    : StudioTab(context, parent),
      kind_(kind),
      host_(new EngineHost(this)),
      picker_(new ModelPicker(kind, this)),
      device_(describe_device(context->device())) {
  connect(picker_, &ModelPicker::modelChosen, this, &GenerationTab::openChosenModel);
  // Connected before the tabs' own handlers, so that these see the model, device and rate already updated.
  EngineWorker* worker = host_->worker();
  connect(worker, &EngineWorker::modelOpened, this, &GenerationTab::onModelOpened);
  connect(worker, &EngineWorker::failed, this, &GenerationTab::onFailed);
  connect(worker, &EngineWorker::sampleStarted, this, [this](const stx::engine::SampleStarted& started) {
    device_ = QString::fromStdString(started.device);
    if (!started.device_reason.empty()) {
      device_ += QStringLiteral(" (%1)").arg(QString::fromStdString(started.device_reason));
    }
    showStatus();
  });
  connect(worker, &EngineWorker::sampleProgress, this, [this](const stx::engine::SampleProgress& progress) {
    tokensPerSecond_ = progress.tokens_per_second;
    showStatus();
  });
  connect(worker, &EngineWorker::sampleFinished, this, [this](const stx::engine::SampleResult& result) {
    tokensPerSecond_ = result.tokens_per_second;
    showStatus();
  });
  connect(host_, &EngineHost::busyChanged, this, [this] {
    updateControls();
    emit actionsChanged();
  });
  connect(context, &StudioContext::deviceChanged, this, [this](const QString& device) {
    // The running job says where it runs; the next one runs on the new device.
    if (host_->generating()) return;
    device_ = describe_device(device);
    showStatus();
  });
}

void GenerationTab::useModel(const QString& path) { picker_->choose(path); }

void GenerationTab::refreshModels() { picker_->refresh(); }

void GenerationTab::activated() { showStatus(); }

bool GenerationTab::busy() const { return host_->busy(); }

bool GenerationTab::hasRunningWork() const { return host_->generating(); }

void GenerationTab::stop() { host_->stop(); }

bool GenerationTab::acceptsModel(const stx::engine::ModelSummary& summary) const {
  return QString::fromStdString(summary.kind) == kind_;
}

QString GenerationTab::statusModelName() const {
  return model_ ? QString::fromStdString(model_->name) : QString();
}

void GenerationTab::openChosenModel(const QString& path) {
  if (path.isEmpty()) return;
  opening_ = true;
  openingPath_ = path;
  openingModel(path);
  host_->openModel(path);
}

void GenerationTab::onModelOpened(const stx::engine::ModelSummary& summary) {
  opening_ = false;
  if (!acceptsModel(summary)) {
    model_.reset();
    modelRefused(summary);
    return;
  }
  model_ = summary;
  picker_->showSummary(summary_line(summary));
  samplingControls()->modelOpened(QString::fromStdString(summary.folder.string()), summary.sampling);
  modelOpened(summary);
}

void GenerationTab::onFailed(EngineJob job, const QString& message) {
  if (job != EngineJob::openModel) {
    jobFailed(job, message);
    return;
  }
  opening_ = false;
  model_.reset();
  modelFailed(message);
}

void GenerationTab::forgetModel(const QString& path) {
  model_.reset();
  picker_->showSummary(tr("Opening %1...").arg(QFileInfo(path).fileName()));
}

void GenerationTab::openFirstModelLater() {
  QTimer::singleShot(0, this, [this] {
    if (picker_->currentPath().isEmpty() && picker_->combo()->count() > 0)
      picker_->combo()->setCurrentIndex(0);
  });
}

void GenerationTab::logEngineLines() {
  connect(host_->worker(), &EngineWorker::logLine, this, [this](int level, const QString& text) {
    if (level < 2) context()->log(static_cast<StudioContext::Level>(std::max(level, 0)), text);
  });
}

void GenerationTab::showStatus() {
  context()->setStatus(this, statusModelName(), model_ ? device_ : QString(), tokensPerSecond_);
}

}  // namespace stx::studio
