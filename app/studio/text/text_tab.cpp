#include "text/text_tab.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QFontDatabase>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QTabBar>
#include <QTextDocument>
#include <QUrl>
#include <QVBoxLayout>
#include <algorithm>
#include <exception>

#include "core/device_choice.h"
#include "core/engine_host.h"
#include "core/job_progress.h"
#include "core/model_picker.h"
#include "core/model_text.h"
#include "core/sampling_controls.h"
#include "core/studio_context.h"
#include "text/generation_plan.h"
#include "text/text_attention_inspector.h"
#include "text/text_export.h"

namespace stx::studio {

static_assert(TextSidePanel::kAllHeads == TextAttentionInspector::kAllHeads, "one value for \"all heads\"");

namespace {

// The prompt as the user typed it: toPlainText() would turn non-breaking spaces into plain ones.
Bytes prompt_bytes(const QPlainTextEdit* editor) {
  QString text = editor->document()->toRawText();
  text.replace(QChar::ParagraphSeparator, QLatin1Char('\n'));
  const QByteArray utf8 = text.toUtf8();
  return Bytes(utf8.begin(), utf8.end());
}

}  // namespace

TextTab::TextTab(StudioContext* context, QWidget* parent)
    : StudioTab(context, parent),
      host_(new EngineHost(this)),
      inspector_(new TextAttentionInspector(host_, this)) {
  buildLayout();
  connectEngine();
  device_ = describe_device(context->device());
  connect(context, &StudioContext::deviceChanged, this, [this](const QString& device) {
    if (generating_) return;  // the running job says where it runs; the next one runs on the new device
    device_ = describe_device(device);
    showStatus();
  });
  setAcceptDrops(true);
  updateContextNote();
  updateControls();
}

void TextTab::buildLayout() {
  picker_ = new ModelPicker(QStringLiteral("text"), this);
  prompt_ = new QPlainTextEdit;
  prompt_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  prompt_->setPlaceholderText(tr("Type a prompt to continue, or open or drop a text file here"));
  // A dropped file should become the prompt, not a pasted file:// address.
  prompt_->viewport()->installEventFilter(this);
  side_ = new TextSidePanel;
  progress_ = new JobProgress;
  sampleBar_ = new QTabBar;
  sampleBar_->setExpanding(false);
  sampleBar_->setDocumentMode(true);
  sampleBar_->hide();
  view_ = new TextView;
  attentionNote_ = new QLabel(tr("Generate, then hover over a character to see what it attended."));
  attentionNote_->setWordWrap(true);

  // Left: the prompt above the samples. Right: the settings.
  auto* promptBox = new QWidget;
  auto* promptColumn = new QVBoxLayout(promptBox);
  promptColumn->setContentsMargins(0, 0, 0, 0);
  promptColumn->addWidget(new QLabel(tr("Prompt")));
  promptColumn->addWidget(prompt_);
  auto* outputBox = new QWidget;
  auto* outputColumn = new QVBoxLayout(outputBox);
  outputColumn->setContentsMargins(0, 0, 0, 0);
  outputColumn->setSpacing(2);
  outputColumn->addWidget(sampleBar_);
  outputColumn->addWidget(view_, 1);
  outputColumn->addWidget(attentionNote_);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(promptBox);
  split->addWidget(outputBox);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 2);
  split->setChildrenCollapsible(false);
  auto* middle = new QHBoxLayout;
  middle->addWidget(split, 1);
  middle->addWidget(side_);
  auto* column = new QVBoxLayout(this);
  column->addWidget(picker_);
  column->addLayout(middle, 1);
  column->addWidget(progress_);

  connect(picker_, &ModelPicker::modelChosen, this, &TextTab::openModel);
  connect(prompt_, &QPlainTextEdit::textChanged, this, &TextTab::updateContextNote);
  connect(side_->bytesToGenerateBox(), &QSpinBox::valueChanged, this, &TextTab::updateContextNote);
  connect(side_->generateButton(), &QPushButton::clicked, this, &TextTab::generate);
  connect(side_->exportButton(), &QPushButton::clicked, this, &TextTab::exportResults);
  connect(progress_, &JobProgress::stopRequested, this, &TextTab::stop);
  connect(sampleBar_, &QTabBar::currentChanged, this, [this](int index) {
    view_->setCurrentSample(index);
    pinned_ = -1;
  });
  connect(view_, &TextView::byteHovered, this, [this](qint64 position) {
    if (pinned_ < 0) requestInspect(position);
  });
  connect(view_, &TextView::byteClicked, this, [this](qint64 position) {
    pinned_ = pinned_ == position ? -1 : position;  // a second click on the same character lets go
    requestInspect(position);
  });
  // Another layer or head: its attention at the same character, at once.
  connect(side_, &TextSidePanel::attentionHeadChosen, this, [this] {
    if (inspected_ >= 0) requestInspect(inspected_);
  });
}

void TextTab::connectEngine() {
  EngineWorker* worker = host_->worker();
  connect(worker, &EngineWorker::modelOpened, this, &TextTab::onModelOpened);
  connect(worker, &EngineWorker::sampleStarted, this, &TextTab::onStarted);
  connect(worker, &EngineWorker::sampleProgress, this, &TextTab::onProgress);
  connect(worker, &EngineWorker::sampleBytes, this, [this](const stx::engine::SampleBytes& b) {
    view_->appendBytes(static_cast<int>(b.sample), b.position, b.bytes);
  });
  connect(worker, &EngineWorker::attentionProbe, this, &TextTab::onProbe);
  connect(worker, &EngineWorker::sampleFinished, this, &TextTab::onFinished);
  connect(inspector_, &TextAttentionInspector::inspected, this, &TextTab::onInspected);
  connect(worker, &EngineWorker::failed, this, &TextTab::onFailed);
  connect(worker, &EngineWorker::jobFinished, this, [this](EngineJob job, bool) { onJobFinished(job); });
  connect(host_, &EngineHost::busyChanged, this, [this] {
    updateControls();
    emit actionsChanged();
  });
}

// --- generation -------------------------------------------------------------------------------------

void TextTab::generate() {
  if (!summary_ || generating_) return;
  Bytes prompt = prompt_bytes(prompt_);
  const GenerationPlan fit =
      GenerationPlan::fit(prompt, side_->bytesToGenerateBox()->value(), summary_->context);
  if (fit.generate < 1) {
    context()->showError(tr("%1: its context of %2 bytes leaves no room to generate")
                             .arg(QString::fromStdString(summary_->name))
                             .arg(summary_->context));
    return;
  }
  prompt.erase(prompt.begin(), prompt.begin() + fit.dropped);
  stx::engine::SampleRequest request;
  request.prompt = prompt;
  request.length = static_cast<int64_t>(prompt.size()) + fit.generate;
  const SamplingControls* sampling = side_->samplingControls();
  request.count = sampling->sampleCount();
  request.settings = sampling->settings();
  request.seed = sampling->seed();
  const std::string stop = GenerationPlan::stopString(side_->stopStringEdit()->text());
  if (!stop.empty()) request.stop_strings.push_back(stop);
  if (side_->liveAttentionBox()->isChecked() && side_->layer() >= 0) {
    request.probe_layer = side_->layer();
    // The engine probes one head while sampling; "all heads" is averaged only when inspecting afterwards.
    request.probe_head = std::max(side_->head(), 0);
  }
  request.event_interval_seconds = EngineHost::previewIntervalSeconds();
  request.device = context()->device().toStdString();

  inspector_->cancel();
  inspected_ = pinned_ = -1;
  result_.reset();
  generating_ = true;
  tokensPerSecond_ = -1;
  const int count = static_cast<int>(request.count);
  view_->startRun(count, prompt);
  {
    const QSignalBlocker block(sampleBar_);
    while (sampleBar_->count() > count) sampleBar_->removeTab(sampleBar_->count() - 1);
    while (sampleBar_->count() < count) sampleBar_->addTab(tr("Sample %1").arg(sampleBar_->count() + 1));
    sampleBar_->setCurrentIndex(view_->currentSample());
  }
  sampleBar_->setVisible(count > 1);
  attentionNote_->setText(request.probe_layer >= 0
                              ? tr("Live: what layer %1, head %2 reads as each byte is generated (orange), "
                                   "and the byte being generated (underlined).")
                                    .arg(request.probe_layer + 1)
                                    .arg(request.probe_head + 1)
                              : tr("Generating..."));
  progress_->start(tr("Generating %1 bytes...").arg(QLocale().toString(fit.generate * count)));
  host_->generate(request);
  updateControls();
  emit actionsChanged();
}

void TextTab::onStarted(const stx::engine::SampleStarted& started) {
  side_->samplingControls()->showSeedUsed(started.seed);
  device_ = QString::fromStdString(started.device);
  showStatus();
  context()->log(StudioContext::Level::info, tr("text: %1 samples of %2 bytes, seed %3")
                                                 .arg(started.count)
                                                 .arg(started.length)
                                                 .arg(static_cast<qulonglong>(started.seed)));
}

void TextTab::onProgress(const stx::engine::SampleProgress& progress) {
  progress_->update(progress.position, progress.length, progress.tokens_per_second, tr("tok"),
                    progress.eta_seconds);
  tokensPerSecond_ = progress.tokens_per_second;
  showStatus();
}

void TextTab::onProbe(const stx::engine::AttentionProbe& probe) {
  if (!generating_) return;
  view_->setAttention(static_cast<int>(probe.sample),
                      TextView::Attention{probe.position, probe.positions, probe.weights});
}

void TextTab::onFinished(const stx::engine::SampleResult& result) {
  result_ = result;
  generating_ = false;
  side_->samplingControls()->showSeedUsed(result.seed);
  std::vector<Bytes> samples(result.samples.begin(), result.samples.end());
  view_->finishRun(samples);
  tokensPerSecond_ = result.tokens_per_second;
  const QLocale locale;
  if (result.cancelled) {
    progress_->finish(
        tr("Stopped: %1 bytes kept").arg(locale.toString(static_cast<qint64>(result.generated_bytes))));
  } else {
    progress_->finish(tr("Done: %1 bytes in %2 s · %3 tok/s")
                          .arg(locale.toString(static_cast<qint64>(result.generated_bytes)))
                          .arg(locale.toString(result.seconds - result.prompt_seconds, 'f', 1))
                          .arg(locale.toString(result.tokens_per_second, 'f', 0)));
  }
  attentionNote_->setText(tr("Hover over a character to see what it attended; click to keep it."));
  showStatus();
  updateControls();
  emit actionsChanged();
}

void TextTab::onFailed(EngineJob job, const QString& message) {
  if (job == EngineJob::openModel) {
    const QString name = QFileInfo(openingPath_).fileName();
    picker_->showSummary(tr("Could not open %1").arg(name));
    summary_.reset();
    context()->showError(message.contains(name) ? message : tr("%1: %2").arg(name, message));
    updateControls();
  } else if (job == EngineJob::generate) {
    progress_->finish(tr("Failed"));
    context()->showError(tr("Text generation: %1").arg(message));
  } else if (job == EngineJob::inspect) {
    context()->showError(tr("Inspecting attention: %1").arg(message));
  }
}

void TextTab::onJobFinished(EngineJob job) {
  if (job != EngineJob::generate || !generating_) return;
  // Failed before a result came: the tab is usable again.
  generating_ = false;
  updateControls();
  emit actionsChanged();
}

void TextTab::onModelOpened(const stx::engine::ModelSummary& summary) {
  if (summary.kind != "text") {
    const QString name = QFileInfo(openingPath_).fileName();
    picker_->showSummary(tr("%1 is not a text model").arg(name));
    context()->showError(tr("%1: this is a %2 model; the Text tab needs a text model")
                             .arg(name, QString::fromStdString(summary.kind)));
    updateControls();
    return;
  }
  summary_ = summary;
  picker_->showSummary(summary_line(summary));
  side_->setModel(&*summary_);
  updateContextNote();
  updateControls();
  showStatus();
  emit actionsChanged();
}

void TextTab::openModel(const QString& path) {
  if (path.isEmpty()) return;
  if (generating_) stop();  // the open waits in the engine's queue until the run ends, which Stop makes quick
  inspector_->cancel();  // answers about the old model's attention no longer apply
  openingPath_ = path;
  summary_.reset();
  side_->setModel(nullptr);
  picker_->showSummary(tr("Opening %1...").arg(QFileInfo(path).fileName()));
  updateContextNote();
  updateControls();
  host_->openModel(path);
}

// --- attention ----------------------------------------------------------------------------------------

void TextTab::inspectAt(qint64 position) { requestInspect(position); }

void TextTab::requestInspect(qint64 position) {
  if (generating_ || !summary_ || view_->sampleCount() == 0 || side_->layer() < 0) return;
  const int sample = view_->currentSample();
  const Bytes& bytes = view_->sampleBytes(sample);
  if (position < 0 || position >= static_cast<qint64>(bytes.size()) || position >= summary_->context) return;
  inspected_ = position;
  TextAttentionInspector::Request request;
  request.sample = sample;
  request.bytes = bytes;
  request.layer = side_->layer();
  request.head = side_->head();
  request.heads = static_cast<int>(summary_->heads);
  request.position = position;
  inspector_->request(request);
}

void TextTab::onInspected(int sample, int layer, int head, const TextView::Attention& attention) {
  view_->setAttention(sample, attention);
  if (sample != view_->currentSample() || attention.positions.empty()) return;
  const auto strongest = std::max_element(attention.weights.begin(), attention.weights.end());
  const qint64 top = attention.positions[static_cast<size_t>(strongest - attention.weights.begin())];
  // One arg() call: a quoted character such as '%' must not be read as a placeholder.
  attentionNote_->setText(tr("Byte %1 %2 (%3) attended %4 positions, most of all byte %5 %6 (%7%)")
                              .arg(QString::number(attention.position),
                                   view_->describeByte(attention.position), LayerHeadPicker::describe(layer, head),
                                   QString::number(attention.positions.size()), QString::number(top),
                                   view_->describeByte(top), QString::number(100.0 * *strongest, 'f', 0)) +
                          (pinned_ >= 0 ? tr(" · kept: click it again to let go") : QString()));
}

// --- files ----------------------------------------------------------------------------------------------

QString TextTab::openFilter() const { return PromptFile::filter(); }

bool TextTab::acceptsFile(const QString& path) const { return PromptFile::accepts(path); }

void TextTab::openFile(const QString& path) {
  QString error;
  const std::optional<PromptFile::Text> file = PromptFile::read(path, &error);
  if (!file) {
    context()->showError(error);
    return;
  }
  if (!file->warning.isEmpty()) context()->log(StudioContext::Level::warning, file->warning);
  prompt_->setPlainText(file->text);
  const QString absolute = QFileInfo(path).absoluteFilePath();
  context()->addRecentFile(absolute);
  context()->log(StudioContext::Level::info, tr("text: the prompt is now %1").arg(absolute));
}

bool TextTab::canExport() const { return !generating_ && result_.has_value() && view_->sampleCount() > 0; }

void TextTab::exportResults() {
  if (!canExport()) return;
  const bool all = side_->exportAllBox()->isChecked() && view_->sampleCount() > 1;
  QString name = QStringLiteral("%1-seed%2").arg(modelName()).arg(static_cast<qulonglong>(result_->seed));
  if (!all && view_->sampleCount() > 1) name += QStringLiteral("-%1").arg(view_->currentSample() + 1);
  const QString path = TextExport::askPath(this, name + QStringLiteral(".txt"),
                                           all ? view_->sampleCount() : 1, &exportFolder_);
  if (!path.isEmpty()) exportTo(path, all);
}

bool TextTab::exportTo(const QString& path, bool allSamples) {
  std::vector<Bytes> samples;
  if (allSamples) {
    for (int k = 0; k < view_->sampleCount(); ++k) samples.push_back(view_->sampleBytes(k));
  } else {
    samples.push_back(view_->sampleBytes(view_->currentSample()));
  }
  try {
    for (const QString& written : TextExport::write(path, samples)) {
      context()->addRecentFile(written);
      context()->log(StudioContext::Level::info, tr("text: exported %1").arg(written));
    }
  } catch (const std::exception& e) {
    context()->showError(QString::fromStdString(e.what()));
    return false;
  }
  return true;
}

QString TextTab::droppedFile(const QMimeData* mime) {
  if (!mime || !mime->hasUrls()) return {};
  for (const QUrl& url : mime->urls()) {
    if (url.isLocalFile()) return url.toLocalFile();
  }
  return {};
}

void TextTab::dragEnterEvent(QDragEnterEvent* event) {
  if (!droppedFile(event->mimeData()).isEmpty()) event->acceptProposedAction();
}

void TextTab::dropEvent(QDropEvent* event) {
  const QString path = droppedFile(event->mimeData());
  if (path.isEmpty()) return;
  event->acceptProposedAction();
  openFile(path);
}

bool TextTab::eventFilter(QObject* watched, QEvent* event) {
  if (watched == prompt_->viewport()) {
    if (event->type() == QEvent::DragEnter || event->type() == QEvent::DragMove) {
      auto* drag = static_cast<QDragMoveEvent*>(event);
      if (!droppedFile(drag->mimeData()).isEmpty()) {
        drag->acceptProposedAction();
        return true;
      }
    } else if (event->type() == QEvent::Drop) {
      auto* drop = static_cast<QDropEvent*>(event);
      const QString path = droppedFile(drop->mimeData());
      if (!path.isEmpty()) {
        drop->acceptProposedAction();
        openFile(path);
        return true;
      }
    }
  }
  return StudioTab::eventFilter(watched, event);
}

// --- settings and state ---------------------------------------------------------------------------------

void TextTab::restoreSettings(QSettings& settings) {
  side_->restore(settings);
  prompt_->setPlainText(settings.value(QStringLiteral("prompt"), prompt_->toPlainText()).toString());
  exportFolder_ = settings.value(QStringLiteral("exportFolder"), exportFolder_).toString();
  // The model used last, else the first text model in the library, so the tab is ready to generate.
  const QString model = settings.value(QStringLiteral("model")).toString();
  if (!model.isEmpty() && QFileInfo::exists(model)) {
    picker_->choose(model);
  } else if (picker_->currentPath().isEmpty() && picker_->combo()->count() > 0) {
    picker_->choose(picker_->combo()->itemData(0).toString());
  }
}

void TextTab::saveSettings(QSettings& settings) const {
  side_->save(settings);
  settings.setValue(QStringLiteral("prompt"), prompt_->toPlainText());
  settings.setValue(QStringLiteral("exportFolder"), exportFolder_);
  settings.setValue(QStringLiteral("model"), picker_->currentPath());
}

void TextTab::useModel(const QString& path) { picker_->choose(path); }

void TextTab::refreshModels() { picker_->refresh(); }

void TextTab::activated() { showStatus(); }

bool TextTab::busy() const { return host_->busy(); }

bool TextTab::hasRunningWork() const { return host_->generating(); }

void TextTab::stop() {
  inspector_->cancel();
  host_->stop();
}

void TextTab::updateContextNote() {
  if (!summary_) {
    side_->contextNote()->setText(tr("How much fits shows once a model is open."));
    return;
  }
  const Bytes prompt = prompt_bytes(prompt_);
  side_->contextNote()->setText(
      GenerationPlan::fit(prompt, side_->bytesToGenerateBox()->value(), summary_->context).note());
}

void TextTab::updateControls() {
  side_->setState(summary_.has_value(), generating_, canExport(), view_->sampleCount());
}

QString TextTab::modelName() const {
  QString name = summary_ ? QString::fromStdString(summary_->name) : QString();
  if (name.isEmpty()) name = QFileInfo(openingPath_).fileName();
  return name.isEmpty() ? QStringLiteral("text") : name;
}

void TextTab::showStatus() {
  context()->setStatus(this, summary_ ? modelName() : tr("no model"), summary_ ? device_ : QString(),
                       tokensPerSecond_);
}

}  // namespace stx::studio
