#include "image/image_tab.h"

#include <QCheckBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <exception>

#include "core/device_choice.h"
#include "core/attention_inspector.h"
#include "core/counted_text.h"
#include "core/engine_host.h"
#include "core/job_progress.h"
#include "core/model_picker.h"
#include "core/model_text.h"
#include "core/sampling_controls.h"
#include "core/studio_context.h"
#include "image/image_controls.h"
#include "image/image_loader.h"

namespace stx::studio {

namespace {

const QStringList kImageSuffixes = {"png", "jpg", "jpeg", "bmp", "gif", "pgm", "ppm", "tga"};
constexpr int kMaxSamples = 16;

}  // namespace

ImageTab::ImageTab(StudioContext* context, QWidget* parent)
    : GenerationTab(QStringLiteral("image"), context, parent),
      inspector_(new AttentionInspector(host(), this)),
      loader_(new ImageLoader(this)) {
  controls_ = new ImageControls(modelPicker(), kMaxSamples);
  sampling_ = controls_->sampling();
  promptText_ = controls_->promptText();
  keepRows_ = controls_->keepRowsBox();
  generate_ = controls_->generateButton();
  regenerate_ = controls_->regenerateButton();
  liveAttention_ = controls_->liveAttentionBox();
  exportSelected_ = controls_->exportSelectedButton();
  exportAll_ = controls_->exportAllButton();
  canvas_ = new ImageCanvas;
  progress_ = new JobProgress;
  auto* controls = new QScrollArea;  // the panel scrolls on short screens rather than squeezing
  controls->setWidget(controls_);
  controls->setWidgetResizable(true);
  controls->setFrameShape(QFrame::NoFrame);
  controls->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  // Narrow enough to leave the canvas most of the window; the panel's labels wrap.
  controls->setMinimumWidth(300);
  controls->setMaximumWidth(350);

  auto* top = new QHBoxLayout;
  top->addWidget(controls);
  top->addWidget(canvas_, 1);
  auto* column = new QVBoxLayout(this);
  column->addLayout(top, 1);
  column->addWidget(progress_);

  connectEngine();
  connect(controls_->openImageButton(), &QPushButton::clicked, this, &ImageTab::openImageWithDialog);
  connect(controls_->clearImageButton(), &QPushButton::clicked, this, &ImageTab::clearPromptImage);
  connect(keepRows_, &QSpinBox::valueChanged, this, [this](int rows) {
    canvas_->setCutRow(rows);
    updatePromptText();
    updateControls();
  });
  connect(generate_, &QPushButton::clicked, this, &ImageTab::generate);
  connect(regenerate_, &QPushButton::clicked, this, &ImageTab::regenerateSelected);
  connect(controls_, &ImageControls::attentionChoiceChanged, this, [this] {
    if (pinned_.sample >= 0) inspectAt(pinned_.sample, pinned_.position);
  });
  connect(exportSelected_, &QPushButton::clicked, this, &ImageTab::exportSelectedWithDialog);
  connect(exportAll_, &QPushButton::clicked, this, &ImageTab::exportAllWithDialog);
  connect(progress_, &JobProgress::stopRequested, this, &ImageTab::stop);
  connect(canvas_, &ImageCanvas::cutRowChanged, keepRows_, &QSpinBox::setValue);
  connect(canvas_, &ImageCanvas::sampleSelected, this, [this] { updateControls(); });
  connect(canvas_, &ImageCanvas::pixelHovered, this, &ImageTab::pixelHovered);
  connect(canvas_, &ImageCanvas::pixelClicked, this, &ImageTab::pixelClicked);
  connect(loader_, &ImageLoader::loaded, this, &ImageTab::imageLoaded);
  connect(loader_, &ImageLoader::failed, this, &ImageTab::imageFailed);
  connect(inspector_, &AttentionInspector::ready, this, &ImageTab::inspected);

  updatePromptText();
  updateControls();
  openFirstModelLater();
}

void ImageTab::connectEngine() {
  EngineWorker* worker = host()->worker();
  connect(worker, &EngineWorker::jobFinished, this, &ImageTab::jobEnded);
  connect(worker, &EngineWorker::sampleStarted, this, &ImageTab::sampleStarted);
  connect(worker, &EngineWorker::sampleBytes, this, &ImageTab::sampleBytes);
  connect(worker, &EngineWorker::sampleProgress, this, &ImageTab::sampleProgress);
  connect(worker, &EngineWorker::attentionProbe, this, &ImageTab::attentionProbe);
  connect(worker, &EngineWorker::sampleFinished, this, &ImageTab::sampleFinished);
  logEngineLines();
}

// --- the model ---------------------------------------------------------------------------------------------

bool ImageTab::acceptsModel(const stx::engine::ModelSummary& summary) const {
  return GenerationTab::acceptsModel(summary) && summary.image_height > 0 && summary.image_width > 0 &&
         summary.image_channels > 0;
}

void ImageTab::openingModel(const QString& path) {
  forgetModel(path);
  inspector_->cancel();
  updateControls();
}

void ImageTab::modelOpened(const stx::engine::ModelSummary& summary) {
  pinned_ = Pinned{};
  results_.clear();
  origins_.clear();
  const int height = static_cast<int>(summary.image_height);
  canvas_->setShape(height, static_cast<int>(summary.image_width), static_cast<int>(summary.image_channels));
  promptImage_.clear();
  keepRows_->setRange(0, std::max(0, height - 1));
  canvas_->setCutRow(keepRows_->value());
  controls_->setLayersAndHeads(static_cast<int>(summary.layers), static_cast<int>(summary.heads));
  // The prompt image is decoded again at this model's size.
  const QString image = !requestedPath_.isEmpty() ? requestedPath_ : promptPath_;
  if (!image.isEmpty()) {
    requestedPath_ = image;
    loader_->load(image,
                  {height, static_cast<int>(summary.image_width), static_cast<int>(summary.image_channels)});
  }
  updatePromptText();
  showStatus();
  updateControls();
}

void ImageTab::modelRefused(const stx::engine::ModelSummary& summary) {
  const QString folder = QString::fromStdString(summary.folder.string());
  context()->showError(tr("%1: this is a %2 model; the Image tab needs an image model")
                           .arg(folder, QString::fromStdString(summary.kind)));
  modelPicker()->showSummary(tr("Not an image model: choose another."));
  updateControls();
}

void ImageTab::modelFailed(const QString& message) {
  modelPicker()->showSummary(tr("Could not open this model."));
  context()->showError(message);
  updateControls();
}

void ImageTab::jobFailed(EngineJob job, const QString& message) {
  if (job == EngineJob::generate || job == EngineJob::regenerate) {
    progress_->finish(tr("Failed"));
    context()->showError(message);
  } else {
    // A failed inspection (a pixel outside a stopped sample) is not worth a banner.
    context()->log(StudioContext::Level::warning, message);
  }
  updateControls();
}

void ImageTab::jobEnded(EngineJob job, bool ok) {
  if ((job != EngineJob::generate && job != EngineJob::regenerate) || job_ == Job::none) return;
  if (!ok && regenerateTarget_ >= 0) canvas_->setNote(regenerateTarget_, tr("failed"));
  job_ = Job::none;
  regenerateTarget_ = -1;
  updateControls();
}

// --- generation --------------------------------------------------------------------------------------------

stx::engine::SampleRequest ImageTab::baseRequest() const {
  stx::engine::SampleRequest request;
  request.length = std::min<int64_t>(canvas_->imageBytes(), model()->context);
  request.settings = sampling_->settings();
  request.seed = sampling_->seed();
  if (liveAttention_->isChecked() && controls_->layer() >= 0) {
    request.probe_layer = controls_->layer();
    request.probe_head = std::max(0, controls_->head());  // live: one head; "all heads" shows the first
  }
  request.event_interval_seconds = EngineHost::previewIntervalSeconds();
  request.device = device_choice(context()->device());
  return request;
}

void ImageTab::generate() {
  if (busy()) return;
  if (!modelReady()) {
    context()->showError(opening()
                             ? tr("The model is still opening; press Generate again in a moment.")
                             : tr("No image model is open: choose one under Model, or open a model folder."));
    return;
  }
  stx::engine::SampleRequest request = baseRequest();
  request.count = sampling_->sampleCount();
  const int rows = promptImage_.empty() ? 0 : keepRows_->value();
  const qint64 rowBytes = static_cast<qint64>(canvas_->imageWidth()) * canvas_->imageChannels();
  request.prompt.assign(promptImage_.begin(), promptImage_.begin() + rows * rowBytes);

  inspector_->cancel();
  pinned_ = Pinned{};
  results_.clear();
  origins_.clear();
  canvas_->resetSamples(static_cast<int>(request.count));
  for (int k = 0; k < request.count; ++k) {
    canvas_->writeBytes(k, 0, request.prompt.data(), static_cast<qint64>(request.prompt.size()));
  }
  jobOrigin_ =
      SampleOrigin{0, request.settings, describe_prompt_rows(rows, QFileInfo(promptPath_).fileName()), rows};
  job_ = Job::generate;
  progress_->start(counted(request.count, tr("Generating 1 sample..."), tr("Generating %1 samples...")));
  resultsModel_ = *model();
  host()->generate(request);
  updateControls();
}

void ImageTab::regenerateSelected() {
  if (busy()) return;
  if (!modelReady()) {
    context()->showError(tr("No image model is open: choose one under Model, or open a model folder."));
    return;
  }
  const int sample = canvas_->selectedSample();
  if (sample < 0 || sample >= static_cast<int>(results_.size()) || results_[sample].empty()) {
    context()->showError(tr("Generate samples first, then click the one to regenerate."));
    return;
  }
  const int rows = keepRows_->value();
  const qint64 keep = static_cast<qint64>(rows) * canvas_->imageWidth() * canvas_->imageChannels();
  if (keep > static_cast<qint64>(results_[sample].size())) {
    context()->showError(
        tr("Sample #%1 was stopped above row %2: move the line up.").arg(sample + 1).arg(rows));
    return;
  }
  stx::engine::SampleRequest request = baseRequest();
  request.count = 1;
  const SampleOrigin& before = origins_[sample];
  jobOrigin_ = SampleOrigin{
      0, request.settings,
      describe_prompt_rows(
          rows,
          QStringLiteral("sample %1 (seed %2, %3)").arg(sample + 1).arg(before.seed).arg(before.prompt)),
      rows};
  inspector_->cancel();
  pinned_ = Pinned{};
  canvas_->clearAttention();
  canvas_->forgetFrom(sample, keep);
  canvas_->setNote(sample, tr("regenerating"));
  regenerateTarget_ = sample;
  job_ = Job::regenerate;
  progress_->start(tr("Regenerating #%1 from row %2...").arg(sample + 1).arg(rows));
  host()->regenerate(results_[sample], keep, request);
  updateControls();
}

int ImageTab::cellOf(int64_t engineSample) const {
  // A regeneration decodes one sample (index 0): it belongs in the cell it came from.
  return job_ == Job::regenerate ? regenerateTarget_ : static_cast<int>(engineSample);
}

void ImageTab::sampleStarted(const stx::engine::SampleStarted& started) {
  if (job_ == Job::none) return;
  jobOrigin_.seed = started.seed;
  sampling_->showSeedUsed(started.seed);
}

void ImageTab::sampleBytes(const stx::engine::SampleBytes& bytes) {
  if (job_ == Job::none) return;
  canvas_->writeBytes(cellOf(bytes.sample), bytes.position,
                      reinterpret_cast<const uint8_t*>(bytes.bytes.data()),
                      static_cast<qint64>(bytes.bytes.size()));
}

void ImageTab::sampleProgress(const stx::engine::SampleProgress& progress) {
  if (job_ == Job::none) return;
  progress_->update(progress.position, progress.length, progress.tokens_per_second, tr("tok"),
                    progress.eta_seconds);
}

void ImageTab::attentionProbe(const stx::engine::AttentionProbe& probe) {
  if (job_ == Job::none) return;
  canvas_->setAttention(cellOf(probe.sample),
                        AttentionOverlay{probe.position, probe.positions, probe.weights});
}

void ImageTab::sampleFinished(const stx::engine::SampleResult& result) {
  if (job_ == Job::none) return;
  lastResult_ = result;
  SampleOrigin origin = jobOrigin_;
  origin.seed = result.seed;
  const qint64 full = canvas_->imageBytes();
  auto noteFor = [&](const Bytes& bytes) {
    return static_cast<qint64>(bytes.size()) < full ? tr("stopped") : QString();
  };
  if (job_ == Job::generate) {
    results_ = result.samples;
    origins_.assign(results_.size(), origin);
    for (size_t k = 0; k < origins_.size(); ++k) {
      origins_[k].sample = static_cast<int>(k + 1);
      origins_[k].samples = static_cast<int>(origins_.size());
    }
    for (size_t k = 0; k < results_.size(); ++k) canvas_->setNote(static_cast<int>(k), noteFor(results_[k]));
    if (canvas_->selectedSample() < 0) canvas_->setSelectedSample(0);
  } else if (!result.samples.empty() && regenerateTarget_ >= 0) {
    results_[regenerateTarget_] = result.samples.front();
    origins_[regenerateTarget_] = origin;
    canvas_->setNote(regenerateTarget_, noteFor(result.samples.front()));
  }
  // The live overlay has done its job; from now on pointing at a pixel shows its attention.
  canvas_->clearAttention();
  const QString rate = QLocale().toString(result.tokens_per_second, 'f', 0);
  progress_->finish(result.cancelled ? tr("Stopped · seed %1 · what was drawn is kept").arg(result.seed)
                                     : tr("Done · seed %1 · %2 tok/s in %3")
                                           .arg(result.seed)
                                           .arg(rate, format_duration(result.seconds)));
  emit actionsChanged();
}

// --- attention after generation ----------------------------------------------------------------------------

void ImageTab::inspectAt(int sample, qint64 position) {
  if (busy() || !modelReady() || sample < 0 || sample >= static_cast<int>(results_.size())) return;
  const Bytes& bytes = results_[sample];
  if (position < 0 || position >= static_cast<qint64>(bytes.size()) || controls_->layer() < 0) return;
  inspector_->request(sample, bytes, controls_->layer(), controls_->head(), static_cast<int>(model()->heads),
                      position);
}

void ImageTab::pixelHovered(int sample, qint64 pixel) {
  if (busy()) return;
  if (sample < 0) {
    inspector_->cancel();
    canvas_->clearAttention();
    if (pinned_.sample >= 0) canvas_->setAttention(pinned_.sample, pinned_.overlay);
    return;
  }
  inspectAt(sample, pixel * canvas_->imageChannels());
}

void ImageTab::pixelClicked(int sample, qint64 pixel) {
  pinned_ = Pinned{sample, pixel * canvas_->imageChannels(), {}};
  inspectAt(sample, pinned_.position);
}

void ImageTab::inspected(const stx::engine::AttentionProbe& probe) {
  if (busy()) return;  // a generation started since: the samples are being replaced
  const AttentionOverlay overlay{probe.position, probe.positions, probe.weights};
  if (probe.sample == pinned_.sample && probe.position == pinned_.position) pinned_.overlay = overlay;
  canvas_->clearAttention();
  canvas_->setAttention(static_cast<int>(probe.sample), overlay);
}

// --- the prompt image --------------------------------------------------------------------------------------

QString ImageTab::openFilter() const {
  return tr("Images (*.png *.jpg *.jpeg *.bmp *.gif *.pgm *.ppm *.tga)");
}

bool ImageTab::acceptsFile(const QString& path) const {
  return kImageSuffixes.contains(QFileInfo(path).suffix().toLower());
}

void ImageTab::openImageWithDialog() {
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Open an image to complete"), imageFolder_, openFilter());
  if (!path.isEmpty()) openFile(path);
}

void ImageTab::openFile(const QString& path) {
  requestedPath_ = path;
  imageFolder_ = QFileInfo(path).absolutePath();
  if (modelReady()) {
    loader_->load(path, {canvas_->imageHeight(), canvas_->imageWidth(), canvas_->imageChannels()});
  }
  updatePromptText();  // without a model it loads as soon as one is open
}

void ImageTab::imageLoaded(const QString& path, const Bytes& bytes) {
  if (path != requestedPath_ || static_cast<qint64>(bytes.size()) != canvas_->imageBytes()) return;
  const bool first = promptImage_.empty();
  requestedPath_.clear();
  promptPath_ = path;
  promptImage_ = bytes;
  canvas_->setPrompt(promptImage_, QFileInfo(path).fileName());
  // A fresh image starts half kept: a completion, which is why the user opened it.
  if (first && keepRows_->value() == 0) keepRows_->setValue(canvas_->imageHeight() / 2);
  context()->addRecentFile(path);
  updatePromptText();
  updateControls();
}

void ImageTab::imageFailed(const QString& path, const QString& message) {
  if (path != requestedPath_) return;
  requestedPath_.clear();
  const QString name = QFileInfo(path).fileName();
  context()->showError(message.contains(name) ? message : QStringLiteral("%1: %2").arg(path, message));
  updatePromptText();
}

void ImageTab::clearPromptImage() {
  promptPath_.clear();
  requestedPath_.clear();
  promptImage_.clear();
  canvas_->setPrompt({}, {});
  updatePromptText();
  updateControls();
}

void ImageTab::updatePromptText() {
  const int rows = keepRows_->value();
  QString text;
  if (!requestedPath_.isEmpty() && !modelReady()) {
    text = tr("%1 is used once an image model is open.").arg(QFileInfo(requestedPath_).fileName());
  } else if (!requestedPath_.isEmpty()) {
    text = tr("Loading %1...").arg(QFileInfo(requestedPath_).fileName());
  } else if (promptImage_.empty()) {
    text = tr("None: samples start from nothing. Open or drop an image to complete it.");
  } else if (rows == 0) {
    text = tr("%1: no rows kept, so samples start from nothing.").arg(QFileInfo(promptPath_).fileName());
  } else {
    const QString name = QFileInfo(promptPath_).fileName();
    text = rows == 1 ? tr("%1: the top row is kept; the model draws the rest.").arg(name)
                     : tr("%1: the top %2 rows are kept; the model draws the rest.").arg(name).arg(rows);
  }
  promptText_->setText(text);
}

// --- export, settings, status ------------------------------------------------------------------------------

bool ImageTab::canExport() const {
  return !busy() && std::any_of(results_.begin(), results_.end(), [](const Bytes& b) { return !b.empty(); });
}

void ImageTab::exportResults() { exportAllWithDialog(); }

bool ImageTab::exportSample(int index, const QString& path, stx::engine::Overwrite overwrite) {
  if (index < 0 || index >= static_cast<int>(results_.size())) return false;
  try {
    write_sample_png(path.toStdString(), results_[index], resultsModel_, origins_[index], overwrite);
  } catch (const std::exception& e) {
    context()->showError(QString::fromStdString(e.what()));
    return false;
  }
  context()->log(StudioContext::Level::info, tr("exported %1").arg(path));
  context()->addRecentFile(path);
  return true;
}

bool ImageTab::exportAll(const QString& path, stx::engine::Overwrite overwrite) {
  const int count = static_cast<int>(results_.size());
  for (int i = 0; i < count; ++i) {
    const QString numbered =
        QString::fromStdString(stx::engine::numbered_path(path.toStdString(), i + 1, count).string());
    if (!exportSample(i, numbered, overwrite)) return false;
  }
  return count > 0;
}

QString ImageTab::askExportPath(const QString& title, const QString& suggestedName) {
  const QString folder = exportFolder_.isEmpty() ? imageFolder_ : exportFolder_;
  QString path = QFileDialog::getSaveFileName(this, title, QDir(folder).filePath(suggestedName),
                                              tr("PNG images (*.png)"));
  if (path.isEmpty()) return {};
  if (QFileInfo(path).suffix().isEmpty()) {
    path += QStringLiteral(".png");
    // The dialog asked about the name as typed, not this one.
    if (QFileInfo::exists(path) && !confirmReplacing({path})) return {};
  }
  exportFolder_ = QFileInfo(path).absolutePath();
  return path;
}

bool ImageTab::confirmReplacing(const QStringList& existing) {
  if (existing.isEmpty()) return true;
  QStringList names;
  for (const QString& path : existing) names << QFileInfo(path).fileName();
  const QString text = existing.size() == 1
                           ? tr("%1 already exists. Replace it?").arg(names.front())
                           : tr("%1 files already exist: %2. Replace them?")
                                 .arg(existing.size())
                                 .arg(names.mid(0, 5).join(QStringLiteral(", ")) +
                                      (names.size() > 5 ? QStringLiteral(", ...") : QString()));
  return QMessageBox::question(this, tr("Replace files?"), text) == QMessageBox::Yes;
}

void ImageTab::exportSelectedWithDialog() {
  const int index = std::max(0, canvas_->selectedSample());
  if (!canExport() || index >= static_cast<int>(results_.size())) return;
  const QString name = QStringLiteral("%1-seed%2-%3.png")
                           .arg(QString::fromStdString(resultsModel_.name))
                           .arg(origins_[index].seed)
                           .arg(index + 1);
  const QString path = askExportPath(tr("Export sample #%1 as PNG").arg(index + 1), name);
  if (!path.isEmpty()) exportSample(index, path, stx::engine::Overwrite::Replace);  // the dialog asked
}

void ImageTab::exportAllWithDialog() {
  if (!canExport()) return;
  const int count = static_cast<int>(results_.size());
  const QString name = QStringLiteral("%1-seed%2.png")
                           .arg(QString::fromStdString(resultsModel_.name))
                           .arg(origins_.front().seed);
  const QString path = askExportPath(
      count == 1 ? tr("Export the sample as PNG") : tr("Export %1 samples as PNG (numbered)").arg(count),
      name);
  if (path.isEmpty()) return;
  // With several samples the files are name-1.png, name-2.png...: the dialog asked about none of them.
  QStringList existing;
  for (int i = 0; count > 1 && i < count; ++i) {
    const QString numbered =
        QString::fromStdString(stx::engine::numbered_path(path.toStdString(), i + 1, count).string());
    if (QFileInfo::exists(numbered)) existing << numbered;
  }
  if (!confirmReplacing(existing)) return;
  exportAll(path, stx::engine::Overwrite::Replace);
}

void ImageTab::restoreSettings(QSettings& settings) {
  controls_->restore(settings);
  imageFolder_ = settings.value(QStringLiteral("imageFolder"), imageFolder_).toString();
  exportFolder_ = settings.value(QStringLiteral("exportFolder"), exportFolder_).toString();
  const QString saved = settings.value(QStringLiteral("model")).toString();
  if (!saved.isEmpty() && QFileInfo(saved).isDir() && saved != modelPicker()->currentPath()) {
    modelPicker()->choose(saved);
  }
}

void ImageTab::saveSettings(QSettings& settings) const {
  controls_->save(settings);
  settings.setValue(QStringLiteral("imageFolder"), imageFolder_);
  settings.setValue(QStringLiteral("exportFolder"), exportFolder_);
  const QString chosen = modelPicker()->currentPath();
  if (!chosen.isEmpty()) settings.setValue(QStringLiteral("model"), chosen);
}

void ImageTab::updateControls() {
  const bool running = busy();
  generate_->setEnabled(!running);
  const int selected = canvas_->selectedSample();
  const bool haveSelected =
      selected >= 0 && selected < static_cast<int>(results_.size()) && !results_[selected].empty();
  regenerate_->setEnabled(!running && haveSelected);
  regenerate_->setText(haveSelected
                           ? tr("Regenerate #%1 from row %2").arg(selected + 1).arg(keepRows_->value())
                           : tr("Regenerate from here"));
  exportSelected_->setEnabled(canExport() && haveSelected);
  exportAll_->setEnabled(canExport());
  controls_->clearImageButton()->setEnabled(!promptImage_.empty());
  emit actionsChanged();
}

}  // namespace stx::studio
