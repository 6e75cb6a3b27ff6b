// The studio's main window: the five tabs, the menu and toolbar (Open, Export, Train new model,
// Preferences, Quit with standard shortcuts), the status bar (model, device, tokens/s), a log panel, an
// error banner, drag and drop of files onto the tab they belong to, and QSettings for everything a user
// expects to find again (geometry, the tab in front, recent files, each tab's last settings).
#pragma once

#include <QIcon>
#include <QMainWindow>
#include <QPointer>
#include <QStringList>

#include "core/studio_context.h"

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QPlainTextEdit;
class QTabWidget;

namespace stx::studio {

class ErrorBanner;
class StudioTab;
class TrainWizard;

// The application icon (packaging/icons), at every size it is drawn in, from the program's resources.
QIcon applicationIcon();

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  StudioContext* context() { return &context_; }
  QTabWidget* tabs() const { return tabs_; }
  StudioTab* tab(const QString& name) const;  // "image", "audio", "text", "patterns", "models"
  ErrorBanner* errorBanner() const { return banner_; }
  QDockWidget* logDock() const { return logDock_; }
  QPlainTextEdit* logView() const { return log_; }
  QLabel* statusModel() const { return statusModel_; }
  QLabel* statusDevice() const { return statusDevice_; }
  QLabel* statusRate() const { return statusRate_; }

  // The file's tab comes to the front and opens it; false (with a message) when no tab takes it.
  bool openPath(const QString& path);

 public slots:
  void openFile();
  void exportResults();
  void showTrainWizard();
  void showPreferences();
  void showAbout();

 protected:
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void buildActions();
  void buildStatusBar();
  void buildLogDock();
  void addTab(const QString& name, const QString& title, StudioTab* tab);
  StudioTab* currentTab() const;
  StudioTab* tabForFile(const QString& path) const;
  void updateActions();
  void appendLog(StudioContext::Level level, const QString& text);
  void rememberRecent(const QString& path);
  void rebuildRecentMenu();
  void openModelInTab(const QString& kind, const QString& path);
  void restoreState();
  void saveState() const;

  StudioContext context_;
  QTabWidget* tabs_ = nullptr;
  QStringList tabNames_;
  ErrorBanner* banner_ = nullptr;
  QDockWidget* logDock_ = nullptr;
  QPlainTextEdit* log_ = nullptr;
  QLabel* statusModel_ = nullptr;
  QLabel* statusDevice_ = nullptr;
  QLabel* statusRate_ = nullptr;
  QAction* openAction_ = nullptr;
  QAction* exportAction_ = nullptr;
  QAction* stopAction_ = nullptr;
  QMenu* recentMenu_ = nullptr;
  QStringList recentFiles_;
  QPointer<TrainWizard> wizard_;
};

}  // namespace stx::studio
