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
#include "core/counted_text.h"
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
    : GenerationTab(QStringLiteral("text"), context, parent),
      inspector_(new TextAttentionInspector(host(), this)) {
  buildLayout();
  connectEngine();
  setAcceptDrops(true);
  updateContextNote();
  updateControls();
}

void TextTab::buildLayout() {
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
  column->addWidget(modelPicker());
  column->addLayout(middle, 1);
  column->addWidget(progress_);

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
  EngineWorker* worker = host()->worker();
  connect(worker, &EngineWorker::sampleStarted, this, &TextTab::onStarted);
  connect(worker, &EngineWorker::sampleProgress, this, &TextTab::onProgress);
  connect(worker, &EngineWorker::sampleBytes, this, [this](const stx::engine::SampleBytes& b) {
    view_->appendBytes(static_cast<int>(b.sample), b.position, b.bytes);
  });
  connect(worker, &EngineWorker::attentionProbe, this, &TextTab::onProbe);
  connect(worker, &EngineWorker::sampleFinished, this, &TextTab::onFinished);
  connect(inspector_, &TextAttentionInspector::inspected, this, &TextTab::onInspected);
  connect(worker, &EngineWorker::jobFinished, this, [this](EngineJob job, bool) { onJobFinished(job); });
}

// --- generation -------------------------------------------------------------------------------------

void TextTab::generate() {
  if (!modelReady() || generating_) return;
  Bytes prompt = prompt_bytes(prompt_);
  const GenerationPlan fit =
      GenerationPlan::fit(prompt, side_->bytesToGenerateBox()->value(), model()->context);
  if (fit.generate < 1) {
    context()->showError(tr("%1: its context of %2 bytes leaves no room to generate")
                             .arg(QString::fromStdString(model()->name))
                             .arg(model()->context));
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
  request.device = device_choice(context()->device());

  inspector_->cancel();
  inspected_ = pinned_ = -1;
  result_.reset();
  generating_ = true;
  clearTokensPerSecond();
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
  host()->generate(request);
  updateControls();
  emit actionsChanged();
}

void TextTab::onStarted(const stx::engine::SampleStarted& started) {
  side_->samplingControls()->showSeedUsed(started.seed);
  context()->log(StudioContext::Level::info, tr("text: %1 of %2 bytes, seed %3")
                                                 .arg(counted(static_cast<qint64>(started.count), tr("1 sample"),
                                                              tr("%1 samples")))
                                                 .arg(started.length)
                                                 .arg(static_cast<qulonglong>(started.seed)));
}

void TextTab::onProgress(const stx::engine::SampleProgress& progress) {
  progress_->update(progress.position, progress.length, progress.tokens_per_second, tr("tok"),
                    progress.eta_seconds);
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
  updateControls();
  emit actionsChanged();
}

void TextTab::jobFailed(EngineJob job, const QString& message) {
  if (job == EngineJob::generate) {
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

// --- the model ------------------------------------------------------------------------------------

void TextTab::openingModel(const QString& path) {
  if (generating_) stop();  // the open waits in the engine's queue until the run ends, which Stop makes quick
  inspector_->cancel();     // answers about the old model's attention no longer apply
  forgetModel(path);
  side_->setModel(nullptr);
  updateContextNote();
  updateControls();
}

void TextTab::modelOpened(const stx::engine::ModelSummary&) {
  side_->setModel(&*model());
  updateContextNote();
  updateControls();
  showStatus();
  emit actionsChanged();
}

void TextTab::modelRefused(const stx::engine::ModelSummary& summary) {
  const QString name = QFileInfo(openingPath()).fileName();
  modelPicker()->showSummary(tr("%1 is not a text model").arg(name));
  context()->showError(tr("%1: this is a %2 model; the Text tab needs a text model")
                           .arg(name, QString::fromStdString(summary.kind)));
  updateControls();
}

void TextTab::modelFailed(const QString& message) {
  const QString name = QFileInfo(openingPath()).fileName();
  modelPicker()->showSummary(tr("Could not open %1").arg(name));
  context()->showError(message.contains(name) ? message : tr("%1: %2").arg(name, message));
  updateControls();
}

// --- attention ----------------------------------------------------------------------------------------

void TextTab::inspectAt(qint64 position) { requestInspect(position); }

void TextTab::requestInspect(qint64 position) {
  if (generating_ || !modelReady() || view_->sampleCount() == 0 || side_->layer() < 0) return;
  const int sample = view_->currentSample();
  const Bytes& bytes = view_->sampleBytes(sample);
  if (position < 0 || position >= static_cast<qint64>(bytes.size()) || position >= model()->context) return;
  inspected_ = position;
  TextAttentionInspector::Request request;
  request.sample = sample;
  request.bytes = bytes;
  request.layer = side_->layer();
  request.head = side_->head();
  request.heads = static_cast<int>(model()->heads);
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
  const QString saved = settings.value(QStringLiteral("model")).toString();
  ModelPicker* picker = modelPicker();
  if (!saved.isEmpty() && QFileInfo::exists(saved)) {
    picker->choose(saved);
  } else if (picker->currentPath().isEmpty() && picker->combo()->count() > 0) {
    picker->choose(picker->combo()->itemData(0).toString());
  }
}

void TextTab::saveSettings(QSettings& settings) const {
  side_->save(settings);
  settings.setValue(QStringLiteral("prompt"), prompt_->toPlainText());
  settings.setValue(QStringLiteral("exportFolder"), exportFolder_);
  settings.setValue(QStringLiteral("model"), modelPicker()->currentPath());
}

void TextTab::stop() {
  inspector_->cancel();
  GenerationTab::stop();
}

void TextTab::updateContextNote() {
  if (!modelReady()) {
    side_->contextNote()->setText(tr("How much fits shows once a model is open."));
    return;
  }
  const Bytes prompt = prompt_bytes(prompt_);
  side_->contextNote()->setText(
      GenerationPlan::fit(prompt, side_->bytesToGenerateBox()->value(), model()->context).note());
}

void TextTab::updateControls() {
  side_->setState(modelReady(), generating_, canExport(), view_->sampleCount());
}

QString TextTab::modelName() const {
  QString name = model() ? QString::fromStdString(model()->name) : QString();
  if (name.isEmpty()) name = QFileInfo(openingPath()).fileName();
  return name.isEmpty() ? QStringLiteral("text") : name;
}

QString TextTab::statusModelName() const { return model() ? modelName() : tr("no model"); }

}  // namespace stx::studio
