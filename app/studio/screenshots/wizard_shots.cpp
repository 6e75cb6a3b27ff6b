// The training wizard's part of the screenshot tour: a user fine-tuning the bundled text model on a folder
// of notes, page by page, through a short run to its end.
#include <QDir>
#include <QFile>
#include <QSpinBox>
#include <QStringList>

#include "core/studio_context.h"
#include "screenshots/screenshot_writer.h"
#include "screenshots/tour_steps.h"
#include "wizard/base_model_page.h"
#include "wizard/data_page.h"
#include "wizard/run_page.h"
#include "wizard/settings_page.h"
#include "wizard/train_wizard.h"

namespace stx::studio {

namespace {

constexpr int kScanMs = 60000;
constexpr int kTrainMs = 300000;  // eight steps of the bundled text model, on a machine busy with other work
constexpr int kSettleMs = 100;

// Six files of plain sentences, some 40 KB: enough for the bundled model's 1,024-byte context to train on
// and to hold 5% out for validation.
QString write_notes(const QString& parent, QString* problem) {
  const QString folder = QDir(parent).filePath(QStringLiteral("notes"));
  QDir().mkpath(folder);
  const QStringList lines = {
      QStringLiteral("The light came over the hills in the morning, and the fields were white with frost."),
      QStringLiteral("We walked down to the river and counted the boats that were tied along the bank."),
      QStringLiteral("In the evening the wind turned, and the rain came in from the sea."),
      QStringLiteral("She wrote the names of the birds in a small book, one page for every day."),
  };
  for (int file = 0; file < 6; ++file) {
    QFile notes(QDir(folder).filePath(QStringLiteral("day-%1.txt").arg(file + 1)));
    if (!notes.open(QIODevice::WriteOnly)) {
      *problem = QStringLiteral("cannot write %1: %2").arg(notes.fileName(), notes.errorString());
      return {};
    }
    QByteArray text;
    for (int line = 0; text.size() < 7000; ++line) {
      text += (lines[(line + file) % lines.size()] + QLatin1Char('\n')).toUtf8();
    }
    notes.write(text);
  }
  return folder;
}

void settle() {
  wait_until([] { return false; }, kSettleMs);
}

}  // namespace

void shoot_train_wizard(ScreenshotWriter& writer, const TourModels& models, const QString& workFolder) {
  const QStringList pages = {QStringLiteral("wizard-data"), QStringLiteral("wizard-base-model"),
                             QStringLiteral("wizard-settings"), QStringLiteral("wizard-run"),
                             QStringLiteral("wizard-finish")};
  // The first page that cannot be reached takes the rest with it, each named with the reason.
  int shot = 0;
  auto failRest = [&](const QString& reason) {
    for (; shot < pages.size(); ++shot) writer.fail(pages[shot], reason);
  };
  auto save = [&](QWidget* wizard) {
    settle();
    writer.save(pages[shot++], wizard);
  };
  if (models.text.isEmpty()) {
    failRest(QStringLiteral("no bundled text model was found to fine-tune"));
    return;
  }
  QString problem;
  const QString notes = write_notes(workFolder, &problem);
  if (notes.isEmpty()) {
    failRest(problem);
    return;
  }

  StudioContext context;
  QString lastError;  // what the wizard showed the user, the reason when a page cannot be reached
  QObject::connect(&context, &StudioContext::errorShown,
                   [&](const QString& message) { lastError = message; });
  TrainWizard wizard(&context);
  wizard.show();

  DataPage* data = wizard.dataPage();
  data->setKind(QStringLiteral("text"));
  data->setFolder(notes);
  if (!wait_until([&] { return data->scanUpToDate(); }, kScanMs) || !data->isComplete()) {
    failRest(QStringLiteral("the Data page refused %1: %2").arg(notes, data->problem()));
    return;
  }
  save(&wizard);

  wizard.next();
  wizard.baseModelPage()->chooseBaseModel(models.text);
  save(&wizard);

  wizard.next();
  SettingsPage* settings = wizard.settingsPage();
  settings->stepsSpin()->setValue(8);
  settings->batchSpin()->setValue(2);
  settings->checkpointSpin()->setValue(4);
  // The estimate the page started on showing measured another batch: measure this one.
  wait_until([&] { return !settings->estimating(); }, kTrainMs);
  settings->startEstimate();
  wait_until([&] { return !settings->estimating(); }, kTrainMs);
  save(&wizard);

  wizard.next();
  RunPage* run = wizard.runPage();
  const bool ended = wait_until(
      [&] {
        return run->state() == RunPage::State::finished || run->state() == RunPage::State::failed ||
               run->state() == RunPage::State::cancelled;
      },
      kTrainMs);
  if (!ended || run->state() != RunPage::State::finished) {
    if (!ended) run->cancelRun();
    failRest(ended ? QStringLiteral("the training run failed: %1").arg(lastError)
                   : QStringLiteral("the training run did not end within %1 s").arg(kTrainMs / 1000));
    run->stopAndWait();
    return;
  }
  wait_until([&] { return run->samplesShown() > 0; }, kTrainMs);  // a sample from one of its checkpoints
  save(&wizard);

  wizard.next();
  save(&wizard);
  wizard.hide();
}

}  // namespace stx::studio
