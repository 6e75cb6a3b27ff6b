// The training wizard, driven as a user would: pick a text folder, fine-tune a tiny model, watch it train,
// pause, cancel, close, resume. Runs offscreen with a private model library per test.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QImage>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QRadioButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QtCharts/QLineSeries>
#include <QtCharts/QValueAxis>
#include <cmath>
#include <memory>

#include "core/device_box.h"
#include "core/studio_context.h"
#include "studio_test_support.h"
#include "stx/engine/device.h"
#include "stx/engine/export/export.h"
#include "stx/engine/model_session.h"
#include "stx/engine/mulaw.h"
#include "wizard/base_model_page.h"
#include "wizard/data_page.h"
#include "wizard/finish_page.h"
#include "wizard/run_page.h"
#include "wizard/sample_view.h"
#include "wizard/settings_page.h"
#include "wizard/train_wizard.h"
#include "wizard/training_chart.h"

using namespace stx::studio;
using stx::studio::test::make_tiny_model;
using stx::studio::test::wait_until;

namespace {

// A few KB of readable text per file, different in each file.
void write_text_folder(const QString& folder, int files) {
  QDir().mkpath(folder);
  for (int f = 0; f < files; ++f) {
    QFile file(QDir(folder).filePath(QStringLiteral("part-%1.txt").arg(f)));
    QVERIFY(file.open(QIODevice::WriteOnly));
    QByteArray text;
    for (int line = 0; text.size() < 3000; ++line) {
      text += QStringLiteral("Line %1 of part %2: the quick brown fox jumps over the lazy dog %3 times.\n")
                  .arg(line)
                  .arg(f)
                  .arg(line * 7 + f)
                  .toUtf8();
    }
    file.write(text);
  }
}

// Four 40x40 gray images (stripes of different widths) and a file that only pretends to be a PNG.
void write_image_folder(const QString& folder) {
  QDir().mkpath(folder);
  for (int i = 0; i < 4; ++i) {
    QImage image(40, 40, QImage::Format_Grayscale8);
    for (int y = 0; y < 40; ++y) {
      for (int x = 0; x < 40; ++x) image.scanLine(y)[x] = ((x / (i + 2)) % 2) ? 255 : 0;
    }
    QVERIFY(image.save(QDir(folder).filePath(QStringLiteral("stripes-%1.png").arg(i))));
  }
  QFile fake(QDir(folder).filePath(QStringLiteral("broken.png")));
  QVERIFY(fake.open(QIODevice::WriteOnly));
  fake.write("not a png at all");
}

// Clicks `button` on the next message box that opens (within 20 s); its text lands in *text.
void answer_next_message_box(QMessageBox::StandardButton button, QString* text = nullptr) {
  auto* timer = new QTimer;
  auto tries = std::make_shared<int>(0);
  QObject::connect(timer, &QTimer::timeout, [timer, button, text, tries] {
    if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
      // Stopped at once: deleteLater waits for the outer event loop, and a live timer would answer the next box.
      timer->stop();
      timer->deleteLater();
      if (text) *text = box->text();
      box->button(button)->click();
    } else if (++*tries > 400) {
      timer->stop();
      timer->deleteLater();
    }
  });
  timer->start(50);
}

}  // namespace

class WizardTest : public QObject {
  Q_OBJECT

 private slots:
  void init();
  void emptyFolderKeepsNextDisabled();
  void imageAndAudioFoldersShowPreviews();
  void fineTuneEndToEnd();
  void presetEstimateCanBeCancelled();
  void baseModelBringsItsTrainingBatch();
  void settingsOfferTheGpuOnlyWhenPresent();
  void imageRunShowsImageSamples();
  void cancelDuringRunKeepsCheckpoint();
  void resumeOfferResumesAndClosingKeepsCheckpoint();

 private:
  // Data page -> base model (the tiny text model) -> settings -> run. Returns once training started.
  void driveToRun(TrainWizard& wizard, int steps, int checkpointEvery);
  // Data page (a folder of `kind`) -> base model `base` -> the settings page.
  void driveToSettings(TrainWizard& wizard, const QString& kind, const QString& folder, const QString& base);

  std::unique_ptr<QTemporaryDir> home_;  // per test: data folder, tiny model, model library
  QString data_, tinyModel_, library_;
  StudioContext context_;
};

void WizardTest::init() {
  home_ = std::make_unique<QTemporaryDir>();
  QVERIFY(home_->isValid());
  library_ = home_->filePath(QStringLiteral("library"));
  qputenv("STX_STUDIO_MODELS_DIR", library_.toUtf8());
  data_ = home_->filePath(QStringLiteral("data"));
  write_text_folder(data_, 4);
  // An empty file is what the engine skips (as root, a mode-000 file would still be readable).
  QFile empty(QDir(data_).filePath(QStringLiteral("empty.txt")));
  QVERIFY(empty.open(QIODevice::WriteOnly));
  empty.close();
  tinyModel_ = make_tiny_model(home_->filePath(QStringLiteral("tiny-text")), QStringLiteral("text"));
}

void WizardTest::driveToRun(TrainWizard& wizard, int steps, int checkpointEvery) {
  wizard.show();
  QVERIFY(wait_until([&] { return wizard.currentId() == TrainWizard::DataPageId; }));
  DataPage* data = wizard.dataPage();
  data->setKind(QStringLiteral("text"));
  data->setFolder(data_);
  QVERIFY(wait_until([&] { return data->scanUpToDate(); }));
  QVERIFY2(data->isComplete(), qPrintable(data->problem()));
  wizard.next();
  QCOMPARE(wizard.currentId(), int(TrainWizard::BaseModelPageId));
  wizard.baseModelPage()->chooseBaseModel(tinyModel_);
  QCOMPARE(wizard.field("baseModel").toString(), QFileInfo(tinyModel_).absoluteFilePath());
  wizard.next();
  QCOMPARE(wizard.currentId(), int(TrainWizard::SettingsPageId));
  SettingsPage* settings = wizard.settingsPage();
  QVERIFY(wait_until([&] { return !settings->estimating(); }, 60000));
  settings->stepsSpin()->setValue(steps);
  settings->batchSpin()->setValue(2);
  settings->checkpointSpin()->setValue(checkpointEvery);
  wizard.next();
  QCOMPARE(wizard.currentId(), int(TrainWizard::RunPageId));
  QVERIFY(wizard.runPage()->training());
}

void WizardTest::driveToSettings(TrainWizard& wizard, const QString& kind, const QString& folder,
                                 const QString& base) {
  wizard.show();
  wizard.dataPage()->setKind(kind);
  wizard.dataPage()->setFolder(folder);
  QVERIFY(wait_until([&] { return wizard.dataPage()->scanUpToDate(); }));
  wizard.next();
  wizard.baseModelPage()->chooseBaseModel(base);
  wizard.next();
  QCOMPARE(wizard.currentId(), int(TrainWizard::SettingsPageId));
}

void WizardTest::emptyFolderKeepsNextDisabled() {
  // given an empty folder
  const QString emptyFolder = home_->filePath(QStringLiteral("nothing"));
  QDir().mkpath(emptyFolder);
  TrainWizard wizard(&context_);
  wizard.show();
  DataPage* page = wizard.dataPage();
  // when it is chosen as text data
  page->setKind(QStringLiteral("text"));
  page->setFolder(emptyFolder);
  QVERIFY(wait_until([&] { return page->scanUpToDate(); }));
  // then Next stays disabled and the page says why
  QVERIFY(!page->isComplete());
  QVERIFY(!wizard.button(QWizard::NextButton)->isEnabled());
  QVERIFY(page->problemLabel()->isVisible());
  QVERIFY2(page->problemLabel()->text().contains(QStringLiteral("no readable text files")),
           qPrintable(page->problemLabel()->text()));

  // and a usable folder enables it, listing the empty file as skipped
  page->setFolder(data_);
  QVERIFY(wait_until([&] { return page->scanUpToDate(); }));
  QVERIFY(page->isComplete());
  QVERIFY(wizard.button(QWizard::NextButton)->isEnabled());
  QCOMPARE(page->scan().files, qint64(4));
  QCOMPARE(page->skippedList()->count(), 1);
  QVERIFY(page->skippedList()->item(0)->text().contains(QStringLiteral("empty.txt")));
  QVERIFY2(page->summaryLabel()->text().startsWith(QStringLiteral("4 files · ")),
           qPrintable(page->summaryLabel()->text()));
  QCOMPARE(page->previews().size(), 1);
  QVERIFY(page->previews().front()->text().startsWith(QStringLiteral("Line 0 of part 0")));
}

void WizardTest::imageAndAudioFoldersShowPreviews() {
  // given four images and a file that only pretends to be a PNG
  const QString images = home_->filePath(QStringLiteral("images"));
  write_image_folder(images);

  TrainWizard wizard(&context_);
  wizard.show();
  DataPage* page = wizard.dataPage();
  page->setKind(QStringLiteral("image"));
  page->setFolder(images);
  QVERIFY(wait_until([&] { return page->scanUpToDate(); }));
  // then the images are read at image-small's 28x28x1, shown as thumbnails, and the fake one is skipped
  QVERIFY2(page->isComplete(), qPrintable(page->problem()));
  QCOMPARE(page->scan().files, qint64(4));
  QVERIFY(page->summaryLabel()->text().startsWith(QStringLiteral("4 images at 28x28x1")));
  QVERIFY(!page->previews().isEmpty());
  const QImage thumbnail = page->previews().front()->image();
  QCOMPARE(thumbnail.size(), QSize(28, 28));
  QCOMPARE(page->skippedList()->count(), 1);
  QVERIFY(page->skippedList()->item(0)->text().contains(QStringLiteral("broken.png")));

  // given two seconds of a 440 Hz tone, swelling and fading twice a second, in each of two WAV files
  const QString sounds = home_->filePath(QStringLiteral("sounds"));
  QDir().mkpath(sounds);
  std::vector<uint8_t> tone(2 * 12000);
  for (size_t i = 0; i < tone.size(); ++i) {
    const double t = static_cast<double>(i) / 12000.0;
    tone[i] = stx::engine::mulaw_encode(
        static_cast<float>(0.6 * std::abs(std::sin(2 * M_PI * t)) * std::sin(2 * M_PI * 440.0 * t)));
  }
  for (int i = 0; i < 2; ++i) {
    stx::engine::write_wav(QDir(sounds).filePath(QStringLiteral("tone-%1.wav").arg(i)).toStdString(),
                           tone.data(), tone.size(), 12000, stx::engine::ExportInfo{});
  }
  page->setKind(QStringLiteral("audio"));
  page->setFolder(sounds);
  QVERIFY(wait_until([&] { return page->scanUpToDate(); }));
  // then the page shows the duration and a waveform of the tone's amplitude
  QVERIFY2(page->isComplete(), qPrintable(page->problem()));
  QVERIFY2(page->summaryLabel()->text().contains(QStringLiteral("0:04 of audio")),
           qPrintable(page->summaryLabel()->text()));
  QCOMPARE(page->previews().size(), 1);
  float loudest = 0;
  for (const auto& [low, high] : page->previews().front()->peaks()) loudest = std::max(loudest, high);
  QVERIFY(loudest > 0.5f && loudest < 0.7f);
}

void WizardTest::fineTuneEndToEnd() {
  TrainWizard wizard(&context_);
  QSignalSpy ready(&wizard, &TrainWizard::modelReady);
  wizard.show();
  DataPage* data = wizard.dataPage();
  data->setKind(QStringLiteral("text"));
  data->setFolder(data_);
  QVERIFY(wait_until([&] { return data->scanUpToDate(); }));
  QVERIFY(data->isComplete());
  QVERIFY(data->skippedList()->isVisible());

  // Base model: the tiny model, placed in the library, is listed; it is chosen for fine-tuning.
  QDir().mkpath(library_);
  const QString libraryModel =
      make_tiny_model(QDir(library_).filePath(QStringLiteral("tiny-in-library")), QStringLiteral("text"));
  wizard.next();
  BaseModelPage* base = wizard.baseModelPage();
  QVERIFY(!base->modelList()->findItems(QStringLiteral("tiny-in-library"), Qt::MatchStartsWith).isEmpty());
  QVERIFY(base->presetCombo()->findData(QStringLiteral("text-small")) >= 0);
  QCOMPARE(base->presetCombo()->findData(QStringLiteral("image-small")), -1);
  base->chooseBaseModel(tinyModel_);
  QVERIFY(base->isComplete());

  // Settings: the estimate runs by itself and shows a positive time per step.
  wizard.next();
  SettingsPage* settings = wizard.settingsPage();
  QVERIFY(wait_until([&] { return !settings->estimating(); }, 60000));
  QVERIFY(settings->estimate().has_value());
  QVERIFY(settings->estimate()->seconds_per_step > 0);
  QVERIFY2(settings->estimateLabel()->text().contains(QStringLiteral("Time per step")),
           qPrintable(settings->estimateLabel()->text()));
  QVERIFY(!settings->contextSpin()->isEnabled());  // fixed by the fine-tuned model
  QCOMPARE(settings->contextSpin()->value(), 128);
  settings->stepsSpin()->setValue(6);
  settings->batchSpin()->setValue(2);
  settings->checkpointSpin()->setValue(2);
  // An existing non-empty folder is refused.
  QDir(library_).mkpath(QStringLiteral("taken/inside"));
  const QString defaultName = settings->nameEdit()->text();
  settings->nameEdit()->setText(QStringLiteral("taken"));
  QVERIFY(!settings->isComplete());
  QVERIFY(!settings->folderProblem().isEmpty());
  settings->nameEdit()->setText(QStringLiteral("my-text-model"));
  QVERIFY(settings->isComplete());
  QVERIFY(!defaultName.isEmpty());
  const QString runFolder = QDir(library_).filePath(QStringLiteral("my-text-model"));
  QCOMPARE(wizard.runFolder(), runFolder);

  // Run: trains to the end; curves have points, a sample from a checkpoint is shown.
  wizard.next();
  RunPage* run = wizard.runPage();
  QVERIFY(run->training());
  QVERIFY(!wizard.button(QWizard::NextButton)->isEnabled());
  QVERIFY(wait_until([&] { return run->state() == RunPage::State::finished; }, 180000));
  QVERIFY2(QFile::exists(QDir(runFolder).filePath(QStringLiteral("latest.json"))),
           qPrintable(run->statusLabel()->text()));
  const stx::engine::ModelSummary trained = stx::engine::describe_model(runFolder.toStdString());
  QCOMPARE(trained.steps_trained, int64_t(6));
  QCOMPARE(trained.kind, std::string("text"));
  QVERIFY(run->chart()->lossSeries()->count() >= 3);
  QVERIFY(run->chart()->validationSeries()->count() >= 1);
  QVERIFY(run->chart()->bitsAxis()->max() > run->chart()->bitsAxis()->min());
  QVERIFY(run->lastValidation().has_value());
  QVERIFY(wait_until([&] { return run->samplesShown() > 0; }, 60000));
  QVERIFY(!run->sampleView()->text().isEmpty());
  QVERIFY(wizard.button(QWizard::NextButton)->isEnabled());

  // Finish: says where the model is and its bits/byte; Finish emits modelReady(kind, folder).
  wizard.next();
  QCOMPARE(wizard.currentId(), int(TrainWizard::FinishPageId));
  const QString text = wizard.finishPage()->textLabel()->text();
  QVERIFY2(text.contains(QStringLiteral("my-text-model")), qPrintable(text));
  QVERIFY(text.contains(QStringLiteral("bits/byte")));
  QCOMPARE(wizard.finishPage()->finalBitsPerByte(), *run->lastValidation());
  wizard.button(QWizard::FinishButton)->click();
  QCOMPARE(ready.count(), 1);
  QCOMPARE(ready.at(0).at(0).toString(), QStringLiteral("text"));
  QCOMPARE(ready.at(0).at(1).toString(), runFolder);
  Q_UNUSED(libraryModel);
}

void WizardTest::presetEstimateCanBeCancelled() {
  TrainWizard wizard(&context_);
  wizard.show();
  wizard.dataPage()->setKind(QStringLiteral("text"));
  wizard.dataPage()->setFolder(data_);
  QVERIFY(wait_until([&] { return wizard.dataPage()->scanUpToDate(); }));
  wizard.next();
  wizard.baseModelPage()->choosePreset(QStringLiteral("text-small"));
  QCOMPARE(wizard.field("preset").toString(), QStringLiteral("text-small"));
  QVERIFY(wizard.field("baseModel").toString().isEmpty());
  wizard.next();
  SettingsPage* settings = wizard.settingsPage();
  // A preset's context can be changed for text.
  QVERIFY(settings->contextSpin()->isEnabled());
  QCOMPARE(settings->contextSpin()->value(), 1024);
  QVERIFY(settings->estimating());      // started by showing the page
  settings->estimateButton()->click();  // = cancel
  QVERIFY(wait_until([&] { return !settings->estimating(); }, 60000));
  QVERIFY(!settings->estimate().has_value());
  QVERIFY2(settings->estimateLabel()->text().contains(QStringLiteral("cancelled")),
           qPrintable(settings->estimateLabel()->text()));
  const stx::engine::TrainOptions options = wizard.trainOptions();
  QCOMPARE(options.model.context, int64_t(1024));
  QVERIFY(!options.init_from.has_value());
  QVERIFY(!options.precision.has_value());  // the model's own unless asked
  // bf16 is offered only where the processor does it in hardware, and then reaches the options.
  QCOMPARE(settings->bf16Check()->isEnabled(), stx::models::cpu_has_fast_bf16());
  if (settings->bf16Check()->isEnabled()) {
    settings->bf16Check()->setChecked(true);
    QVERIFY(wizard.trainOptions().precision == stx::models::Precision::bf16);
  }
}

// A base model's context was chosen to fit its training batch in memory, so fine-tuning starts from that
// batch: the bundled audio model (65,536 samples, one a step) would need about 40 GB at the default 8.
void WizardTest::baseModelBringsItsTrainingBatch() {
  QFile config(QDir(tinyModel_).filePath(QStringLiteral("config.json")));
  QVERIFY(config.open(QIODevice::ReadOnly));
  QJsonObject json = QJsonDocument::fromJson(config.readAll()).object();
  config.close();
  json[QStringLiteral("training")] = QJsonObject{{QStringLiteral("batch"), 3}};
  QVERIFY(config.open(QIODevice::WriteOnly | QIODevice::Truncate));
  config.write(QJsonDocument(json).toJson());
  config.close();

  TrainWizard wizard(&context_);
  driveToSettings(wizard, QStringLiteral("text"), data_, tinyModel_);
  SettingsPage* settings = wizard.settingsPage();
  QCOMPARE(settings->batchSpin()->value(), 3);
  QVERIFY(wait_until([&] { return !settings->estimating(); }, 60000));
  QCOMPARE(wizard.trainOptions().batch, int64_t(3));
}

// The Settings page's device starts at Preferences > Device, fills TrainOptions::device, and offers the CUDA
// GPU only on a machine that has one.
void WizardTest::settingsOfferTheGpuOnlyWhenPresent() {
  const bool cuda = stx::engine::cuda_available();
  context_.setDevice(QStringLiteral("cpu"));
  {
    TrainWizard wizard(&context_);
    driveToSettings(wizard, QStringLiteral("text"), data_, tinyModel_);
    SettingsPage* settings = wizard.settingsPage();
    DeviceBox* device = settings->deviceBox();
    QCOMPARE(device->count(), 3);
    QCOMPARE(device->device(), QStringLiteral("cpu"));
    QCOMPARE(wizard.trainOptions().device, stx::engine::DeviceChoice::cpu);
    const auto enabled = [device](int index) {
      return device->model()->flags(device->model()->index(index, 0)).testFlag(Qt::ItemIsEnabled);
    };
    QCOMPARE(enabled(device->findData(QStringLiteral("cuda"))), cuda);
    QCOMPARE(settings->deviceNote()->isVisible(), !cuda);
    if (!cuda) {
      QVERIFY2(settings->deviceNote()->text().startsWith(QStringLiteral("CUDA GPU is off: ")),
               qPrintable(settings->deviceNote()->text()));
    }
    device->setDevice(QStringLiteral("auto"));
    QCOMPARE(wizard.trainOptions().device, stx::engine::DeviceChoice::automatic);
    QVERIFY(wait_until([&] { return !settings->estimating(); }, 60000));
  }
  // A preference this machine cannot run does not carry over: the wizard starts at Automatic instead.
  context_.setDevice(QStringLiteral("cuda"));
  {
    TrainWizard wizard(&context_);
    QCOMPARE(wizard.field(QStringLiteral("device")).toString(),
             cuda ? QStringLiteral("cuda") : QStringLiteral("auto"));
  }
  context_.setDevice(QStringLiteral("auto"));
}

void WizardTest::imageRunShowsImageSamples() {
  const QString images = home_->filePath(QStringLiteral("images"));
  write_image_folder(images);
  const QString tinyImage =
      make_tiny_model(home_->filePath(QStringLiteral("tiny-image")), QStringLiteral("image"));
  TrainWizard wizard(&context_);
  driveToSettings(wizard, QStringLiteral("image"), images, tinyImage);
  SettingsPage* settings = wizard.settingsPage();
  QVERIFY(!settings->contextSpin()->isEnabled());
  QCOMPARE(settings->contextSpin()->value(), 64);  // 8x8x1
  QVERIFY(wait_until([&] { return !settings->estimating(); }, 60000));
  settings->stepsSpin()->setValue(4);
  settings->batchSpin()->setValue(2);
  settings->checkpointSpin()->setValue(2);
  wizard.next();
  RunPage* run = wizard.runPage();
  QVERIFY(wait_until([&] { return run->state() == RunPage::State::finished; }, 120000));
  // The sample of an image model is a whole image of the model's shape.
  QVERIFY(wait_until([&] { return run->samplesShown() > 0; }, 60000));
  QCOMPARE(run->sampleView()->image().size(), QSize(8, 8));
  QCOMPARE(stx::engine::describe_model(run->runFolder().toStdString()).steps_trained, int64_t(4));
}

void WizardTest::cancelDuringRunKeepsCheckpoint() {
  TrainWizard wizard(&context_);
  driveToRun(wizard, 100000, 2);
  RunPage* run = wizard.runPage();
  QVERIFY(wait_until([&] { return !run->lastCheckpoint().isEmpty(); }, 120000));

  // Pause: stops with a checkpoint; Resume goes on in the same folder.
  run->pauseButton()->click();
  QVERIFY(wait_until([&] { return run->state() == RunPage::State::paused; }, 60000));
  QCOMPARE(run->pauseButton()->text(), QStringLiteral("&Resume"));
  const qint64 pausedAt = run->stepsDone();
  QCOMPARE(stx::engine::describe_model(run->runFolder().toStdString()).steps_trained, int64_t(pausedAt));
  run->pauseButton()->click();
  QVERIFY(run->training());
  QVERIFY(wait_until([&] { return run->stepsDone() > pausedAt + 2; }, 120000));

  // Cancel: stops, keeps the last checkpoint and says where.
  run->cancelButton()->click();
  QVERIFY(wait_until([&] { return run->state() == RunPage::State::cancelled; }, 60000));
  const stx::engine::ModelSummary kept = stx::engine::describe_model(run->runFolder().toStdString());
  QVERIFY(kept.steps_trained > pausedAt);
  QCOMPARE(kept.steps_trained, int64_t(run->stepsDone()));
  QCOMPARE(kept.steps_planned, int64_t(100000));
  QVERIFY2(run->statusLabel()->text().contains(QDir::toNativeSeparators(run->runFolder())),
           qPrintable(run->statusLabel()->text()));
  QVERIFY(run->isComplete());  // the partial model can still be finished
}

void WizardTest::resumeOfferResumesAndClosingKeepsCheckpoint() {
  // given a run that was stopped short of its planned steps
  QString stoppedFolder;
  qint64 stoppedAt = 0;
  {
    TrainWizard first(&context_);
    driveToRun(first, 100000, 2);
    RunPage* run = first.runPage();
    QVERIFY(wait_until([&] { return !run->lastCheckpoint().isEmpty(); }, 120000));
    run->cancelRun();
    QVERIFY(wait_until([&] { return run->state() == RunPage::State::cancelled; }, 60000));
    stoppedFolder = run->runFolder();
    stoppedAt = run->stepsDone();
  }
  QCOMPARE(TrainWizard::newestResumableRun(), stoppedFolder);

  // when a new wizard opens, it offers to resume that run, and yes jumps to the Run page
  TrainWizard wizard(&context_);
  QString question;
  answer_next_message_box(QMessageBox::Yes, &question);
  wizard.show();
  QVERIFY(wait_until([&] { return wizard.currentId() == TrainWizard::RunPageId; }));
  QVERIFY(question.contains(QDir::toNativeSeparators(stoppedFolder)));
  RunPage* run = wizard.runPage();
  QCOMPARE(wizard.resumeFolder(), stoppedFolder);
  QVERIFY(run->training());
  QVERIFY(wait_until([&] { return run->stepsDone() > stoppedAt + 2; }, 120000));
  QVERIFY(stx::engine::describe_model(stoppedFolder.toStdString()).steps_trained > stoppedAt);
  run->chart()->flush();
  QVERIFY(run->chart()->lossSeries()->count() > 0);

  // and closing it while it trains asks, then stops and waits for the final checkpoint
  answer_next_message_box(QMessageBox::No);
  wizard.reject();
  QVERIFY(wizard.isVisible());
  QVERIFY(run->training());
  answer_next_message_box(QMessageBox::Yes, &question);
  QVERIFY(wizard.close());
  QVERIFY(!wizard.isVisible());
  QVERIFY(!run->training());
  QVERIFY(question.contains(QStringLiteral("checkpoint")));
  const stx::engine::ModelSummary kept = stx::engine::describe_model(stoppedFolder.toStdString());
  QCOMPARE(kept.steps_trained, int64_t(run->stepsDone()));
  QVERIFY(kept.steps_trained < kept.steps_planned);
}

QTEST_MAIN(WizardTest)
#include "test_wizard.moc"
