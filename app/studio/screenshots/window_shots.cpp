// The main window's part of the screenshot tour: each tab after it has done its job, the log panel with an
// error, and the Preferences and About dialogs.
#include <QApplication>
#include <QCheckBox>
#include <QDialog>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QTimer>

#include "audio/audio_tab.h"
#include "core/engine_host.h"
#include "core/generation_tab.h"
#include "core/model_picker.h"
#include "core/sampling_controls.h"
#include "image/image_tab.h"
#include "models/models_tab.h"
#include "screenshots/screenshot_writer.h"
#include "screenshots/tour_steps.h"
#include "text/text_tab.h"
#include "text/text_view.h"
#include "window/error_banner.h"
#include "window/main_window.h"

namespace stx::studio {

namespace {

constexpr int kOpenMs = 120000;      // opening a bundled model, on a machine busy with other work
constexpr int kGenerateMs = 300000;  // one generation of the tour
constexpr int kSettleMs = 100;       // coalesced repaints and layouts run from the event loop

void settle() {
  wait_until([] { return false; }, kSettleMs);
}

// A fixed seed: the pictures stay the same from one run to the next, so a change shows in a diff.
void fix_seed(SamplingControls* sampling, int samples) {
  sampling->randomSeedBox()->setChecked(false);
  sampling->seedEdit()->setText(QStringLiteral("1"));
  sampling->setSampleCount(samples);
}

// The error the window showed since the banner was last cleared; empty when none.
QString shown_error(MainWindow& window) { return window.errorBanner()->message(); }

// Brings `kind`'s tab to the front with the bundled model open; the reason when it cannot.
QString open_model(MainWindow& window, const QString& kind, const QString& model) {
  if (model.isEmpty()) {
    return QStringLiteral(
               "no bundled %1 model was found (in share/stx-studio/models beside the program, in the source "
               "tree's models/bundled, or in the folder STX_BUNDLED_MODELS names)")
        .arg(kind);
  }
  auto* tab = static_cast<GenerationTab*>(window.tab(kind));
  window.tabs()->setCurrentWidget(tab);
  window.errorBanner()->hide();
  const QString folder = QFileInfo(model).absoluteFilePath();  // as the picker keeps it
  if (tab->modelPicker()->currentPath() != folder) tab->useModel(folder);
  const auto ready = [&] {
    return tab->modelReady() && !tab->host()->busy() && tab->modelPicker()->currentPath() == folder;
  };
  wait_until([&] { return ready() || !shown_error(window).isEmpty(); }, kOpenMs);
  if (ready()) return {};
  const QString shown = shown_error(window);
  return shown.isEmpty()
             ? QStringLiteral("the bundled %1 model did not open within %2 s").arg(kind).arg(kOpenMs / 1000)
             : shown;
}

// Presses Generate and waits for the run to end; the reason when it fails.
QString generate(MainWindow& window, StudioTab* tab, QPushButton* button) {
  window.errorBanner()->hide();
  button->click();
  wait_until([&] { return tab->busy(); }, 5000);
  if (!wait_until([&] { return !tab->busy(); }, kGenerateMs)) {
    tab->stop();
    return QStringLiteral("the generation did not end within %1 s").arg(kGenerateMs / 1000);
  }
  return shown_error(window);  // empty unless the generation failed
}

QString shoot_image_tab(MainWindow& window, const QString& model) {
  if (QString problem = open_model(window, QStringLiteral("image"), model); !problem.isEmpty())
    return problem;
  auto* tab = static_cast<ImageTab*>(window.tab(QStringLiteral("image")));
  fix_seed(tab->samplingControls(), 4);
  return generate(window, tab, tab->generateButton());
}

QString shoot_audio_tab(MainWindow& window, const QString& model) {
  if (QString problem = open_model(window, QStringLiteral("audio"), model); !problem.isEmpty())
    return problem;
  auto* tab = static_cast<AudioTab*>(window.tab(QStringLiteral("audio")));
  fix_seed(tab->samplingControls(), 2);
  tab->durationBox()->setValue(1.0);
  return generate(window, tab, tab->generateButton());
}

QString shoot_text_tab(MainWindow& window, const QString& model) {
  if (QString problem = open_model(window, QStringLiteral("text"), model); !problem.isEmpty()) return problem;
  auto* tab = static_cast<TextTab*>(window.tab(QStringLiteral("text")));
  fix_seed(tab->samplingControls(), 1);
  tab->promptEditor()->setPlainText(QStringLiteral("In the beginning"));
  tab->bytesToGenerateBox()->setValue(400);
  if (QString problem = generate(window, tab, tab->generateButton()); !problem.isEmpty()) return problem;
  // What one character of the continuation attended, as a user pointing at it sees it.
  const qint64 position = static_cast<qint64>(tab->view()->sampleBytes(0).size()) * 2 / 3;
  tab->inspectAt(position);
  wait_until([&] { return tab->view()->attention(0).position == position && !tab->busy(); }, kOpenMs);
  tab->view()->refreshNow();
  return {};
}

// Opens a modal dialog with `open` (which returns once the dialog is closed), saves it as `name` as soon as
// it shows, and closes it.
void shoot_dialog(ScreenshotWriter& writer, const QString& name, const std::function<void()>& open) {
  QTimer poll;
  int polls = 0;
  QObject::connect(&poll, &QTimer::timeout, [&] {
    auto* dialog = qobject_cast<QDialog*>(QApplication::activeModalWidget());
    if (!dialog || !dialog->isVisible()) {
      if (++polls < 500) return;
      // Never shown as the active modal dialog: close whatever dialog is up, so that open() returns.
      poll.stop();
      for (QWidget* widget : QApplication::topLevelWidgets()) {
        if (auto* other = qobject_cast<QDialog*>(widget); other && other->isVisible()) other->reject();
      }
      writer.fail(name, QStringLiteral("the dialog did not open"));
      return;
    }
    poll.stop();
    writer.save(name, dialog);
    dialog->reject();
  });
  poll.start(20);
  open();
  poll.stop();
}

}  // namespace

void shoot_main_window(ScreenshotWriter& writer, const TourModels& models) {
  MainWindow window;
  window.resize(1280, 860);  // the size of the metainfo's screenshot (packaging/screenshots)
  window.show();
  const std::pair<QString, std::function<QString()>> tabs[] = {
      {QStringLiteral("image"), [&] { return shoot_image_tab(window, models.image); }},
      {QStringLiteral("audio"), [&] { return shoot_audio_tab(window, models.audio); }},
      {QStringLiteral("text"), [&] { return shoot_text_tab(window, models.text); }},
      {QStringLiteral("patterns"), [] { return QString(); }},
      {QStringLiteral("models"),
       [&] {
         auto* tab = static_cast<ModelsTab*>(window.tab(QStringLiteral("models")));
         wait_until([&] { return !tab->scanning(); }, kOpenMs);
         if (!models.text.isEmpty()) tab->selectModel(models.text);
         return QString();
       }},
  };
  for (const auto& [kind, prepare] : tabs) {
    window.tabs()->setCurrentWidget(window.tab(kind));
    const QString name = QStringLiteral("window-") + kind;
    if (const QString problem = prepare(); !problem.isEmpty()) {
      writer.fail(name, problem);
      continue;
    }
    settle();
    writer.save(name, &window);
  }

  // The log panel, and an error as the banner shows it: a file no tab opens.
  window.tabs()->setCurrentWidget(window.tab(QStringLiteral("image")));
  window.logDock()->show();
  window.openPath(QStringLiteral("weights.bin"));
  settle();
  writer.save(QStringLiteral("window-log-and-error"), &window);
  window.errorBanner()->hide();
  window.logDock()->hide();

  shoot_dialog(writer, QStringLiteral("preferences"), [&] { window.showPreferences(); });
  shoot_dialog(writer, QStringLiteral("about"), [&] { window.showAbout(); });
  window.close();
}

}  // namespace stx::studio
