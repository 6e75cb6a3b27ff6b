// Edit > Preferences: the colour scheme (follow the system, or force light or dark), whether the log panel
// shows at start-up, where the model library lives, and clearing the recent files.
#pragma once

#include <QDialog>

class QCheckBox;
class QComboBox;

namespace stx::studio {

class PreferencesDialog : public QDialog {
  Q_OBJECT

 public:
  explicit PreferencesDialog(QWidget* parent = nullptr);

  QComboBox* themeBox() const { return theme_; }
  QCheckBox* showLogBox() const { return showLog_; }

  // Applies the saved colour scheme to the application: "system" (the platform's palette, which follows
  // the desktop's dark or light setting), "light" or "dark".
  static void applyTheme(const QString& theme);

 signals:
  void recentFilesCleared();

 private:
  void accept() override;

  QComboBox* theme_;
  QCheckBox* showLog_;
};

}  // namespace stx::studio
