#include "wizard/train_wizard.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QMessageBox>
#include <QPushButton>
#include <QTimer>
#include <algorithm>

#include "core/device_box.h"
#include "core/device_choice.h"
#include "core/model_library.h"
#include "core/studio_context.h"
#include "wizard/base_model_page.h"
#include "wizard/data_page.h"
#include "wizard/finish_page.h"
#include "wizard/run_page.h"
#include "wizard/settings_page.h"
#include "stx/engine/model_types.h"

namespace stx::studio {

namespace {

constexpr int64_t kMaxWarmupSteps = 100;

}  // namespace

TrainWizard::TrainWizard(StudioContext* context, QWidget* parent)
    : QWizard(parent),
      context_(context),
      dataPage_(new DataPage),
      baseModelPage_(new BaseModelPage),
      settingsPage_(new SettingsPage),
      runPage_(new RunPage),
      finishPage_(new FinishPage) {
  setWindowTitle(tr("Train a model"));
  setOption(QWizard::NoBackButtonOnStartPage);
  setOption(QWizard::HaveHelpButton, false);
  setPage(DataPageId, dataPage_);
  setPage(BaseModelPageId, baseModelPage_);
  setPage(SettingsPageId, settingsPage_);
  setPage(RunPageId, runPage_);
  setPage(FinishPageId, finishPage_);
  setStartId(DataPageId);
  // Training starts on the studio's device (Preferences > Device), unless this machine lacks it.
  if (context_ && device_problem(device_choice(context_->device())).isEmpty()) {
    settingsPage_->deviceBox()->setDevice(context_->device());
  }
  setMinimumSize(820, 680);
}

TrainWizard::~TrainWizard() = default;

QString TrainWizard::kind() const {
  return resumeFolder_.isEmpty() ? field(QStringLiteral("kind")).toString() : resumeKind_;
}

QString TrainWizard::runFolder() const {
  return resumeFolder_.isEmpty() ? field(QStringLiteral("runFolder")).toString() : resumeFolder_;
}

std::array<int, 3> TrainWizard::imageShape() const {
  const QString base = field(QStringLiteral("baseModel")).toString();
  if (!base.isEmpty()) {
    const LibraryEntry entry = ModelLibrary::describe(base);
    if (entry.error.isEmpty() && entry.summary.kind == "image") {
      return {static_cast<int>(entry.summary.image_height), static_cast<int>(entry.summary.image_width),
              static_cast<int>(entry.summary.image_channels)};
    }
  }
  const stx::engine::ModelConfig small = stx::engine::preset("image-small");
  return {static_cast<int>(small.image_height), static_cast<int>(small.image_width),
          static_cast<int>(small.image_channels)};
}

stx::engine::TrainOptions TrainWizard::trainOptions() const {
  stx::engine::TrainOptions o;
  // Not part of the recipe: a resumed run trains where the Settings page says, too.
  o.device = device_choice(field(QStringLiteral("device")).toString());
  if (!resumeFolder_.isEmpty()) {
    // The recipe (data, batch, learning rate...) travels in the checkpoint; only the total steps are given.
    o.resume = resumeFolder_.toStdString();
    o.out = resumeFolder_.toStdString();
    o.steps = resumeSteps_;
    return o;
  }
  o.data = field(QStringLiteral("dataFolder")).toString().trimmed().toStdString();
  o.out = runFolder().toStdString();
  const QString base = field(QStringLiteral("baseModel")).toString();
  if (!base.isEmpty()) {
    o.init_from = base.toStdString();
  } else {
    o.model = stx::engine::preset(field(QStringLiteral("preset")).toString().toStdString());
    if (o.model.kind != stx::engine::DataKind::image)
      o.model.context = field(QStringLiteral("context")).toLongLong();
  }
  o.steps = field(QStringLiteral("steps")).toLongLong();
  o.batch = field(QStringLiteral("batch")).toLongLong();
  o.learning_rate = field(QStringLiteral("learningRate")).toDouble();
  o.validation_fraction = field(QStringLiteral("validationPercent")).toDouble() / 100.0;
  o.checkpoint_every = field(QStringLiteral("checkpointEvery")).toLongLong();
  if (field(QStringLiteral("bf16")).toBool()) o.precision = stx::engine::Precision::bf16;
  // A validation point at every checkpoint: the curve and the saved "best" agree, at no extra passes.
  o.eval_every = o.checkpoint_every;
  // Warm-up is a tenth of a short run, so a short fine-tune still reaches its learning rate.
  o.warmup_steps = std::min(kMaxWarmupSteps, o.steps / 10);
  return o;
}

QString TrainWizard::newestResumableRun() {
  const QDir library(ModelLibrary::userFolder());
  QString newest;
  QDateTime newestTime;
  for (const QString& name : library.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
    const QString folder = library.absoluteFilePath(name);
    const QFileInfo latest(QDir(folder).filePath(QStringLiteral("latest.json")));
    if (!latest.exists()) continue;
    const LibraryEntry entry = ModelLibrary::describe(folder);
    if (!entry.error.isEmpty()) continue;
    if (entry.summary.steps_planned <= 0 || entry.summary.steps_trained >= entry.summary.steps_planned)
      continue;
    if (newest.isEmpty() || latest.lastModified() > newestTime) {
      newest = folder;
      newestTime = latest.lastModified();
    }
  }
  return newest;
}

bool TrainWizard::offerResume() {
  const QString folder = newestResumableRun();
  if (folder.isEmpty()) return false;
  const LibraryEntry entry = ModelLibrary::describe(folder);
  const auto answer = QMessageBox::question(
      this, tr("Resume training?"),
      tr("The training run %1 stopped at step %2 of %3.\n\nResume it? (No starts a new run; the stopped one "
         "stays as it is.)")
          .arg(QDir::toNativeSeparators(folder))
          .arg(entry.summary.steps_trained)
          .arg(entry.summary.steps_planned),
      QMessageBox::Yes | QMessageBox::No, QMessageBox::Yes);
  if (answer != QMessageBox::Yes) return false;
  resumeRun(folder);
  return true;
}

void TrainWizard::resumeRun(const QString& folder) {
  const LibraryEntry entry = ModelLibrary::describe(folder);
  if (!entry.error.isEmpty()) {
    if (context_) context_->showError(entry.error);
    return;
  }
  resumeFolder_ = QFileInfo(folder).absoluteFilePath();
  resumeKind_ = QString::fromStdString(entry.summary.kind);
  resumeSteps_ = entry.summary.steps_planned;
  setStartId(RunPageId);
  restart();  // shows the Run page, whose initializePage resumes the run
}

void TrainWizard::showEvent(QShowEvent* event) {
  QWizard::showEvent(event);
  if (!offeredResume_) {
    offeredResume_ = true;
    // After the wizard is on screen, so the question has a window to sit on.
    QTimer::singleShot(0, this, [this] { offerResume(); });
  }
}

void TrainWizard::accept() {
  if (runPage_->training()) return;  // Finish is disabled then; a stray accept() must not lose the run
  emit modelReady(kind(), runFolder());
  QWizard::accept();
}

void TrainWizard::reject() {
  if (runPage_->training()) {
    const auto answer = QMessageBox::question(this, tr("Stop training?"),
                                              tr("A model is training. Stop it and close? The run stops at "
                                                 "its next step and writes a checkpoint, which "
                                                 "you can resume later."),
                                              QMessageBox::Yes | QMessageBox::No, QMessageBox::No);
    if (answer != QMessageBox::Yes) return;
    runPage_->stopAndWait();
  }
  QWizard::reject();
}

}  // namespace stx::studio
