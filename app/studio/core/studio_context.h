// What every tab shares with the main window: the log panel, the status bar and the error display. Tabs
// report through it; the window shows. Errors appear in the window in plain words (and in the log), never
// only on a console.
#pragma once

#include <QObject>
#include <QString>

namespace stx::studio {

class StudioContext : public QObject {
  Q_OBJECT

 public:
  enum class Level { info = 0, warning = 1, error = 2 };

  explicit StudioContext(QObject* parent = nullptr) : QObject(parent) {}

  void log(Level level, const QString& text) { emit logged(level, text); }
  // Shows `message` in the window (a banner the user can dismiss) and logs it. The window stays usable.
  void showError(const QString& message) {
    emit logged(Level::error, message);
    emit errorShown(message);
  }
  // What the status bar shows for `tab` (the caller) while it is in front: model name, where it runs, and
  // the latest tokens/s (negative: none). The window ignores tabs that are not in front.
  void setStatus(const QObject* tab, const QString& model, const QString& device, double tokensPerSecond) {
    emit statusChanged(tab, model, device, tokensPerSecond);
  }
  // Remembers a file the user opened or exported, for File > Open Recent.
  void addRecentFile(const QString& path) { emit recentFileAdded(path); }
  // Edit > Preferences > Device: "auto" (the GPU when there is one), "cpu" or "cuda" (device_choice.h).
  // Every generation runs there; the window sets it from the saved preferences at start-up.
  QString device() const { return device_; }
  void setDevice(const QString& device) {
    if (device == device_) return;
    device_ = device;
    emit deviceChanged(device);
  }

 signals:
  void logged(stx::studio::StudioContext::Level level, const QString& text);
  void errorShown(const QString& message);
  void statusChanged(const QObject* tab, const QString& model, const QString& device, double tokensPerSecond);
  void recentFileAdded(const QString& path);
  void deviceChanged(const QString& device);

 private:
  QString device_ = QStringLiteral("auto");
};

}  // namespace stx::studio
