// Edit > Preferences: the colour scheme (follow the system, or force light or dark), whether the log panel
// shows at start-up, where models run (Automatic, CPU or CUDA GPU), where the model library lives, and
// clearing the recent files.
#pragma once

#include <QDialog>

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;

namespace stx::studio {

class DeviceBox;

class PreferencesDialog : public QDialog {
  Q_OBJECT

 public:
  explicit PreferencesDialog(QWidget* parent = nullptr);

  DeviceBox* deviceBox() const { return device_; }
  // Threads for jobs: 0 shows as "All cores (N)".
  QSpinBox* threadsBox() const { return threads_; }
  // Why CUDA GPU is off on this machine; hidden where there is a GPU.
  QLabel* deviceNote() const { return deviceNote_; }

  // The saved device: "auto" (the default), "cpu" or "cuda".
  static QString savedDevice();
  // The saved thread count, 0 (the default) for every core.
  static int savedThreads();

  // Applies the saved colour scheme to the application: "system" (the platform's palette, which follows
  // the desktop's dark or light setting), "light" or "dark".
  static void applyTheme(const QString& theme);

 signals:
  void recentFilesCleared();
  // OK was pressed; `device` is the one now saved, for the window to pass on to every tab.
  void deviceChosen(const QString& device);
  // OK was pressed; `threads` is the count now saved (0: every core).
  void threadsChosen(int threads);

 private:
  void accept() override;

  QComboBox* theme_;
  QCheckBox* showLog_;
  DeviceBox* device_;
  QSpinBox* threads_;
  QLabel* deviceNote_;
};

}  // namespace stx::studio
