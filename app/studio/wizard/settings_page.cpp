#include "wizard/settings_page.h"

#include <QCheckBox>
#include <QDate>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "core/device_box.h"
#include "core/device_choice.h"
#include "core/engine_host.h"
#include "core/job_progress.h"
#include "core/model_library.h"
#include "stx/engine/model_types.h"
#include "wizard/train_wizard.h"

namespace stx::studio {

namespace {

constexpr int kEstimateSteps = 3;
constexpr int kMaxContext = 1 << 20;

}  // namespace

SettingsPage::SettingsPage(QWidget* parent) : QWizardPage(parent), host_(new EngineHost(this)) {
  setTitle(tr("Settings"));
  setSubTitle(
      tr("How long to train, and where the new model is saved. The estimate below measures a few real "
         "steps on this computer."));
  setCommitPage(true);  // once training starts, going back would leave a run behind
  setButtonText(QWizard::CommitButton, tr("Start training"));

  auto* column = new QVBoxLayout(this);
  column->addWidget(makeTrainingGroup());
  column->addWidget(makeSaveGroup());
  column->addWidget(makeEstimateGroup());
  column->addStretch();
  registerFields();
  connectSignals();
}

// Steps, batch, learning rate, context, validation share, checkpoints, precision and device.
QGroupBox* SettingsPage::makeTrainingGroup() {
  steps_ = new QSpinBox;
  steps_->setRange(1, 100'000'000);
  steps_->setGroupSeparatorShown(true);
  steps_->setValue(1000);
  steps_->setToolTip(tr("Optimiser steps of the whole run"));
  batch_ = new QSpinBox;
  batch_->setRange(1, 4096);
  batch_->setValue(8);
  batch_->setToolTip(tr("Sequences per step: larger is smoother but slower and needs more memory"));
  learningRate_ = new QDoubleSpinBox;
  learningRate_->setDecimals(6);
  learningRate_->setRange(0.000001, 0.5);
  learningRate_->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
  learningRate_->setValue(3e-4);
  learningRate_->setToolTip(tr("Peak learning rate, after a short warm-up; it then decays to a tenth"));
  context_ = new QSpinBox;
  context_->setRange(1, kMaxContext);
  context_->setGroupSeparatorShown(true);
  contextNote_ = new QLabel;
  contextNote_->setWordWrap(true);
  auto* contextRow = new QHBoxLayout;
  contextRow->addWidget(context_);
  contextRow->addWidget(contextNote_, 1);
  validation_ = new QDoubleSpinBox;
  validation_->setRange(1, 50);
  validation_->setDecimals(1);
  validation_->setSuffix(QStringLiteral(" %"));
  validation_->setValue(5);
  validation_->setToolTip(tr("The share of the data held out to measure bits/byte on unseen data"));
  checkpointEvery_ = new QSpinBox;
  checkpointEvery_->setRange(1, 1'000'000);
  checkpointEvery_->setValue(100);
  checkpointEvery_->setSuffix(tr(" steps"));
  checkpointEvery_->setToolTip(
      tr("A crash or a pause loses at most this many steps; a sample is shown at each"));

  // TrainOptions::precision: only offered where the CPU does bf16 in hardware (elsewhere it would train in
  // fp32 anyway); the estimate then measures the faster steps.
  bf16_ = new QCheckBox(tr("Faster arithmetic (bf16 linear layers)"));
  if (stx::engine::cpu_has_fast_bf16()) {
    bf16_->setToolTip(tr("This processor has AVX512-BF16: the linear layers run in bf16 at about twice the "
                         "speed, the weights stay fp32. Steps take 1.2-1.6x less time, with the same "
                         "bits/byte in our measurements."));
  } else {
    bf16_->setEnabled(false);
    bf16_->setToolTip(tr("Needs a processor with AVX512-BF16 (AMD Zen 4, Intel Sapphire Rapids or later)"));
  }
  // TrainOptions::device. The wizard starts it at the studio's choice (Preferences > Device).
  device_ = new DeviceBox;
  device_->setMinimumWidth(150);
  deviceNote_ = new QLabel(DeviceBox::unavailableNote());
  deviceNote_->setWordWrap(true);
  deviceNote_->setForegroundRole(QPalette::PlaceholderText);
  auto* deviceRow = new QHBoxLayout;
  deviceRow->addWidget(device_);
  deviceRow->addWidget(deviceNote_, 1);
  for (QAbstractSpinBox* box : std::initializer_list<QAbstractSpinBox*>{
           steps_, batch_, learningRate_, context_, validation_, checkpointEvery_}) {
    box->setMinimumWidth(150);
    box->setMaximumWidth(220);  // numbers do not need the page's width; the context note does
  }
  auto* training = new QGroupBox(tr("Training"));
  auto* form = new QFormLayout(training);
  form->addRow(tr("&Steps:"), steps_);
  form->addRow(tr("&Batch:"), batch_);
  form->addRow(tr("&Learning rate:"), learningRate_);
  auto* contextLabel = new QLabel(tr("&Context (bytes):"));
  contextLabel->setBuddy(context_);
  form->addRow(contextLabel, contextRow);
  form->addRow(tr("&Validation share:"), validation_);
  form->addRow(tr("C&heckpoint every:"), checkpointEvery_);
  form->addRow(tr("Precision:"), bf16_);
  auto* deviceLabel = new QLabel(tr("&Device:"));
  deviceLabel->setBuddy(device_);
  form->addRow(deviceLabel, deviceRow);

  return training;
}

// The model's name and the run folder it makes.
QGroupBox* SettingsPage::makeSaveGroup() {
  name_ = new QLineEdit;
  name_->setMaxLength(120);
  folderText_ = new QLabel;
  folderText_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  folderText_->setWordWrap(true);
  folderError_ = new QLabel;
  folderError_->setWordWrap(true);
  folderError_->setStyleSheet(QStringLiteral("color: #b00020;"));
  auto* save = new QGroupBox(tr("Save as"));
  auto* saveColumn = new QVBoxLayout(save);
  auto* saveForm = new QFormLayout;
  saveForm->addRow(tr("&Name:"), name_);
  saveForm->addRow(tr("Folder:"), folderText_);
  saveColumn->addLayout(saveForm);
  saveColumn->addWidget(folderError_);

  return save;
}

// A few real steps measured on this computer, with a button that starts and cancels them.
QGroupBox* SettingsPage::makeEstimateGroup() {
  estimateText_ = new QLabel;
  estimateText_->setWordWrap(true);
  estimateText_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  estimateBusy_ = new QProgressBar;
  estimateBusy_->setRange(0, 0);
  estimateBusy_->setMaximumHeight(12);
  estimateBusy_->setTextVisible(false);
  estimateBusy_->hide();
  estimateButton_ = new QPushButton(tr("&Estimate"));
  auto* estimate = new QGroupBox(tr("Estimate"));
  auto* estimateRow = new QHBoxLayout(estimate);
  auto* estimateColumn = new QVBoxLayout;
  estimateColumn->addWidget(estimateText_);
  estimateColumn->addWidget(estimateBusy_);
  estimateRow->addLayout(estimateColumn, 1);
  estimateRow->addWidget(estimateButton_, 0, Qt::AlignTop);

  return estimate;
}

// The wizard's fields, which the run page turns into TrainOptions.
void SettingsPage::registerFields() {
  registerField(QStringLiteral("steps"), steps_);
  registerField(QStringLiteral("batch"), batch_);
  registerField(QStringLiteral("learningRate"), learningRate_, "value", SIGNAL(valueChanged(double)));
  registerField(QStringLiteral("context"), context_);
  registerField(QStringLiteral("validationPercent"), validation_, "value", SIGNAL(valueChanged(double)));
  registerField(QStringLiteral("checkpointEvery"), checkpointEvery_);
  registerField(QStringLiteral("bf16"), bf16_);
  registerField(QStringLiteral("device"), device_, "currentData", SIGNAL(currentIndexChanged(int)));
  registerField(QStringLiteral("modelName"), name_);
  registerField(QStringLiteral("runFolder"), this, "runFolder", SIGNAL(runFolderChanged()));
}

void SettingsPage::connectSignals() {
  connect(name_, &QLineEdit::textChanged, this, [this] {
    folderText_->setText(QDir::toNativeSeparators(runFolder()));
    folderError_->setText(folderProblem());
    folderError_->setVisible(!folderError_->text().isEmpty());
    emit runFolderChanged();
    emit completeChanged();
  });
  connect(steps_, &QSpinBox::valueChanged, this, [this] { showEstimate(); });
  connect(batch_, &QSpinBox::valueChanged, this, [this] { markEstimateStale(); });
  connect(context_, &QSpinBox::valueChanged, this, [this] { markEstimateStale(); });
  connect(bf16_, &QCheckBox::toggled, this, [this] { markEstimateStale(); });
  connect(device_, &QComboBox::currentIndexChanged, this, [this] { showEstimate(); });
  connect(estimateButton_, &QPushButton::clicked, this, [this] {
    if (estimating()) {
      cancelEstimate();
    } else {
      startEstimate();
    }
  });
  connect(host_->worker(), &EngineWorker::estimated, this, [this](const stx::engine::TrainingEstimate& e) {
    estimateError_.clear();
    if (e.steps_measured > 0) {
      estimate_ = e;
    } else {
      estimate_.reset();
    }
    if (e.cancelled) estimateError_ = tr("The estimate was cancelled.");
  });
  connect(host_->worker(), &EngineWorker::failed, this, [this](EngineJob, const QString& message) {
    estimate_.reset();
    estimateError_ = tr("These settings cannot train: %1").arg(message);
  });
  connect(host_, &EngineHost::busyChanged, this, [this](bool busy) {
    estimateBusy_->setVisible(busy);
    estimateButton_->setText(busy ? tr("&Cancel estimate") : tr("&Estimate"));
    if (!busy) {
      showEstimate();
      emit estimateFinished();
    }
  });
}

void SettingsPage::initializePage() {
  const QString base = field(QStringLiteral("baseModel")).toString();
  const QString preset = field(QStringLiteral("preset")).toString();
  const QString kind = field(QStringLiteral("kind")).toString();
  const QString start = base.isEmpty() ? QStringLiteral("preset:") + preset : base;
  if (start != startingPoint_) {
    startingPoint_ = start;
    const QLocale locale;
    if (!base.isEmpty()) {
      const LibraryEntry entry = ModelLibrary::describe(base);
      context_->setRange(1, kMaxContext);
      context_->setSingleStep(1);
      context_->setValue(static_cast<int>(entry.summary.context));
      context_->setEnabled(false);
      contextNote_->setText(tr("fixed by the model being fine-tuned"));
      steps_->setValue(500);
      learningRate_->setValue(1e-4);  // gentler: the weights already know the kind of data
      // The batch the model was trained with fits its context in memory; the default 8 would not for the
      // bundled audio model (65,536 samples, one a step: about 43 GB at 8).
      batch_->setValue(entry.summary.batch_trained > 0 ? static_cast<int>(entry.summary.batch_trained) : 8);
    } else {
      const stx::engine::ModelConfig config = stx::engine::preset(preset.toStdString());
      if (kind == QLatin1String("image")) {
        context_->setRange(1, kMaxContext);
        context_->setSingleStep(1);
        context_->setEnabled(false);
        contextNote_->setText(tr("an image model sees one whole %1x%2x%3 image")
                                  .arg(config.image_height)
                                  .arg(config.image_width)
                                  .arg(config.image_channels));
      } else {
        context_->setRange(static_cast<int>(config.stride), kMaxContext);
        context_->setSingleStep(static_cast<int>(config.stride));
        context_->setEnabled(true);
        contextNote_->setText(
            kind == QLatin1String("audio")
                ? tr("samples the model hears at once (%1 s at 12 kHz); longer needs more memory")
                      .arg(static_cast<double>(config.context) / 12000.0, 0, 'f', 2)
                : tr("bytes the model reads at once; longer needs more memory"));
      }
      context_->setValue(static_cast<int>(config.context));
      steps_->setValue(2000);
      learningRate_->setValue(3e-4);
    }
    const QString stem = (base.isEmpty() ? preset : QFileInfo(base).fileName() + QStringLiteral("-tuned")) +
                         QLatin1Char('-') + QDate::currentDate().toString(QStringLiteral("yyyy-MM-dd"));
    if (name_->text().isEmpty() || name_->text() == suggestedName_) {
      suggestedName_ = freeName(stem);
      name_->setText(suggestedName_);
    }
  }
  folderText_->setText(QDir::toNativeSeparators(runFolder()));
  folderError_->setText(folderProblem());
  folderError_->setVisible(!folderError_->text().isEmpty());
  startEstimate();  // so the user sees the cost before committing
}

void SettingsPage::cleanupPage() {
  // The user's values stay as they are when going back (no reset to the defaults).
  cancelEstimate();
}

bool SettingsPage::isComplete() const { return folderProblem().isEmpty(); }

bool SettingsPage::validatePage() {
  cancelEstimate();
  const QString problem = folderProblem();
  folderError_->setText(problem);
  folderError_->setVisible(!problem.isEmpty());
  return problem.isEmpty();
}

QString SettingsPage::runFolder() const {
  const QString name = name_->text().trimmed();
  return name.isEmpty() ? QString() : QDir(ModelLibrary::userFolder()).absoluteFilePath(name);
}

QString SettingsPage::folderProblem() const {
  const QString name = name_->text().trimmed();
  if (name.isEmpty()) return tr("Give the new model a name.");
  if (name.contains(QLatin1Char('/')) || name.contains(QLatin1Char('\\')) ||
      name.startsWith(QLatin1Char('.'))) {
    return tr("'%1' cannot be a model name: no '/' or '\\', and no leading '.'.").arg(name);
  }
  const QFileInfo info(runFolder());
  if (info.exists() && !info.isDir()) {
    return tr("%1 exists and is not a folder: choose another name.")
        .arg(QDir::toNativeSeparators(info.filePath()));
  }
  if (info.isDir() &&
      !QDir(info.filePath()).isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden)) {
    return tr("%1 already exists and is not empty: choose another name.")
        .arg(QDir::toNativeSeparators(info.filePath()));
  }
  return {};
}

QString SettingsPage::freeName(const QString& stem) const {
  const QDir library(ModelLibrary::userFolder());
  QString name = stem;
  for (int n = 2; library.exists(name); ++n) name = QStringLiteral("%1-%2").arg(stem).arg(n);
  return name;
}

bool SettingsPage::estimating() const { return host_->busy(); }

void SettingsPage::startEstimate() {
  if (host_->busy()) return;
  const auto* wizard = qobject_cast<const TrainWizard*>(this->wizard());
  if (!wizard) return;
  estimate_.reset();
  estimateError_.clear();
  estimateStale_ = false;
  estimateText_->setText(tr("Measuring %1 training steps...").arg(kEstimateSteps));
  host_->estimate(wizard->trainOptions(), kEstimateSteps);
}

void SettingsPage::cancelEstimate() { host_->stop(); }

void SettingsPage::markEstimateStale() {
  if (estimate_) estimateStale_ = true;
  showEstimate();
}

void SettingsPage::showEstimate() {
  if (host_->busy()) return;  // "Measuring..." stays until the estimate ends
  if (!estimate_) {
    estimateText_->setText(estimateError_.isEmpty() ? tr("Press Estimate to measure the time per step.")
                                                    : estimateError_);
    return;
  }
  const QLocale locale;
  const double total = estimate_->seconds_per_step * steps_->value();
  QString text =
      tr("Time per step: %1 s · total for %2 steps: %3 · memory: about %4")
          .arg(locale.toString(estimate_->seconds_per_step, 'f', estimate_->seconds_per_step < 1 ? 3 : 2),
               locale.toString(steps_->value()), format_duration(total),
               locale.formattedDataSize(static_cast<qint64>(estimate_->memory_bytes)));
  // The engine measures on the CPU whatever the device: a run on the GPU says the estimate is not its.
  const QString trainsOn = describe_device(device_->device(), Job::training);
  const QString parameters = locale.toString(static_cast<qint64>(estimate_->parameters));
  text += QLatin1Char('\n') +
          (trainsOn == QLatin1String("CPU")
               ? tr("Measured on this computer's CPU; the model has %1 parameters.").arg(parameters)
               : tr("Measured on this computer's CPU, not on %1 where the run trains; the model has %2 "
                    "parameters.")
                     .arg(trainsOn, parameters));
  if (estimateStale_)
    text += QLatin1Char('\n') + tr("The batch, context or precision changed since: press Estimate again.");
  estimateText_->setText(text);
}

}  // namespace stx::studio
