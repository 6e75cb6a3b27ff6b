#include "screenshots/screenshot_tour.h"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QSettings>
#include <QTemporaryDir>
#include <QTextStream>
#include <QTimer>
#include <filesystem>
#include <optional>
#include <system_error>

#include "screenshots/screenshot_writer.h"
#include "screenshots/tour_steps.h"
#include "stx/engine/bundled_models.h"

namespace stx::studio {

namespace {

// Sets an environment variable for the tour and puts back what was there before.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const QByteArray& value)
      : name_(name), had_(qEnvironmentVariableIsSet(name)), before_(qgetenv(name)) {
    qputenv(name, value);
  }
  ~ScopedVariable() {
    if (had_) {
      qputenv(name_, before_);
    } else {
      qunsetenv(name_);
    }
  }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
  bool had_;
  QByteArray before_;
};

QString bundled(const char* name) {
  const std::optional<std::filesystem::path> folder = stx::engine::find_bundled_model(name);
  return folder ? QString::fromStdString(folder->string()) : QString();
}

}  // namespace

QStringList screenshot_names() {
  return {QStringLiteral("window-image"),    QStringLiteral("window-audio"),
          QStringLiteral("window-text"),     QStringLiteral("window-patterns"),
          QStringLiteral("window-models"),   QStringLiteral("window-log-and-error"),
          QStringLiteral("preferences"),     QStringLiteral("about"),
          QStringLiteral("wizard-data"),     QStringLiteral("wizard-base-model"),
          QStringLiteral("wizard-settings"), QStringLiteral("wizard-run"),
          QStringLiteral("wizard-finish")};
}

bool wait_until(const std::function<bool()>& done, int timeoutMs) {
  QElapsedTimer clock;
  clock.start();
  // Wakes the loop to look at done() again; a loop that polled would take a core from the engine.
  QTimer tick;
  tick.start(50);
  while (!done()) {
    if (clock.elapsed() > timeoutMs) return false;
    QApplication::processEvents(QEventLoop::WaitForMoreEvents);
  }
  return true;
}

int render_screenshots(const QString& folder, QTextStream& out, QTextStream& err) {
  std::error_code error;
  std::filesystem::create_directories(folder.toStdString(), error);
  if (error) {
    err << "stx-studio: cannot create the folder " << folder << ": "
        << QString::fromStdString(error.message()) << '\n';
    err.flush();
    return 1;
  }
  QTemporaryDir work(QDir(QDir::tempPath()).filePath(QStringLiteral("stx-studio-screenshots-XXXXXX")));
  if (!work.isValid()) {
    err << "stx-studio: cannot create a temporary folder in " << QDir::tempPath() << ": "
        << work.errorString() << '\n';
    err.flush();
    return 1;
  }
  // A fresh user's studio: default settings, and a model library that holds only the bundled models. A
  // training run of the wizard lands in this library too, never in the user's.
  QSettings::setDefaultFormat(QSettings::IniFormat);
  QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, work.filePath(QStringLiteral("settings")));
  const ScopedVariable library("STX_STUDIO_MODELS_DIR", work.filePath(QStringLiteral("library")).toUtf8());

  const TourModels models{bundled("image"), bundled("audio"), bundled("text")};
  ScreenshotWriter writer(folder, out, err);
  shoot_main_window(writer, models);
  shoot_train_wizard(writer, models, work.path());
  return writer.failed() ? 1 : 0;
}

}  // namespace stx::studio
