// The Image tab against a real (tiny, random) image model: 8x8 gray, context 64, strided l=8, merged heads,
// 2 layers x 2 heads. Every test drives the tab as a user would and checks what the user relies on.
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <memory>
#include <numeric>

#include "core/engine_host.h"
#include "core/job_progress.h"
#include "core/sampling_controls.h"
#include "core/studio_context.h"
#include "image/image_canvas.h"
#include "image/image_controls.h"
#include "image/image_tab.h"
#include "studio_test_support.h"
#include "stx/engine/data/image_io.h"
#include "stx/engine/pattern_view.h"
#include "stx/engine/export/png_writer.h"

using namespace stx::studio;
using stx::studio::test::make_tiny_model;
using stx::studio::test::wait_until;

namespace {

constexpr int kSide = 8;  // the tiny model's 8x8x1 images
constexpr int64_t kBytes = kSide * kSide;

std::vector<int64_t> pattern_both(int64_t position) {
  stx::engine::PatternSpec spec;
  spec.pattern = "strided";
  spec.n = kBytes;
  spec.stride = 8;
  return stx::engine::attended_positions(spec, stx::engine::PatternPart::both, position);
}

Bytes read_back(const QString& path) {
  return stx::engine::load_image_bytes(path.toStdString(), stx::engine::ImageShape{kSide, kSide, 1});
}

}  // namespace

class ImageTabTest : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  QString model_;
  StudioContext context_;
  QStringList errors_;

  std::unique_ptr<ImageTab> openTab() {
    auto tab = std::make_unique<ImageTab>(&context_);
    tab->resize(1200, 800);
    tab->useModel(model_);
    wait_until([&] { return tab->modelReady() && !tab->busy(); });  // announced before its job ends
    return tab;
  }
  // Generates with the tab's current settings and waits for the job to end.
  stx::engine::SampleResult generate(ImageTab& tab, int count, std::optional<uint64_t> seed = std::nullopt) {
    tab.samplingControls()->setSampleCount(count);
    tab.samplingControls()->randomSeedBox()->setChecked(!seed.has_value());
    if (seed) tab.samplingControls()->seedEdit()->setText(QString::number(*seed));
    tab.generate();
    wait_until([&] { return !tab.busy(); });
    return tab.lastResult();
  }
  QString writeGradientPng(const QString& name) {
    Bytes pixels(kBytes);
    for (int64_t i = 0; i < kBytes; ++i) pixels[i] = static_cast<uint8_t>(i * 4);
    const QString path = dir_.filePath(name);
    stx::engine::write_png(path.toStdString(), pixels.data(), kSide, kSide, 1);
    return path;
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    model_ = make_tiny_model(dir_.filePath("tiny-image"), "image");
    connect(&context_, &StudioContext::errorShown, this,
            [this](const QString& message) { errors_ << message; });
  }
  void init() { errors_.clear(); }

  void opensTheModelAndOffersItsLayersAndHeads() {
    auto tab = openTab();
    QVERIFY(tab->modelReady());
    QCOMPARE(tab->model()->name, std::string("tiny-image"));
    QCOMPARE(tab->canvas()->imageHeight(), kSide);
    QCOMPARE(tab->canvas()->imageChannels(), 1);
    QCOMPARE(tab->controls()->layerBox()->count(), 2);
    QCOMPARE(tab->controls()->headBox()->count(), 3);  // merged + 2 heads
    QCOMPARE(tab->controls()->headBox()->currentData().toInt(), -1);
    QCOMPARE(tab->keepRowsBox()->maximum(), kSide - 1);
    QVERIFY(errors_.isEmpty());
  }

  void generateFillsEveryPixelOfBothSamplesFromTheStream() {
    auto tab = openTab();
    int bytesEvents = 0;
    connect(tab->host()->worker(), &EngineWorker::sampleBytes, tab.get(), [&] { ++bytesEvents; });
    QStringList statusModels;
    connect(&context_, &StudioContext::statusChanged, tab.get(),  // the tab as context: gone with this test
            [&](const QObject*, const QString& model, const QString&, double) { statusModels << model; });
    const stx::engine::SampleResult result = generate(*tab, 2);
    QVERIFY(!result.cancelled);
    QCOMPARE(result.samples.size(), size_t(2));
    QVERIFY(bytesEvents >= 2);
    QCOMPARE(tab->canvas()->sampleCount(), 2);
    for (int k = 0; k < 2; ++k) {
      QCOMPARE(tab->canvas()->receivedBytes(k), kBytes);  // every pixel arrived through SampleBytes
      QCOMPARE(tab->canvas()->samples()[k], result.samples[k]);
    }
    QCOMPARE(tab->samples(), result.samples);
    // The seed shown is the seed used.
    QCOMPARE(tab->samplingControls()->seedEdit()->text(), QString::number(result.seed));
    QVERIFY(statusModels.contains("tiny-image"));
    QVERIFY(tab->canExport());
    QVERIFY(tab->generateButton()->isEnabled());
  }

  void aFixedSeedGivesTheSameImagesTwice() {
    auto tab = openTab();
    const stx::engine::SampleResult first = generate(*tab, 3, 42);
    const std::vector<Bytes> shown = tab->canvas()->samples();
    const stx::engine::SampleResult second = generate(*tab, 3, 42);
    QCOMPARE(first.seed, uint64_t(42));
    QCOMPARE(second.samples, first.samples);
    QCOMPARE(tab->canvas()->samples(), shown);
  }

  void stopEndsTheGenerationAsCancelled() {
    auto tab = openTab();
    tab->samplingControls()->setSampleCount(16);
    tab->generate();
    QVERIFY(tab->busy());
    QVERIFY(tab->progress()->stopButton()->isEnabled());
    // The tiny model draws 16 samples in milliseconds, so Stop comes while the job still waits in the
    // engine's queue: EngineHost promises that such a job stops too, before its first byte.
    tab->progress()->stopButton()->click();
    QVERIFY(wait_until([&] { return !tab->busy(); }, 10000));
    QVERIFY(tab->lastResult().cancelled);
    QVERIFY(!tab->canvas()->complete(0));
    QVERIFY(tab->progress()->label()->text().contains("Stopped"));
    QVERIFY(tab->generateButton()->isEnabled());
    QVERIFY(errors_.isEmpty());
    // The tab is still usable: the next run completes.
    QVERIFY(!generate(*tab, 1).cancelled);
    QVERIFY(tab->canvas()->complete(0));
  }

  void regenerateFromARowKeepsTheRowsAbove() {
    auto tab = openTab();
    generate(*tab, 2, 42);
    const std::vector<Bytes> before = tab->samples();
    // given: sample #2 clicked and the line at row 3
    tab->show();
    QVERIFY(QTest::qWaitForWindowExposed(tab.get()));
    QTest::mouseClick(tab->canvas(), Qt::LeftButton, {}, tab->canvas()->sampleRect(1).center());
    QCOMPARE(tab->canvas()->selectedSample(), 1);
    QVERIFY(tab->regenerateButton()->isEnabled());
    tab->keepRowsBox()->setValue(3);
    QCOMPARE(tab->canvas()->cutRow(), 3);
    int64_t promptBytes = -1, count = -1;
    connect(tab->host()->worker(), &EngineWorker::sampleStarted, tab.get(),
            [&](const stx::engine::SampleStarted& s) { promptBytes = s.prompt_bytes, count = s.count; });
    // when
    tab->regenerateButton()->click();
    QVERIFY(wait_until([&] { return !tab->busy(); }));
    // then: the first 3 rows are kept, the sample is whole again, the other is untouched
    const int64_t keep = 3 * kSide;
    QCOMPARE(promptBytes, keep);
    QCOMPARE(count, int64_t(1));
    const Bytes& after = tab->samples()[1];
    QCOMPARE(after.size(), size_t(kBytes));
    QVERIFY(std::equal(after.begin(), after.begin() + keep, before[1].begin()));
    QCOMPARE(tab->canvas()->samples()[1], after);
    QVERIFY(tab->canvas()->complete(1));
    QCOMPARE(tab->samples()[0], before[0]);
    QCOMPARE(tab->samplingControls()->seedEdit()->text(), QString::number(tab->lastResult().seed));
  }

  void exportWritesPngsThatReadBackEqual() {
    auto tab = openTab();
    const stx::engine::SampleResult result = generate(*tab, 2, 7);
    const QString one = dir_.filePath("one.png");
    QVERIFY(tab->exportSample(1, one, stx::engine::Overwrite::Refuse));
    QCOMPARE(read_back(one), result.samples[1]);
    QFile file(one);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray png = file.readAll();
    QVERIFY(png.contains(QByteArray("Seed") + '\0' + "7"));
    QVERIFY(png.contains(QByteArray("Model") + '\0' + "tiny-image"));
    QVERIFY(png.contains(QByteArray("Prompt") + '\0' + "unconditional"));
    QVERIFY(png.contains(QByteArray("Model hash") + '\0' +
                         QByteArray::fromStdString(tab->model()->weights_hash)));
    // Refused over an existing file, with the reason shown and the file left as it was.
    QVERIFY(!tab->exportSample(0, one, stx::engine::Overwrite::Refuse));
    QCOMPARE(errors_.size(), 1);
    QVERIFY(errors_.front().contains("one.png"));
    QCOMPARE(read_back(one), result.samples[1]);
    // All: numbered files.
    QVERIFY(tab->exportAll(dir_.filePath("all.png"), stx::engine::Overwrite::Refuse));
    QCOMPARE(read_back(dir_.filePath("all-1.png")), result.samples[0]);
    QCOMPARE(read_back(dir_.filePath("all-2.png")), result.samples[1]);
  }

  void liveProbeShowsThePatternsPositions_data() {
    QTest::addColumn<int>("layer");
    QTest::addColumn<int>("headIndex");  // in the head picker: 0 merged, 1 head 1, 2 head 2
    QTest::newRow("layer 1, merged") << 0 << 0;
    QTest::newRow("layer 2, head 2") << 1 << 2;
  }
  void liveProbeShowsThePatternsPositions() {
    QFETCH(int, layer);
    QFETCH(int, headIndex);
    auto tab = openTab();
    tab->controls()->layerBox()->setCurrentIndex(layer);
    tab->controls()->headBox()->setCurrentIndex(headIndex);
    std::vector<stx::engine::AttentionProbe> probes;
    bool overlayMatched = true;
    connect(tab->host()->worker(), &EngineWorker::attentionProbe, tab.get(),
            [&](const stx::engine::AttentionProbe& p) {
              probes.push_back(p);
              // Connected after the tab: the tab has drawn this probe over its sample's cell.
              const AttentionOverlay& shown = tab->canvas()->attention(static_cast<int>(p.sample));
              overlayMatched =
                  overlayMatched && shown.position == p.position && shown.positions == p.positions;
            });
    generate(*tab, 2);
    QVERIFY(!probes.empty());
    QVERIFY(overlayMatched);
    for (const stx::engine::AttentionProbe& p : probes) {
      QCOMPARE(p.layer, layer);
      QCOMPARE(p.head, std::max(0, headIndex - 1));  // merged is head 1 while generating
      // A merged strided model: every head of every layer reads A1 ∪ A2.
      QCOMPARE(p.positions, pattern_both(p.position));
    }
  }

  void inspectingAPixelShowsWeightsOverThePattern_data() {
    QTest::addColumn<int>("headIndex");
    QTest::newRow("merged: heads averaged") << 0;
    QTest::newRow("head 2") << 2;
  }
  void inspectingAPixelShowsWeightsOverThePattern() {
    QFETCH(int, headIndex);
    auto tab = openTab();
    tab->controls()->layerBox()->setCurrentIndex(1);
    tab->controls()->headBox()->setCurrentIndex(headIndex);
    generate(*tab, 2, 3);
    QVERIFY(tab->canvas()->attention(0).position < 0);  // the live overlay is gone after the run
    tab->inspectAt(0, 40);
    QVERIFY(wait_until([&] { return tab->canvas()->attention(0).position == 40; }));
    const AttentionOverlay& shown = tab->canvas()->attention(0);
    QCOMPARE(shown.positions, pattern_both(40));
    const double total = std::accumulate(shown.weights.begin(), shown.weights.end(), 0.0);
    QVERIFY2(std::abs(total - 1.0) < 1e-4, qPrintable(QString::number(total)));
    for (float w : shown.weights) QVERIFY(w >= 0);
  }

  void hoveringASamplesPixelInspectsIt() {
    auto tab = openTab();
    generate(*tab, 2, 5);
    tab->show();
    QVERIFY(QTest::qWaitForWindowExposed(tab.get()));
    const QRect cell = tab->canvas()->sampleRect(1);
    const double scale = double(cell.width()) / kSide;
    QVERIFY(scale >= 10);  // a readable zoom
    // row 5, column 2
    const QPoint point(cell.left() + int(2.5 * scale), cell.top() + int(5.5 * scale));
    QTest::mouseMove(tab->canvas(), point);
    QVERIFY(wait_until([&] { return tab->canvas()->attention(1).position == 5 * kSide + 2; }));
    QCOMPARE(tab->canvas()->attention(1).positions, pattern_both(5 * kSide + 2));
  }

  void anOpenedImageIsCompletedFromItsKeptRows() {
    auto tab = openTab();
    const QString path = writeGradientPng("shoe.png");
    QVERIFY(tab->acceptsFile(path));
    QVERIFY(!tab->acceptsFile(dir_.filePath("notes.txt")));
    QStringList recent;
    connect(&context_, &StudioContext::recentFileAdded, tab.get(), [&](const QString& p) { recent << p; });
    tab->openFile(path);
    QVERIFY(wait_until([&] { return !tab->promptImage().empty(); }));
    QCOMPARE(tab->promptImage(), read_back(path));
    QVERIFY(tab->canvas()->hasPrompt());
    QCOMPARE(tab->keepRowsBox()->value(), kSide / 2);  // a fresh image starts half kept
    QVERIFY(recent.contains(path));
    const stx::engine::SampleResult result = generate(*tab, 2, 11);
    const int64_t keep = (kSide / 2) * kSide;
    for (const Bytes& sample : result.samples) {
      QVERIFY(std::equal(sample.begin(), sample.begin() + keep, tab->promptImage().begin()));
    }
    const QString out = dir_.filePath("completed.png");
    QVERIFY(tab->exportSample(0, out, stx::engine::Overwrite::Refuse));
    QFile file(out);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray png = file.readAll();
    QVERIFY(png.contains(QByteArray("Prompt") + '\0' + "rows 0-3 of shoe.png"));
    QVERIFY(png.contains(QByteArray("Prompt rows kept") + '\0' + "4"));
    QVERIFY(png.contains(QByteArray("Sample") + '\0' + "1 of 2"));  // with the seed, enough to decode it again
  }

  void draggingTheLineChoosesTheRowsKept() {
    auto tab = openTab();
    tab->openFile(writeGradientPng("drag.png"));
    QVERIFY(wait_until([&] { return !tab->promptImage().empty(); }));
    tab->show();
    QVERIFY(QTest::qWaitForWindowExposed(tab.get()));
    const QRect prompt = tab->canvas()->promptRect();
    QVERIFY(!prompt.isEmpty());
    const double scale = double(prompt.height()) / kSide;
    QTest::mousePress(tab->canvas(), Qt::LeftButton, {},
                      QPoint(prompt.center().x(), prompt.top() + int(1 * scale)));
    QTest::mouseMove(tab->canvas(), QPoint(prompt.center().x(), prompt.top() + int(3.5 * scale)));
    QTest::mouseMove(tab->canvas(), QPoint(prompt.center().x(), prompt.top() + int(6 * scale)));
    QTest::mouseRelease(tab->canvas(), Qt::LeftButton, {},
                        QPoint(prompt.center().x(), prompt.top() + int(6 * scale)));
    QCOMPARE(tab->keepRowsBox()->value(), 6);
    QCOMPARE(tab->canvas()->cutRow(), 6);
  }

  void aCorruptImageShowsAnErrorNamingTheFile() {
    auto tab = openTab();
    const QString path = dir_.filePath("broken.png");
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("\x89PNG\r\n\x1a\n this is not an image");
    file.close();
    tab->openFile(path);
    QVERIFY(wait_until([&] { return !errors_.isEmpty(); }));
    QVERIFY2(errors_.front().contains("broken.png"), qPrintable(errors_.front()));
    QVERIFY(tab->promptImage().empty());
    // Still usable.
    QVERIFY(!generate(*tab, 1).cancelled);
    QVERIFY(tab->canvas()->complete(0));
  }

  void generateWithoutAModelSaysSo() {
    ImageTab tab(&context_);
    tab.generate();
    QCOMPARE(errors_.size(), 1);
    QVERIFY2(errors_.front().contains("model"), qPrintable(errors_.front()));
    QVERIFY(!tab.busy());
  }

  void settingsAreRestored() {
    const QString ini = dir_.filePath("settings.ini");
    {
      auto tab = openTab();
      tab->samplingControls()->temperatureBox()->setValue(0.7);
      tab->samplingControls()->setSampleCount(6);
      tab->controls()->layerBox()->setCurrentIndex(1);
      tab->controls()->headBox()->setCurrentIndex(2);
      tab->liveAttentionBox()->setChecked(false);
      tab->openFile(writeGradientPng("remembered.png"));
      QVERIFY(wait_until([&] { return !tab->promptImage().empty(); }));
      QSettings settings(ini, QSettings::IniFormat);
      tab->saveSettings(settings);
    }
    ImageTab tab(&context_);
    QSettings settings(ini, QSettings::IniFormat);
    tab.restoreSettings(settings);
    QVERIFY(wait_until([&] { return tab.modelReady(); }));  // the last model opens again
    QCOMPARE(tab.samplingControls()->temperatureBox()->value(), 0.7);
    QCOMPARE(tab.samplingControls()->sampleCount(), 6);
    QCOMPARE(tab.controls()->layerBox()->currentData().toInt(), 1);
    QCOMPARE(tab.controls()->headBox()->currentData().toInt(), 1);
    QVERIFY(!tab.liveAttentionBox()->isChecked());
    QSettings again(dir_.filePath("settings-again.ini"), QSettings::IniFormat);
    tab.saveSettings(again);
    QCOMPARE(again.value("imageFolder").toString(), QFileInfo(dir_.path()).absoluteFilePath());
    QCOMPARE(again.value("model").toString(), QFileInfo(model_).absoluteFilePath());
  }

  void theCanvasDrawsRgbAndShowsPendingPixelsAsAChecker() {
    // given: a 4x4 RGB sample with two whole pixels, a third with only its red byte, and a live overlay
    ImageCanvas canvas;
    canvas.resize(420, 320);
    canvas.setShape(4, 4, 3);
    canvas.resetSamples(1);
    const uint8_t bytes[] = {255, 0, 0, 0, 255, 0, 200};
    canvas.writeBytes(0, 0, bytes, 7);
    canvas.setAttention(
        0, AttentionOverlay{6, {0, 1, 2, 3, 4, 5, 6}, {0.1f, 0.1f, 0.1f, 0.2f, 0.2f, 0.2f, 0.1f}});
    QCOMPARE(canvas.receivedBytes(0), qint64(7));
    // when
    const QImage shot = canvas.grab().toImage();
    // then: an integer zoom of 50 (4 px -> 200 px), pixels in their colours, pending ones dim gray
    const QRect cell = canvas.sampleRect(0);
    QCOMPARE(cell.width(), 200);
    auto at = [&](int row, int column) {
      return shot.pixelColor(cell.left() + column * 50 + 25, cell.top() + row * 50 + 25);
    };
    canvas.clearAttention();
    const QImage plain = canvas.grab().toImage();
    auto plainAt = [&](int row, int column) {
      return plain.pixelColor(cell.left() + column * 50 + 25, cell.top() + row * 50 + 25);
    };
    QCOMPARE(plainAt(0, 0), QColor(255, 0, 0));
    QCOMPARE(plainAt(0, 1), QColor(0, 255, 0));
    const QColor pending = plainAt(0, 2);  // the red byte alone does not make a pixel
    auto dimGray = [](const QColor& c) {
      return std::abs(c.red() - c.green()) < 8 && c.red() < 80 && c.blue() < 80;
    };
    QVERIFY(dimGray(pending));
    QVERIFY(dimGray(plainAt(3, 3)));
    QVERIFY(plainAt(3, 3) != plainAt(3, 2));  // a checker: neighbours differ
    // The overlay tints the attended pixels orange (more red than blue) where the plain image had none.
    QVERIFY(at(0, 1).red() > 100 && at(0, 1).red() > at(0, 1).blue());
    QCOMPARE(at(2, 2), plainAt(2, 2));  // not attended: untouched
  }

  // A small window: the grid zooms out and the panel scrolls, so that no sample is cut off.
  void aSmallWindowShowsEverySample() {
    auto tab = openTab();
    tab->resize(960, 620);
    tab->show();
    QVERIFY(QTest::qWaitForWindowExposed(tab.get()));
    generate(*tab, 6, 2024);
    QTest::qWait(80);  // one coalesced repaint
    QVERIFY(tab->canvas()->sampleRect(5).bottom() < tab->canvas()->height());
  }
};

QTEST_MAIN(ImageTabTest)
#include "test_image.moc"
