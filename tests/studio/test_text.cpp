// The Text tab with a tiny random text model (context 128, fixed l=16 c=4, merged heads): what a user sees
// in the view comes from the engine's bytes, Stop stops, exports read back, files fill the prompt, and the
// attention drawn over the text is the pattern's.
#include <sys/stat.h>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabBar>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QThread>
#include <QUrl>
#include <atomic>
#include <memory>
#include <numeric>
#include <set>

#include "core/engine_host.h"
#include "core/job_progress.h"
#include "core/sampling_controls.h"
#include "core/studio_context.h"
#include "studio_test_support.h"
#include "stx/engine/pattern_view.h"
#include "text/text_attention_inspector.h"
#include "text/byte_text.h"
#include "text/text_tab.h"
#include "text/text_view.h"

using namespace stx::studio;
using stx::studio::test::make_tiny_model;
using stx::studio::test::wait_until;

namespace {

const stx::engine::PatternSpec kTinyPattern{"fixed", 128, 16, 4};

std::vector<int64_t> pattern_at(int64_t position) {
  return stx::engine::attended_positions(kTinyPattern, stx::engine::PatternPart::both, position);
}

Bytes bytes_of(const char* text) { return Bytes(text, text + std::strlen(text)); }

Bytes read_file(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return {};
  const QByteArray data = file.readAll();
  return Bytes(data.begin(), data.end());
}

// What the document holds, with block separators made one character as QTextDocument stores them.
QString raw_text(const TextView& view) {
  QString text = view.document()->toRawText();
  text.replace(QChar::ParagraphSeparator, QLatin1Char('\n'));
  return text;
}

QString expected_text(const Bytes& bytes) {
  ByteText text;
  text.append(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  text.setComplete(true);
  QString shown = text.text();
  // insertText turns these into block separators too
  shown.replace(QChar(0xFDD0), QLatin1Char('\n')).replace(QChar(0xFDD1), QLatin1Char('\n'));
  shown.replace(QChar::ParagraphSeparator, QLatin1Char('\n'));
  return shown;
}

// The units highlighted as attended, and the one marked as generated, from the view's extra selections.
struct Highlights {
  std::set<int> attended;
  int current = -1;
  double weightSum = 0;
};

Highlights highlights(const TextView& view) {
  Highlights h;
  for (const QTextEdit::ExtraSelection& s : view.extraSelections()) {
    const qint64 byte = view.byteAtChar(s.cursor.selectionStart());
    const int unit = view.shownText().unitOfByte(byte);
    if (s.format.hasProperty(TextView::kCurrentProperty)) {
      h.current = unit;
    } else {
      h.attended.insert(unit);
      h.weightSum += s.format.property(TextView::kWeightProperty).toDouble();
    }
  }
  return h;
}

std::set<int> shown_units(const TextView& view, const std::vector<int64_t>& positions) {
  std::set<int> units;
  for (int64_t p : positions) {
    const int unit = view.shownText().unitOfByte(p);
    if (unit >= 0 && view.shownText().units()[static_cast<size_t>(unit)].charCount > 0) units.insert(unit);
  }
  return units;
}

}  // namespace

class TextTabTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void byteTextDecodesSplitAndInvalidUtf8();
  void viewShowsStreamedBytesSafely();
  void generationShowsPromptThenAccentedContinuation();
  void seedShownIsSeedUsedAndFixedSeedRepeats();
  void stopEndsGeneration();
  void stopStringEndsSample();
  void contextCapsTheRequestWithANote();
  void exportWritesTheSampleBytes();
  void openedOrDroppedFileFillsPrompt();
  void tooLargeOrUnreadableFileShowsError();
  void liveProbeShowsPatternPositions();
  void inspectHighlightsPatternPositions();
  void settingsRoundTrip();
  void accentStaysReadableOnADarkPalette();

 private:
  std::unique_ptr<TextTab> readyTab(StudioContext& context);
  bool generate(TextTab& tab, const QString& prompt, int bytes, int samples);

  QTemporaryDir dir_;
  QString model_;
};

void TextTabTest::initTestCase() {
  QVERIFY(dir_.isValid());
  model_ = make_tiny_model(dir_.filePath("tiny-text"), "text");
}

std::unique_ptr<TextTab> TextTabTest::readyTab(StudioContext& context) {
  auto tab = std::make_unique<TextTab>(&context);
  tab->useModel(model_);
  // Ready and idle: the model is announced before its job ends, and Generate does nothing while a job runs.
  if (!wait_until([&] { return tab->modelReady() && !tab->busy(); })) return nullptr;
  return tab;
}

bool TextTabTest::generate(TextTab& tab, const QString& prompt, int bytes, int samples) {
  tab.promptEditor()->setPlainText(prompt);
  tab.bytesToGenerateBox()->setValue(bytes);
  tab.samplingControls()->setSampleCount(samples);
  if (!tab.generateButton()->isEnabled()) return false;
  tab.generateButton()->click();
  return wait_until([&] { return !tab.busy() && !tab.generating() && tab.lastResult().has_value(); });
}

void TextTabTest::byteTextDecodesSplitAndInvalidUtf8() {
  ByteText text;
  text.append("h\xC3");  // 'h' and the first half of 'é'
  QCOMPARE(text.text(), QStringLiteral("h"));
  QCOMPARE(text.unitOfByte(1), -1);  // waits for the rest
  text.append("\xA9\xFF");
  QCOMPARE(text.text(), QStringLiteral("h\u00E9\uFFFD"));
  QCOMPARE(text.unitOfByte(2), 1);
  QCOMPARE(text.unitOfByte(3), 2);
  text.append("\xF0\x9F");  // half an emoji
  QCOMPARE(text.units().size(), size_t{3});
  text.append("\x98\x80!");
  QCOMPARE(text.text(), QString::fromUtf8("h\u00E9\uFFFD\xF0\x9F\x98\x80!"));
  QCOMPARE(text.units()[3].charCount, 2);  // a surrogate pair
  QCOMPARE(text.unitAtChar(3), 3);         // both halves of the pair are the emoji
  QCOMPARE(text.unitAtChar(4), 3);
  QCOMPARE(text.unitAtChar(5), 4);
  text.append("\xE2\x82");  // cut off at the end of the sample
  text.setComplete(true);
  QVERIFY(text.text().endsWith(QStringLiteral("!\uFFFD\uFFFD")));
  text.append("\xAC");  // more came after all: the euro sign
  QVERIFY(text.text().endsWith(QStringLiteral("!\u20AC")));
  QVERIFY(text.rewound());
  // A control byte shows as a symbol, '\r' as nothing, every byte still has a unit.
  ByteText controls;
  controls.append(std::string_view("a\0\r\nb", 5));
  QCOMPARE(controls.text(), QStringLiteral("a\u2400\nb"));
  QCOMPARE(controls.units()[2].charCount, 0);
  QCOMPARE(controls.unitOfByte(2), 2);
}

void TextTabTest::viewShowsStreamedBytesSafely() {
  TextView view;
  view.startRun(1, bytes_of("A"));
  view.appendBytes(0, 1, "\xC3");
  view.refreshNow();
  QCOMPARE(view.toPlainText(), QStringLiteral("A"));
  view.appendBytes(0, 2, "\xA9\xFF\n\xE2\x82");
  view.refreshNow();
  QCOMPARE(view.toPlainText(), QStringLiteral("A\u00E9\uFFFD\n"));
  QCOMPARE(view.charRange(2), qMakePair(1, 1));  // the second byte of 'é'
  QCOMPARE(view.byteAtChar(2), qint64{3});
  view.finishRun({bytes_of("A\xC3\xA9\xFF\n\xE2\x82")});
  QCOMPARE(view.toPlainText(), QStringLiteral("A\u00E9\uFFFD\n\uFFFD\uFFFD"));
  QCOMPARE(view.describeByte(3), QStringLiteral("0xFF"));
}

void TextTabTest::generationShowsPromptThenAccentedContinuation() {
  // given a tab with the tiny model
  StudioContext context;
  auto tab = readyTab(context);
  QVERIFY(tab);
  QSignalSpy status(&context, &StudioContext::statusChanged);
  // when two samples of 40 bytes continue "Hello"
  QVERIFY(generate(*tab, QStringLiteral("Hello"), 40, 2));
  // then each sample shown is the engine's bytes, prompt first, the continuation in the accent colour
  const auto& result = *tab->lastResult();
  QCOMPARE(result.samples.size(), size_t{2});
  QVERIFY(!result.cancelled);
  QVERIFY(tab->sampleBar()->isVisible() || tab->sampleBar()->count() == 2);
  QCOMPARE(tab->sampleBar()->count(), 2);
  TextView* view = tab->view();
  for (int k = 0; k < 2; ++k) {
    tab->sampleBar()->setCurrentIndex(k);
    QCOMPARE(view->currentSample(), k);
    const Bytes& shown = view->sampleBytes(k);
    QVERIFY(shown == result.samples[static_cast<size_t>(k)]);
    QCOMPARE(shown.size(), size_t{45});
    QVERIFY(std::equal(shown.begin(), shown.begin() + 5, "Hello"));
    QVERIFY(view->toPlainText().startsWith(QStringLiteral("Hello")));
    QCOMPARE(raw_text(*view), expected_text(shown));
    int accented = 0;
    for (QTextBlock block = view->document()->begin(); block.isValid(); block = block.next()) {
      for (auto it = block.begin(); !it.atEnd(); ++it) {
        const QTextFragment fragment = it.fragment();
        const bool accent = fragment.charFormat().foreground().color() == view->accentColor();
        for (int c = fragment.position(); c < fragment.position() + fragment.length(); ++c) {
          const qint64 byte = view->byteAtChar(c);
          QVERIFY(byte >= 0);
          QCOMPARE(accent, byte >= 5);
          accented += accent;
        }
      }
    }
    QVERIFY(accented > 0);
  }
  QVERIFY(view->accentColor() != view->palette().color(QPalette::Text));
  QVERIFY(tab->canExport());
  QVERIFY(!status.isEmpty());
  QVERIFY(tab->progress()->label()->text().contains(QStringLiteral("tok/s")));
  // the prompt's bytes are what was typed: a non-breaking space and a line break stay as they are
  QVERIFY(generate(*tab, QStringLiteral("x\u00A0y\nz"), 5, 1));
  const Bytes typed = bytes_of("x\xC2\xA0y\nz");
  QVERIFY(std::equal(typed.begin(), typed.end(), tab->lastResult()->samples[0].begin()));
}

void TextTabTest::seedShownIsSeedUsedAndFixedSeedRepeats() {
  StudioContext context;
  auto tab = readyTab(context);
  QVERIFY(tab);
  // a random seed: the field shows the one the engine used
  tab->samplingControls()->randomSeedBox()->setChecked(true);
  QVERIFY(generate(*tab, QStringLiteral("Seed"), 30, 1));
  QCOMPARE(tab->samplingControls()->seedEdit()->text(),
           QString::number(static_cast<qulonglong>(tab->lastResult()->seed)));
  // a fixed seed twice: the same text
  tab->samplingControls()->randomSeedBox()->setChecked(false);
  tab->samplingControls()->seedEdit()->setText(QStringLiteral("4242"));
  QVERIFY(generate(*tab, QStringLiteral("Seed"), 30, 2));
  const auto first = tab->lastResult()->samples;
  const QString firstText = tab->view()->toPlainText();
  QVERIFY(generate(*tab, QStringLiteral("Seed"), 30, 2));
  QCOMPARE(tab->lastResult()->seed, uint64_t{4242});
  QCOMPARE(tab->samplingControls()->seedEdit()->text(), QStringLiteral("4242"));
  QVERIFY(tab->lastResult()->samples == first);
  QCOMPARE(tab->view()->toPlainText(), firstText);
}

void TextTabTest::stopEndsGeneration() {
  StudioContext context;
  auto tab = readyTab(context);
  QVERIFY(tab);
  // The tiny model is fast enough to finish before a click lands: the run is held at its start (on the
  // engine's thread) until Stop has been pressed, so the test always stops a run in progress.
  std::atomic<bool> started{false}, released{false};
  connect(
      tab->host()->worker(), &EngineWorker::sampleStarted, tab->host()->worker(),
      [&](const stx::engine::SampleStarted&) {
        started = true;
        while (!released) QThread::msleep(1);
      },
      Qt::DirectConnection);
  tab->promptEditor()->setPlainText(QStringLiteral("Stop"));
  tab->bytesToGenerateBox()->setValue(120);
  tab->samplingControls()->setSampleCount(8);
  tab->generateButton()->click();
  QVERIFY(tab->busy());
  QVERIFY(!tab->generateButton()->isEnabled());
  QVERIFY(wait_until([&] { return started.load(); }));
  QVERIFY(tab->progress()->stopButton()->isEnabled());
  tab->progress()->stopButton()->click();
  released = true;
  QVERIFY(wait_until([&] { return !tab->busy() && tab->lastResult().has_value(); }, 10000));
  QVERIFY(tab->lastResult()->cancelled);
  QVERIFY(tab->lastResult()->generated_bytes < 8 * 120);
  QVERIFY(tab->generateButton()->isEnabled());
  QVERIFY(!tab->progress()->stopButton()->isEnabled());
  QVERIFY(tab->progress()->label()->text().contains(QStringLiteral("Stopped")));
  // what was made is kept and shown
  QVERIFY(tab->view()->sampleBytes(0) == tab->lastResult()->samples[0]);
  // and the tab generates again
  QVERIFY(generate(*tab, QStringLiteral("Again"), 10, 1));
  QVERIFY(!tab->lastResult()->cancelled);
}

void TextTabTest::stopStringEndsSample() {
  StudioContext context;
  auto tab = readyTab(context);
  QVERIFY(tab);
  // Temperature 0 makes the run repeatable: a printable byte it produced becomes the stop string.
  tab->samplingControls()->temperatureBox()->setValue(0.0);
  QVERIFY(generate(*tab, QStringLiteral("ab"), 60, 1));
  const Bytes full = tab->lastResult()->samples[0];
  auto stopAt =
      std::find_if(full.begin() + 2, full.end(), [](uint8_t b) { return b > 0x20 && b < 0x7F && b != '\\'; });
  if (stopAt == full.end()) QSKIP("the tiny model produced no printable byte to stop at");
  tab->stopStringEdit()->setText(QString(QChar(*stopAt)));
  QVERIFY(generate(*tab, QStringLiteral("ab"), 60, 1));
  // then the sample ends before the stop string, which is left out of the view too
  const Bytes expected(full.begin(), stopAt);
  QVERIFY(tab->lastResult()->samples[0] == expected);
  QVERIFY(tab->view()->sampleBytes(0) == expected);
}

void TextTabTest::contextCapsTheRequestWithANote() {
  StudioContext context;
  auto tab = readyTab(context);
  QVERIFY(tab);
  QVERIFY(generate(*tab, QStringLiteral("Hello"), 500, 1));
  QVERIFY(tab->contextNote()->text().contains(QStringLiteral("Capped")));
  QCOMPARE(tab->lastResult()->samples[0].size(), size_t{128});
  // a prompt longer than the context keeps its end
  const QString longPrompt = QString(200, QLatin1Char('a')) + QStringLiteral("END");
  QVERIFY(generate(*tab, longPrompt, 40, 1));
  QVERIFY(tab->contextNote()->text().contains(QStringLiteral("last")));
  const Bytes& sample = tab->lastResult()->samples[0];
  QCOMPARE(sample.size(), size_t{128});
  QVERIFY(std::equal(sample.begin() + 85, sample.begin() + 88, "END"));
}

void TextTabTest::exportWritesTheSampleBytes() {
  StudioContext context;
  auto tab = readyTab(context);
  QVERIFY(tab);
  QSignalSpy recent(&context, &StudioContext::recentFileAdded);
  QSignalSpy errors(&context, &StudioContext::errorShown);
  QVERIFY(generate(*tab, QStringLiteral("Export"), 40, 2));
  QTemporaryDir out;
  // the selected sample
  tab->sampleBar()->setCurrentIndex(1);
  QVERIFY(tab->exportTo(out.filePath("one.txt"), false));
  QVERIFY(read_file(out.filePath("one.txt")) == tab->lastResult()->samples[1]);
  // replacing a file the user agreed to replace
  tab->sampleBar()->setCurrentIndex(0);
  QVERIFY(tab->exportTo(out.filePath("one.txt"), false));
  QVERIFY(read_file(out.filePath("one.txt")) == tab->lastResult()->samples[0]);
  // every sample, numbered
  QVERIFY(tab->exportTo(out.filePath("all.txt"), true));
  QVERIFY(read_file(out.filePath("all-1.txt")) == tab->lastResult()->samples[0]);
  QVERIFY(read_file(out.filePath("all-2.txt")) == tab->lastResult()->samples[1]);
  QCOMPARE(recent.size(), 4);
  QVERIFY(errors.isEmpty());
  // a folder that does not exist: a plain error naming the file, and the tab stays usable
  QVERIFY(!tab->exportTo(out.filePath("missing/one.txt"), false));
  QCOMPARE(errors.size(), 1);
  QVERIFY(errors.first().first().toString().contains(QStringLiteral("one.txt")));
  QVERIFY(tab->canExport());
}

void TextTabTest::openedOrDroppedFileFillsPrompt() {
  StudioContext context;
  TextTab tab(&context);
  QSignalSpy recent(&context, &StudioContext::recentFileAdded);
  QTemporaryDir files;
  QVERIFY(tab.acceptsFile(QStringLiteral("notes.TXT")));
  QVERIFY(tab.acceptsFile(QStringLiteral("data.json")));
  QVERIFY(!tab.acceptsFile(QStringLiteral("photo.png")));
  QVERIFY(tab.openFilter().contains(QStringLiteral("*.md")));
  const QString story = QString::fromUtf8("Once upon a time, caf\u00E9\nthe end");
  QFile file(files.filePath("story.md"));
  QVERIFY(file.open(QIODevice::WriteOnly));
  file.write(story.toUtf8());
  file.close();
  // opened
  tab.openFile(files.filePath("story.md"));
  QCOMPARE(tab.promptEditor()->toPlainText(), story);
  QCOMPARE(recent.size(), 1);
  // dropped on the tab, and on the prompt editor
  QFile other(files.filePath("other.txt"));
  QVERIFY(other.open(QIODevice::WriteOnly));
  other.write("dropped text");
  other.close();
  for (QWidget* target : {static_cast<QWidget*>(&tab), tab.promptEditor()->viewport()}) {
    tab.promptEditor()->clear();
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(files.filePath("other.txt"))});
    QDragEnterEvent enter(QPoint(5, 5), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(5, 5), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &drop);
    QCOMPARE(tab.promptEditor()->toPlainText(), QStringLiteral("dropped text"));
  }
}

void TextTabTest::tooLargeOrUnreadableFileShowsError() {
  StudioContext context;
  TextTab tab(&context);
  QSignalSpy errors(&context, &StudioContext::errorShown);
  tab.promptEditor()->setPlainText(QStringLiteral("kept"));
  QTemporaryDir files;
  QFile big(files.filePath("big.txt"));
  QVERIFY(big.open(QIODevice::WriteOnly));
  big.write(QByteArray(TextTab::kMaxPromptFileBytes + 1, 'x'));
  big.close();
  QDir(files.path()).mkdir(QStringLiteral("folder.txt"));
  // A named pipe: opening it to read would wait for a writer, freezing the studio.
  QCOMPARE(::mkfifo(QFile::encodeName(files.filePath("pipe.txt")).constData(), 0600), 0);
  const QStringList names = {"big.txt", "missing.txt", "folder.txt", "pipe.txt"};
  for (const QString& name : names) {
    tab.openFile(files.filePath(name));
  }
  QCOMPARE(errors.size(), names.size());
  for (int i = 0; i < names.size(); ++i) {
    QVERIFY2(errors[i].first().toString().contains(names[i]), qPrintable(errors[i].first().toString()));
  }
  QCOMPARE(tab.promptEditor()->toPlainText(), QStringLiteral("kept"));
  // exactly 1 MB is fine
  QVERIFY(big.open(QIODevice::WriteOnly | QIODevice::Truncate));
  big.write(QByteArray(TextTab::kMaxPromptFileBytes, 'y'));
  big.close();
  tab.openFile(files.filePath("big.txt"));
  QCOMPARE(errors.size(), names.size());
  QCOMPARE(tab.promptEditor()->toPlainText().size(), TextTab::kMaxPromptFileBytes);
}

void TextTabTest::liveProbeShowsPatternPositions() {
  StudioContext context;
  auto tab = readyTab(context);
  QVERIFY(tab);
  QCOMPARE(tab->layerBox()->count(), 2);
  QCOMPARE(tab->headBox()->count(), 3);  // all heads, head 1, head 2
  tab->liveAttentionBox()->setChecked(true);
  tab->layerBox()->setCurrentIndex(tab->layerBox()->findData(1));
  tab->headBox()->setCurrentIndex(tab->headBox()->findData(1));
  std::vector<stx::engine::AttentionProbe> probes;
  connect(tab->host()->worker(), &EngineWorker::attentionProbe, tab.get(),
          [&](const stx::engine::AttentionProbe& p) { probes.push_back(p); });
  QVERIFY(generate(*tab, QStringLiteral("Hello"), 40, 2));
  QVERIFY(!probes.empty());
  std::set<int64_t> samples;
  for (const auto& p : probes) {
    QCOMPARE(p.layer, 1);
    QCOMPARE(p.head, 1);
    samples.insert(p.sample);
    QVERIFY(p.positions == pattern_at(p.position));
    QVERIFY(std::abs(std::accumulate(p.weights.begin(), p.weights.end(), 0.0) - 1.0) < 1e-3);
  }
  QCOMPARE(samples.size(), size_t{2});
  // the view keeps each sample's latest probe and draws it over that sample's characters
  for (int k = 0; k < 2; ++k) {
    tab->sampleBar()->setCurrentIndex(k);
    tab->view()->refreshNow();
    const TextView::Attention& a = tab->view()->attention(k);
    QCOMPARE(a.position, qint64{44});
    QVERIFY(a.positions == pattern_at(44));
    const Highlights h = highlights(*tab->view());
    QVERIFY(h.attended == shown_units(*tab->view(), a.positions));
    const int current = tab->view()->shownText().unitOfByte(44);
    if (tab->view()->shownText().units()[static_cast<size_t>(current)].charCount > 0)
      QCOMPARE(h.current, current);
  }
}

void TextTabTest::inspectHighlightsPatternPositions() {
  StudioContext context;
  auto tab = readyTab(context);
  QVERIFY(tab);
  tab->resize(1000, 700);
  tab->show();
  QVERIFY(QTest::qWaitForWindowExposed(tab.get()));
  QVERIFY(generate(*tab, QStringLiteral("Hello, world. "), 100, 1));
  TextView* view = tab->view();
  auto inspected = [&](qint64 position) {
    return wait_until([&] { return view->attention(0).position == position && !tab->busy(); });
  };
  // one head
  tab->layerBox()->setCurrentIndex(tab->layerBox()->findData(0));
  tab->headBox()->setCurrentIndex(tab->headBox()->findData(1));
  tab->inspectAt(80);
  QVERIFY(inspected(80));
  view->refreshNow();
  QVERIFY(view->attention(0).positions == pattern_at(80));
  Highlights h = highlights(*view);
  QVERIFY(h.attended == shown_units(*view, pattern_at(80)));
  QVERIFY(
      std::abs(std::accumulate(view->attention(0).weights.begin(), view->attention(0).weights.end(), 0.0) -
               1.0) < 1e-3);
  QVERIFY(tab->attentionNote()->text().contains(QStringLiteral("80")));
  // all heads averaged: every head of a merged model reads the same positions; the weights still sum to 1
  tab->headBox()->setCurrentIndex(tab->headBox()->findData(TextAttentionInspector::kAllHeads));
  tab->inspectAt(37);
  QVERIFY(inspected(37));
  view->refreshNow();
  QVERIFY(view->attention(0).positions == pattern_at(37));
  h = highlights(*view);
  QVERIFY(h.attended == shown_units(*view, pattern_at(37)));
  // The sample is random: byte 37 gets the generated marker only when it ends a character of its own (not
  // inside a multi-byte or invalid sequence), as in liveProbeShowsPatternPositions.
  const int unit37 = view->shownText().unitOfByte(37);
  if (view->shownText().units()[static_cast<size_t>(unit37)].charCount > 0) QCOMPARE(h.current, unit37);
  QVERIFY(
      std::abs(std::accumulate(view->attention(0).weights.begin(), view->attention(0).weights.end(), 0.0) -
               1.0) < 1e-3);
  // hovering a character inspects it: byte 2 is the first 'l' of the prompt
  const QPair<int, int> chars = view->charRange(2);
  QTextCursor cursor(view->document());
  cursor.setPosition(chars.first);
  const QRect left = view->cursorRect(cursor);
  cursor.setPosition(chars.first + 1);
  const QRect right = view->cursorRect(cursor);
  const QPoint middle((left.x() + right.x()) / 2, left.center().y());
  QCOMPARE(view->byteAt(middle), qint64{2});
  QTest::mouseMove(view->viewport(), middle);
  QVERIFY(inspected(2));
  QVERIFY(view->attention(0).positions == pattern_at(2));
  // many hovers in a row: only the last one is shown in the end, and nothing hangs
  for (qint64 p = 20; p < 60; ++p) tab->inspectAt(p);
  QVERIFY(inspected(59));
  QVERIFY(view->attention(0).positions == pattern_at(59));
}

void TextTabTest::settingsRoundTrip() {
  QTemporaryDir folder;
  QSettings settings(folder.filePath("studio.ini"), QSettings::IniFormat);
  {
    StudioContext context;
    auto tab = readyTab(context);
    QVERIFY(tab);
    tab->promptEditor()->setPlainText(QStringLiteral("Remember me"));
    tab->bytesToGenerateBox()->setValue(77);
    tab->stopStringEdit()->setText(QStringLiteral("\\n\\n"));
    tab->samplingControls()->temperatureBox()->setValue(0.7);
    tab->layerBox()->setCurrentIndex(tab->layerBox()->findData(1));
    tab->headBox()->setCurrentIndex(tab->headBox()->findData(TextAttentionInspector::kAllHeads));
    tab->liveAttentionBox()->setChecked(false);
    tab->saveSettings(settings);
  }
  StudioContext context;
  TextTab tab(&context);
  tab.restoreSettings(settings);
  QCOMPARE(tab.promptEditor()->toPlainText(), QStringLiteral("Remember me"));
  QCOMPARE(tab.bytesToGenerateBox()->value(), 77);
  QCOMPARE(tab.stopStringEdit()->text(), QStringLiteral("\\n\\n"));
  QCOMPARE(tab.samplingControls()->temperatureBox()->value(), 0.7);
  QVERIFY(!tab.liveAttentionBox()->isChecked());
  QVERIFY(wait_until([&] { return tab.modelReady(); }));
  QCOMPARE(tab.layerBox()->currentData().toInt(), 1);
  QCOMPARE(tab.headBox()->currentData().toInt(), TextAttentionInspector::kAllHeads);
}

// The continuation's accent must still read when the user's theme is dark.
void TextTabTest::accentStaysReadableOnADarkPalette() {
  TextView view;
  QVERIFY(view.accentColor().lightness() < 128);
  QPalette dark;
  dark.setColor(QPalette::Window, QColor(0x2B, 0x2B, 0x2B));
  dark.setColor(QPalette::WindowText, QColor(0xE0, 0xE0, 0xE0));
  dark.setColor(QPalette::Base, QColor(0x1E, 0x1E, 0x1E));
  dark.setColor(QPalette::Text, QColor(0xE0, 0xE0, 0xE0));
  view.setPalette(dark);
  QVERIFY(view.accentColor().lightness() > 128);
}

QTEST_MAIN(TextTabTest)
#include "test_text.moc"
