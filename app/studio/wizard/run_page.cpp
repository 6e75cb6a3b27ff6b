#include "wizard/run_page.h"

#include <QDir>
#include <QEventLoop>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QVBoxLayout>

#include "core/device_choice.h"
#include "core/engine_host.h"
#include "core/job_progress.h"
#include "core/studio_context.h"
#include "stx/engine/data/audio_io.h"
#include "wizard/sample_view.h"
#include "wizard/train_wizard.h"
#include "wizard/training_chart.h"

namespace stx::studio {

namespace {

constexpr int64_t kTextSampleBytes = 200;
constexpr int64_t kAudioSampleBytes = stx::engine::kSampleRate;  // about one second

QString native(const QString& path) { return QDir::toNativeSeparators(path); }

}  // namespace

RunPage::RunPage(QWidget* parent)
    : QWizardPage(parent), trainHost_(new EngineHost(this)), previewHost_(new EngineHost(this)) {
  qRegisterMetaType<stx::studio::RunPage::State>();
  setTitle(tr("Training"));
  setSubTitle(
      tr("The curves fall as the model learns. Pause keeps a checkpoint and Resume goes on from it."));

  chart_ = new TrainingChart;
  stepText_ = new QLabel;
  stepText_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  progress_ = new JobProgress;
  progress_->stopButton()->hide();  // Pause and Cancel below say what happens to the run
  pause_ = new QPushButton(tr("&Pause"));
  pause_->setToolTip(tr("Stop with a checkpoint; Resume goes on from it"));
  cancel_ = new QPushButton(tr("&Cancel run"));
  cancel_->setToolTip(tr("Stop training for good; the last checkpoint is kept"));
  status_ = new QLabel;
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  sample_ = new SampleView;
  sample_->setMinimumHeight(90);
  sampleCaption_ = new QLabel(tr("A sample appears at each checkpoint."));
  sampleCaption_->setWordWrap(true);

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(pause_);
  buttons->addWidget(cancel_);
  buttons->addStretch();
  auto* sampleBox = new QGroupBox(tr("Sample from the latest checkpoint"));
  auto* sampleColumn = new QVBoxLayout(sampleBox);
  sampleColumn->addWidget(sampleCaption_);
  sampleColumn->addWidget(sample_, 1);
  auto* column = new QVBoxLayout(this);
  column->addWidget(chart_, 3);
  column->addWidget(stepText_);
  column->addWidget(progress_);
  column->addLayout(buttons);
  column->addWidget(status_);
  column->addWidget(sampleBox, 1);

  connect(pause_, &QPushButton::clicked, this, [this] {
    if (training()) {
      pause();
    } else {
      resume();
    }
  });
  connect(cancel_, &QPushButton::clicked, this, &RunPage::cancelRun);

  EngineWorker* worker = trainHost_->worker();
  connect(worker, &EngineWorker::trainProgress, this, &RunPage::onProgress);
  connect(worker, &EngineWorker::validationDone, this, &RunPage::onValidation);
  connect(worker, &EngineWorker::checkpointSaved, this, &RunPage::onCheckpoint);
  connect(worker, &EngineWorker::trainEnded, this, &RunPage::onEnded);
  connect(worker, &EngineWorker::logLine, this, [this](int level, const QString& text) {
    if (auto* wizard = qobject_cast<TrainWizard*>(this->wizard()); wizard && wizard->context()) {
      wizard->context()->log(static_cast<StudioContext::Level>(level), text);
    }
  });
  connect(worker, &EngineWorker::failed, this, [this](EngineJob, const QString& message) {
    onEnded(stx::engine::JobEnded{stx::engine::JobEnded::Outcome::failed, message.toStdString(), {}, {}});
  });
  connect(trainHost_, &EngineHost::busyChanged, this, [this](bool busy) {
    if (!busy && (state_ == State::running || state_ == State::pausing || state_ == State::cancelling)) {
      // The job ended without saying how (it should not happen): never leave the page looking busy.
      onEnded(stx::engine::JobEnded{stx::engine::JobEnded::Outcome::failed,
                                    tr("the training job ended unexpectedly").toStdString(),
                                    {}, {}});
    }
    emit completeChanged();
  });
  connect(previewHost_->worker(), &EngineWorker::modelOpened, this, &RunPage::onPreviewOpened);
  connect(previewHost_->worker(), &EngineWorker::sampleFinished, this, &RunPage::onSample);
  connect(previewHost_->worker(), &EngineWorker::failed, this,
          [this](EngineJob job, const QString& message) {
            // A preview is a courtesy: its failure (a checkpoint already rotated away, say) must not stop the run.
            if (auto* wizard = qobject_cast<TrainWizard*>(this->wizard()); wizard && wizard->context()) {
              wizard->context()->log(StudioContext::Level::warning,
                                     tr("sample preview (%1): %2").arg(jobName(job), message));
            }
          });
  setState(State::idle);
}

void RunPage::initializePage() {
  auto* wizard = qobject_cast<TrainWizard*>(this->wizard());
  if (!wizard) return;
  wizard->page(TrainWizard::SettingsPageId)->setCommitPage(true);
  kind_ = wizard->kind();
  runFolder_ = wizard->runFolder();
  options_ = wizard->trainOptions();
  chart_->clear();
  sample_->clear();
  sampleCaption_->setText(tr("A sample appears at each checkpoint."));
  stepsDone_ = 0;
  stepsPlanned_ = options_.steps;
  lastValidation_.reset();
  lastCheckpoint_.clear();
  samplesShown_ = 0;
  start(options_);
}

void RunPage::cleanupPage() {
  stopAndWait();
  setState(State::idle);
  if (auto* page = wizard() ? wizard()->page(TrainWizard::SettingsPageId) : nullptr)
    page->setCommitPage(true);
}

bool RunPage::training() const { return trainHost_->busy(); }

bool RunPage::hasCheckpoint() const {
  return !runFolder_.isEmpty() && QFileInfo::exists(QDir(runFolder_).filePath(QStringLiteral("latest.json")));
}

bool RunPage::isComplete() const { return !training() && hasCheckpoint(); }

void RunPage::start(const stx::engine::TrainOptions& options) {
  if (training()) return;
  endMessage_.clear();
  setState(State::running);
  progress_->start(options.resume ? tr("Resuming %1").arg(native(runFolder_)) : tr("Reading the data..."));
  status_->setText(tr("Saving to %1").arg(native(runFolder_)));
  trainHost_->train(options);
  emit completeChanged();
}

void RunPage::pause() {
  if (state_ != State::running) return;
  setState(State::pausing);
  status_->setText(tr("Pausing: finishing the current step and writing a checkpoint..."));
  trainHost_->stop();
}

void RunPage::resume() {
  if (training()) return;
  stx::engine::TrainOptions options = options_;
  if (hasCheckpoint()) {
    // The same run goes on from its latest checkpoint, up to the same total steps.
    options.init_from.reset();
    options.resume = runFolder_.toStdString();
    options.out = runFolder_.toStdString();
  }
  start(options);
}

void RunPage::cancelRun() {
  if (state_ == State::running || state_ == State::pausing) {
    setState(State::cancelling);
    status_->setText(tr("Stopping: finishing the current step and writing a checkpoint..."));
    trainHost_->stop();
    previewHost_->stop();
  } else if (state_ == State::paused) {
    setState(State::cancelled);
    status_->setText(hasCheckpoint()
                         ? tr("Stopped at step %1. The last checkpoint is kept in %2.")
                               .arg(stepsDone_)
                               .arg(native(lastCheckpoint_.isEmpty() ? runFolder_ : lastCheckpoint_))
                         : tr("Stopped before the first checkpoint; nothing was saved."));
  }
}

void RunPage::stopAndWait() {
  previewHost_->stop();
  if (!training()) return;
  if (state_ == State::running || state_ == State::pausing) setState(State::cancelling);
  status_->setText(tr("Stopping: writing the final checkpoint..."));
  QEventLoop loop;
  connect(trainHost_, &EngineHost::busyChanged, &loop, [&loop](bool busy) {
    if (!busy) loop.quit();
  });
  trainHost_->stop();
  if (training()) loop.exec();
}

void RunPage::onProgress(const stx::engine::TrainProgress& p) {
  stepsDone_ = p.step;
  stepsPlanned_ = p.total_steps;
  lastLoss_ = p.loss_bits_per_byte;
  chart_->addLoss(p.step, p.loss_bits_per_byte);
  progress_->update(p.step, p.total_steps, p.tokens_per_second, tr("tok"), p.eta_seconds);
  updateStepText();
}

void RunPage::onValidation(const stx::engine::ValidationDone& v) {
  lastValidation_ = v.bits_per_byte;
  chart_->addValidation(v.step, v.bits_per_byte);
  updateStepText();
}

void RunPage::updateStepText() {
  const QLocale locale;
  QString text = tr("Step %1 of %2 · loss %3 bits/byte")
                     .arg(locale.toString(stepsDone_), locale.toString(stepsPlanned_),
                          locale.toString(lastLoss_, 'f', 3));
  if (lastValidation_)
    text += tr(" · validation %1 bits/byte").arg(locale.toString(*lastValidation_, 'f', 3));
  stepText_->setText(text);
}

void RunPage::onCheckpoint(const stx::engine::CheckpointSaved& saved) {
  lastCheckpoint_ = QString::fromStdString(saved.folder.string());
  if (state_ == State::running) {
    status_->setText(tr("Checkpoint at step %1 saved in %2").arg(saved.step).arg(native(lastCheckpoint_)));
  }
  // One preview at a time: a slow sample is skipped rather than queued behind the next checkpoint.
  if (previewHost_->busy() || state_ == State::cancelling) return;
  previewStep_ = saved.step;
  previewHost_->openModel(lastCheckpoint_);
}

void RunPage::onPreviewOpened(const stx::engine::ModelSummary& summary) {
  previewModel_ = summary;
  stx::engine::SampleRequest request;
  request.count = 1;
  request.settings = summary.sampling;    // drawn as the model samples best (its config.json "sampling")
  request.event_interval_seconds = 0.25;  // only the finished sample is shown
  // Previews run where the studio's generations do (Preferences > Device), whatever device trains.
  if (auto* wizard = qobject_cast<TrainWizard*>(this->wizard()); wizard && wizard->context()) {
    request.device = device_choice(wizard->context()->device());
  }
  if (summary.kind == "image") {
    request.length = summary.context;
  } else if (summary.kind == "audio") {
    request.length = std::min<int64_t>(summary.context, kAudioSampleBytes);
  } else {
    request.length = std::min<int64_t>(summary.context, kTextSampleBytes);
  }
  previewHost_->generate(request);
}

void RunPage::onSample(const stx::engine::SampleResult& result) {
  if (result.samples.empty() || result.cancelled) return;
  const Bytes& bytes = result.samples.front();
  if (previewModel_.kind == "image") {
    sample_->showImage(bytes, static_cast<int>(previewModel_.image_height),
                       static_cast<int>(previewModel_.image_width),
                       static_cast<int>(previewModel_.image_channels));
  } else if (previewModel_.kind == "audio") {
    sample_->showAudio(bytes);
  } else {
    sample_->showText(bytes);
  }
  ++samplesShown_;
  sampleCaption_->setText(tr("Step %1 · seed %2 · %3 bytes/s")
                              .arg(previewStep_)
                              .arg(result.seed)
                              .arg(QLocale().toString(result.tokens_per_second, 'f', 0)));
}

void RunPage::onEnded(const stx::engine::JobEnded& end) {
  if (state_ == State::idle || state_ == State::finished || state_ == State::failed ||
      state_ == State::paused || state_ == State::cancelled) {
    return;  // already reported (a failed job reports through both failed() and busyChanged)
  }
  chart_->flush();
  endMessage_ = QString::fromStdString(end.message);
  if (!end.checkpoint.empty()) lastCheckpoint_ = QString::fromStdString(end.checkpoint.string());
  const QString where = native(lastCheckpoint_.isEmpty() ? runFolder_ : lastCheckpoint_);
  using Outcome = stx::engine::JobEnded::Outcome;
  if (end.outcome == Outcome::completed) {
    setState(State::finished);
    progress_->finish(tr("Finished"));
    status_->setText(
        tr("Finished %1 steps. The model is in %2. Press Next.").arg(stepsDone_).arg(native(runFolder_)));
  } else if (end.outcome == Outcome::cancelled) {
    const bool pausing = state_ == State::pausing;
    setState(pausing ? State::paused : State::cancelled);
    progress_->finish(pausing ? tr("Paused") : tr("Stopped"));
    if (!hasCheckpoint()) {
      status_->setText(tr("Stopped before the first checkpoint; nothing was saved."));
    } else if (pausing) {
      status_->setText(tr("Paused at step %1. The checkpoint is in %2. Press Resume to go on.")
                           .arg(stepsDone_)
                           .arg(where));
    } else {
      status_->setText(
          tr("Stopped at step %1. The last checkpoint is kept in %2; the wizard offers to resume this "
             "run next time, or press Next to keep the model as it is.")
              .arg(stepsDone_)
              .arg(where));
    }
  } else {
    setState(State::failed);
    progress_->finish(tr("Failed"));
    status_->setText(tr("Training stopped: %1").arg(endMessage_) +
                     (hasCheckpoint() ? tr("\nThe last checkpoint is kept in %1.").arg(where) : QString()));
    if (auto* wizard = qobject_cast<TrainWizard*>(this->wizard())) {
      if (wizard->context()) wizard->context()->showError(tr("%1: %2").arg(native(runFolder_), endMessage_));
      // Nothing was saved, so going back to change the settings leaves nothing behind.
      if (!hasCheckpoint()) wizard->page(TrainWizard::SettingsPageId)->setCommitPage(false);
    }
  }
  emit completeChanged();
}

void RunPage::setState(State state) {
  state_ = state;
  const bool stopped = state == State::paused || state == State::cancelled || state == State::failed;
  pause_->setText(stopped ? tr("&Resume") : tr("&Pause"));
  pause_->setEnabled(state == State::running || (stopped && (hasCheckpoint() || state != State::failed)));
  cancel_->setEnabled(state == State::running || state == State::pausing || state == State::paused);
  emit stateChanged(state);
}

}  // namespace stx::studio
