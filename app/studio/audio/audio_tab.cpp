#include "audio/audio_tab.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QScrollArea>
#include <QStandardPaths>
#include <QStyle>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "core/device_choice.h"
#include "audio/playback_bar.h"
#include "audio/prompt_clip_box.h"
#include "audio/wav_export.h"
#include "audio/waveform_view.h"
#include "core/attention_inspector.h"
#include "core/counted_text.h"
#include "core/engine_host.h"
#include "core/job_progress.h"
#include "core/model_picker.h"
#include "core/model_text.h"
#include "core/sampling_controls.h"
#include "core/studio_context.h"
#include "stx/engine/data/audio_io.h"
#include "stx/engine/export/export.h"

namespace stx::studio {

namespace {

constexpr int kRate = stx::engine::kSampleRate;
constexpr int kMaxSamples = 8;
constexpr size_t kLiveProbesKept = 64;  // for tests and the last marks; a long run sends thousands

QString seconds_text(qint64 bytes) { return QLocale().toString(static_cast<double>(bytes) / kRate, 'f', 3); }

qint64 bytes_for(double seconds) { return static_cast<qint64>(std::llround(seconds * kRate)); }

}  // namespace

AudioTab::AudioTab(StudioContext* context, QWidget* parent)
    : GenerationTab(QStringLiteral("audio"), context, parent) {
  inspector_ = new AttentionInspector(host(), this);
  waveform_ = new WaveformView;
  playback_ = new PlaybackBar(waveform_);
  progress_ = new JobProgress;

  auto* scroll = new QScrollArea;
  scroll->setWidget(buildControls());
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  // Room for the vertical scroll bar that short windows get, so that it never covers the controls. The
  // panel's size is only right once the style has polished it.
  scroll->widget()->ensurePolished();
  scroll->setMinimumWidth(scroll->widget()->sizeHint().width() +
                          style()->pixelMetric(QStyle::PM_ScrollBarExtent) + 8);
  scroll->setSizePolicy(QSizePolicy::Minimum, QSizePolicy::Expanding);  // the waveform takes the rest

  auto* right = new QVBoxLayout;
  right->addWidget(waveform_, 1);
  right->addWidget(playback_);
  right->addWidget(buildExportRow());
  right->addWidget(progress_);
  auto* layout = new QHBoxLayout(this);
  layout->addWidget(scroll);
  layout->addLayout(right, 1);

  connectWorker();
  connect(progress_, &JobProgress::stopRequested, host(), &EngineHost::stop);
  connect(waveform_, &WaveformView::positionClicked, this, &AudioTab::inspectAt);
  connect(playback_, &PlaybackBar::failed, this,
          [this](const QString& message) { this->context()->showError(tr("Playback: %1").arg(message)); });
  connect(prompt_, &PromptClipBox::promptChanged, this, &AudioTab::promptChanged);
  connect(prompt_, &PromptClipBox::warned, this, [this](const QString& message) {
    this->context()->log(StudioContext::Level::warning, message);
  });
  connect(prompt_, &PromptClipBox::failed, this, [this](const QString& message) {
    this->context()->showError(message);
    updateControls();
  });
  connect(prompt_, &PromptClipBox::clipOpened, this, [this](const QString& path) {
    this->context()->addRecentFile(path);
    this->context()->log(StudioContext::Level::info, tr("opened clip %1").arg(path));
    updateControls();
  });

  promptChanged();
  openFirstModelLater();
}

AudioTab::~AudioTab() { playback_->stop(); }

QWidget* AudioTab::buildControls() {
  auto* modelBox = new QGroupBox(tr("Model"));
  (new QVBoxLayout(modelBox))->addWidget(modelPicker());

  prompt_ = new PromptClipBox;

  duration_ = new QDoubleSpinBox;
  duration_->setDecimals(3);
  duration_->setRange(0.001, 3600.0);
  duration_->setSingleStep(0.5);
  duration_->setValue(2.0);
  duration_->setSuffix(tr(" s"));
  duration_->setToolTip(tr("Seconds to generate after the prompt (12,000 samples a second)"));
  lengthNote_ = new QLabel;
  lengthNote_->setWordWrap(true);
  auto* lengthBox = new QGroupBox(tr("Length"));
  auto* lengthForm = new QFormLayout(lengthBox);
  lengthForm->addRow(tr("Generate"), duration_);
  lengthForm->addRow(lengthNote_);

  sampling_ = new SamplingControls(kMaxSamples);
  auto* samplingBox = new QGroupBox(tr("Sampling"));
  (new QVBoxLayout(samplingBox))->addWidget(sampling_);

  attentionHead_ = new LayerHeadPicker(0, this);
  liveAttention_ = new QCheckBox(tr("Show live while generating"));
  liveAttention_->setChecked(true);
  liveAttention_->setToolTip(tr("Marks on the selected sample show which earlier positions this head read"));
  attentionNote_ =
      new QLabel(tr("After generating, click a point of a sample to see what this head attended "
                    "to there."));
  attentionNote_->setWordWrap(true);
  auto* attentionBox = new QGroupBox(tr("Attention"));
  auto* attentionForm = new QFormLayout(attentionBox);
  attentionForm->addRow(liveAttention_);
  attentionForm->addRow(tr("Layer"), attentionHead_->layerBox());
  attentionForm->addRow(tr("Head"), attentionHead_->headBox());
  attentionForm->addRow(attentionNote_);

  generate_ = new QPushButton(tr("Generate"));
  generate_->setDefault(true);
  generate_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
  generate_->setMinimumHeight(32);

  auto* panel = new QWidget;
  auto* column = new QVBoxLayout(panel);
  column->setContentsMargins(0, 0, 4, 0);
  const QList<QWidget*> parts = {modelBox, prompt_, lengthBox, samplingBox, attentionBox, generate_};
  for (QWidget* part : parts) column->addWidget(part);
  column->addStretch();

  connect(duration_, &QDoubleSpinBox::valueChanged, this, [this] {
    updateLengthNote();
    updateControls();
  });
  connect(generate_, &QPushButton::clicked, this, &AudioTab::generate);
  auto reinspect = [this] {
    // A new head for the point already inspected: show its marks.
    if (!generating_ && !results_.empty() && waveform_->attentionPosition() >= 0) {
      inspectAt(waveform_->attentionLane(), waveform_->attentionPosition());
    }
  };
  connect(attentionHead_, &LayerHeadPicker::changed, this, reinspect);
  return panel;
}

QWidget* AudioTab::buildExportRow() {
  outputRate_ = new QComboBox;
  for (int rate : stx::engine::kWavOutputRates) {
    outputRate_->addItem(tr("%1 Hz").arg(QLocale().toString(rate)), rate);
  }
  outputRate_->setCurrentIndex(outputRate_->findData(48000));
  outputRate_->setToolTip(tr("The WAV's sample rate: the model's own 12 kHz, or resampled for any player"));
  exportAll_ = new QCheckBox(tr("All samples"));
  exportAll_->setToolTip(
      tr("Export every sample as name-1.wav, name-2.wav, ... instead of the selected one"));
  export_ = new QPushButton(tr("Export WAV..."));
  export_->setToolTip(tr("Write the selected sample as a WAV file, with the model, seed and settings in it"));
  connect(export_, &QPushButton::clicked, this, &AudioTab::exportResults);

  // Under the playback row: min width stays small, and the left panel fits a laptop screen.
  auto* row = new QWidget;
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(new QLabel(tr("WAV rate")));
  layout->addWidget(outputRate_);
  layout->addWidget(exportAll_);
  layout->addWidget(export_);
  layout->addStretch();
  return row;
}

void AudioTab::connectWorker() {
  EngineWorker* worker = host()->worker();
  logEngineLines();
  connect(worker, &EngineWorker::jobFinished, this, [this](EngineJob job, bool ok) {
    if (job == EngineJob::generate) {
      generating_ = false;
      playback_->setGenerating(false);
      if (!ok) progress_->finish(tr("Generation failed"));
      prompt_->setLocked(false);
      promptChanged();
    }
    updateControls();
    emit actionsChanged();
  });
  connect(worker, &EngineWorker::sampleStarted, this, [this](const stx::engine::SampleStarted& started) {
    lastSeed_ = started.seed;
    promptBytes_ = started.prompt_bytes;
    sampling_->showSeedUsed(started.seed);
    context()->log(StudioContext::Level::info,
                   tr("generating %1 of %2 s, seed %3")
                       .arg(counted(static_cast<qint64>(started.count), tr("1 audio sample"), tr("%1 audio samples")))
                       .arg(seconds_text(started.length))
                       .arg(static_cast<qulonglong>(started.seed)));
  });
  connect(worker, &EngineWorker::sampleBytes, this, [this](const stx::engine::SampleBytes& bytes) {
    waveform_->appendBytes(static_cast<int>(bytes.sample), bytes.position, bytes.bytes);
    playback_->appendBytes(static_cast<int>(bytes.sample), bytes.bytes);
  });
  connect(worker, &EngineWorker::sampleProgress, this, [this](const stx::engine::SampleProgress& p) {
    progress_->update(p.position, p.length, p.tokens_per_second, tr("tok"), p.eta_seconds);
    // Each sample grows at its share of the rate: what playing one while it grows must keep behind. While
    // the prompt is read the rate is the prompt's, many positions a call, and says nothing of generating's.
    const bool readingPrompt = p.position <= promptBytes_;
    playback_->setGenerationRate(
        readingPrompt ? 0.0 : p.tokens_per_second / std::max(1, waveform_->laneCount()), p.length);
  });
  connect(worker, &EngineWorker::attentionProbe, this, [this](const stx::engine::AttentionProbe& probe) {
    if (liveProbes_.size() >= kLiveProbesKept) liveProbes_.erase(liveProbes_.begin());
    liveProbes_.push_back(probe);
    if (probe.sample == waveform_->selectedLane()) {
      waveform_->setAttention(static_cast<int>(probe.sample), probe.position, probe.positions, probe.weights);
    }
  });
  connect(worker, &EngineWorker::sampleFinished, this, [this](const stx::engine::SampleResult& result) {
    results_ = result.samples;
    lastSeed_ = result.seed;
    sampling_->showSeedUsed(result.seed);
    waveform_->setSamples(results_, static_cast<qint64>(runPrompt_.size()));
    const qint64 longest = results_.empty() ? 0 : static_cast<qint64>(results_.front().size());
    progress_->finish(result.cancelled
                          ? tr("Stopped: kept %1 s per sample").arg(seconds_text(longest))
                          : tr("Done: %1 of %2 s · %3 tok/s")
                                .arg(counted(static_cast<qint64>(results_.size()), tr("1 sample"), tr("%1 samples")))
                                .arg(seconds_text(longest))
                                .arg(QLocale().toString(result.tokens_per_second, 'f', 0)));
  });
  connect(inspector_, &AttentionInspector::ready, this, [this](const stx::engine::AttentionProbe& probe) {
    waveform_->setAttention(static_cast<int>(probe.sample), probe.position, probe.positions, probe.weights);
    attentionNote_->setText(tr("At %1 s (position %2), %3 read %4.")
                                .arg(seconds_text(probe.position))
                                .arg(probe.position)
                                .arg(LayerHeadPicker::describe(probe.layer, probe.head))
                                .arg(counted(static_cast<qint64>(probe.positions.size()),
                                             tr("1 earlier position"), tr("%1 earlier positions"))));
  });
}

// --- the model ---------------------------------------------------------------------------------------------

// The open model stays until the new one has opened (or failed), and the picker keeps its summary line.
void AudioTab::openingModel(const QString&) {}

void AudioTab::modelOpened(const stx::engine::ModelSummary& summary) {
  attentionHead_->setShape(static_cast<int>(summary.layers), static_cast<int>(summary.heads));
  context()->setStatus(this, statusModelName(), deviceDescription(), -1);
  prompt_->setContext(summary.context);
  updateLengthNote();
  updateControls();
}

void AudioTab::modelRefused(const stx::engine::ModelSummary& summary) {
  context()->showError(
      tr("%1: this is a %2 model; the Audio tab needs an audio model")
          .arg(QString::fromStdString(summary.folder.string()), QString::fromStdString(summary.kind)));
  updateLengthNote();
  updateControls();
}

void AudioTab::modelFailed(const QString& message) { context()->showError(message); }

void AudioTab::jobFailed(EngineJob, const QString& message) { context()->showError(message); }

QString AudioTab::statusModelName() const {
  return model() ? QString::fromStdString(model()->name) : tr("no audio model");
}

QString AudioTab::openFilter() const { return PromptClipBox::fileFilter(); }

bool AudioTab::acceptsFile(const QString& path) const { return PromptClipBox::acceptsFile(path); }

void AudioTab::openFile(const QString& path) {
  prompt_->openFile(path);
  updateControls();
}

bool AudioTab::clipLoading() const { return prompt_->loading(); }
AudioPlayer* AudioTab::player() const { return playback_->player(); }
QPushButton* AudioTab::playButton() const { return playback_->playButton(); }
QPushButton* AudioTab::stopPlaybackButton() const { return playback_->stopButton(); }
QLabel* AudioTab::playbackNote() const { return playback_->note(); }
const Bytes& AudioTab::promptBytes() const { return prompt_->prompt(); }
QString AudioTab::clipName() const { return prompt_->clipName(); }
QDoubleSpinBox* AudioTab::promptKeepBox() const { return prompt_->keepBox(); }

void AudioTab::promptChanged() {
  // Before a run, the waveform previews the prompt the run will start with.
  const Bytes& prompt = prompt_->prompt();
  if (!generating_ && results_.empty()) {
    waveform_->reset(prompt.empty() ? 0 : 1, prompt, static_cast<qint64>(prompt.size()));
    if (!prompt.empty()) {
      waveform_->setTitle(tr("Prompt: %1, first %2 s").arg(prompt_->clipName(), seconds_text(prompt.size())));
    }
  }
  updateLengthNote();
  updateControls();
}

qint64 AudioTab::generationLength() const {
  const qint64 wanted = static_cast<qint64>(prompt_->prompt().size()) + bytes_for(duration_->value());
  return model() ? std::min<qint64>(wanted, model()->context) : wanted;
}

void AudioTab::updateLengthNote() {
  const qint64 length = generationLength();
  const qint64 wanted = static_cast<qint64>(prompt_->prompt().size()) + bytes_for(duration_->value());
  QString text = tr("Each sample: %1 s (%2 samples)").arg(seconds_text(length), QLocale().toString(length));
  if (!prompt_->prompt().empty())
    text += QStringLiteral(", ") + tr("of which %1 s prompt").arg(seconds_text(prompt_->prompt().size()));
  if (length < wanted) {
    text += QStringLiteral("<br><span style='color:#b45309'>") +
            tr("Capped at the model's context of %1 samples.").arg(QLocale().toString(length)) +
            QStringLiteral("</span>");
  }
  lengthNote_->setText(text);
}

void AudioTab::updateControls() {
  const bool busy = host()->busy();
  const bool canGenerate = modelReady() && !busy && !clipLoading() &&
                           generationLength() > static_cast<qint64>(prompt_->prompt().size());
  generate_->setEnabled(canGenerate);
  generate_->setToolTip(!modelReady() ? tr("Open an audio model first")
                        : busy    ? tr("The model is busy; Stop ends the running job")
                                  : tr("Generate (Ctrl+Return)"));
  playback_->refresh();
  export_->setEnabled(canExport());
  exportAll_->setEnabled(results_.size() > 1);
}

void AudioTab::generate() {
  if (!modelReady()) {
    context()->showError(tr("No audio model is open: pick one in the Model box or open a model folder"));
    return;
  }
  if (host()->busy() || clipLoading()) return;
  stx::engine::SampleRequest request;
  request.prompt = prompt_->prompt();
  request.length = generationLength();
  if (request.length <= static_cast<int64_t>(prompt_->prompt().size())) {
    context()->showError(tr("The prompt fills the model's context: keep less of the clip"));
    return;
  }
  request.count = sampling_->sampleCount();
  request.settings = sampling_->settings();
  request.seed = sampling_->seed();
  if (liveAttention_->isChecked()) {
    request.probe_layer = attentionHead_->layer();
    request.probe_head = std::max(attentionHead_->head(), 0);  // live: one head; "all heads" shows the first
  }
  request.event_interval_seconds = EngineHost::previewIntervalSeconds();
  request.device = device_choice(context()->device());

  runPrompt_ = prompt_->prompt();
  runPromptText_ = prompt_->promptText();
  runSettings_ = request.settings;
  runModel_ = *model();
  results_.clear();
  liveProbes_.clear();
  lastSeed_.reset();
  inspector_->cancel();
  generating_ = true;
  playback_->setGenerating(true);
  waveform_->reset(static_cast<int>(request.count), runPrompt_, request.length);
  progress_->start(counted(request.count, tr("Generating 1 sample..."), tr("Generating %1 samples...")));
  attentionNote_->setText(
      tr("After generating, click a point of a sample to see what this head attended to "
         "there."));
  host()->generate(request);
  prompt_->setLocked(true);
  updateControls();
  emit actionsChanged();
}

void AudioTab::inspectAt(int lane, qint64 position) {
  if (generating_ || lane < 0 || lane >= static_cast<int>(results_.size())) return;
  if (position < 0 || position >= static_cast<qint64>(results_[static_cast<size_t>(lane)].size())) return;
  attentionNote_->setText(tr("Inspecting position %1...").arg(position));
  // One inspection at a time; the latest click waits and replaces any older waiting one.
  inspector_->request(lane, results_[static_cast<size_t>(lane)], attentionHead_->layer(),
                      attentionHead_->head(), model() ? static_cast<int>(model()->heads) : 1, position);
}

bool AudioTab::canExport() const {
  return !generating_ && lastSeed_.has_value() &&
         std::any_of(results_.begin(), results_.end(), [](const Bytes& b) { return !b.empty(); });
}

void AudioTab::exportResults() {
  if (!canExport()) return;
  const bool all = exportAll_->isChecked() && results_.size() > 1;
  const int rate = outputRate_->currentData().toInt();
  QString folder = lastFolder_;
  if (folder.isEmpty() || !QFileInfo(folder).isDir()) {
    folder = QStandardPaths::writableLocation(QStandardPaths::MusicLocation);
  }
  const QString name = QStringLiteral("%1-seed%2.wav")
                           .arg(QString::fromStdString(runModel_.name))
                           .arg(static_cast<qulonglong>(*lastSeed_));
  const QString title = all ? counted(static_cast<qint64>(results_.size()), tr("Export the sample as WAV"),
                                      tr("Export %1 samples as WAV"))
                            : tr("Export sample %1 as WAV").arg(waveform_->selectedLane() + 1);
  const QString path = WavExport::askTarget(this, title, QDir(folder).filePath(name),
                                            all ? static_cast<int>(results_.size()) : 1);
  if (path.isEmpty()) return;
  exportTo(path, rate, all);
}

QStringList AudioTab::exportTo(const QString& path, int rate, bool allSamples) {
  QStringList written;
  if (!canExport()) return written;
  // The studio's requests keep the default KV cache type; WavExport::write numbers each sample.
  stx::engine::ExportInfo info = stx::engine::sample_export_info(
      runModel_.name, runModel_.weights_hash, runSettings_, stx::engine::SampleRequest{}.half_precision_cache,
      *lastSeed_, 0, static_cast<int>(results_.size()));
  info.prompt = runPromptText_.toStdString();
  std::vector<int> which;
  if (allSamples) {
    for (int i = 0; i < static_cast<int>(results_.size()); ++i) which.push_back(i);
  } else {
    which.push_back(std::clamp(waveform_->selectedLane(), 0, static_cast<int>(results_.size()) - 1));
  }
  QString error;
  written = WavExport::write(path, results_, which, rate, info, &error);
  for (const QString& file : written) context()->addRecentFile(file);
  if (!error.isEmpty()) context()->showError(error);
  if (!written.isEmpty()) {
    lastFolder_ = QFileInfo(path).absolutePath();
    context()->log(StudioContext::Level::info, tr("exported %1").arg(written.join(QStringLiteral(", "))));
  }
  return written;
}

void AudioTab::restoreSettings(QSettings& settings) {
  sampling_->restore(settings);
  duration_->setValue(settings.value(QStringLiteral("durationSeconds"), duration_->value()).toDouble());
  prompt_->setKeepSeconds(settings.value(QStringLiteral("promptSeconds"), prompt_->keepSeconds()).toDouble());
  const int rateIndex = outputRate_->findData(settings.value(QStringLiteral("outputRate"), 48000).toInt());
  if (rateIndex >= 0) outputRate_->setCurrentIndex(rateIndex);
  exportAll_->setChecked(settings.value(QStringLiteral("exportAll"), false).toBool());
  lastFolder_ = settings.value(QStringLiteral("lastFolder"), lastFolder_).toString();
  prompt_->setFolder(lastFolder_);
  liveAttention_->setChecked(settings.value(QStringLiteral("liveAttention"), true).toBool());
  attentionHead_->restore(settings, QStringLiteral("probeLayer"), QStringLiteral("probeHead"));
  const QString model = settings.value(QStringLiteral("model")).toString();
  if (!model.isEmpty() && QFileInfo(model).isDir()) modelPicker()->choose(model);
}

void AudioTab::saveSettings(QSettings& settings) const {
  sampling_->save(settings);
  settings.setValue(QStringLiteral("durationSeconds"), duration_->value());
  settings.setValue(QStringLiteral("promptSeconds"), prompt_->keepSeconds());
  settings.setValue(QStringLiteral("outputRate"), outputRate_->currentData().toInt());
  settings.setValue(QStringLiteral("exportAll"), exportAll_->isChecked());
  settings.setValue(QStringLiteral("lastFolder"), lastFolder_);
  settings.setValue(QStringLiteral("liveAttention"), liveAttention_->isChecked());
  attentionHead_->save(settings, QStringLiteral("probeLayer"), QStringLiteral("probeHead"));
  settings.setValue(QStringLiteral("model"), modelPicker()->currentPath());
}

void AudioTab::stop() {
  GenerationTab::stop();
  playback_->stop();
}

}  // namespace stx::studio
