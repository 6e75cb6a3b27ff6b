#include "window/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDateTime>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QLocale>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QToolBar>
#include <QVBoxLayout>

#include "audio/audio_tab.h"
#include "core/engine_host.h"
#include "core/studio_tab.h"
#include "image/image_tab.h"
#include "models/models_tab.h"
#include "patterns/patterns_tab.h"
#include "text/text_tab.h"
#include "window/error_banner.h"
#include "window/preferences_dialog.h"
#include "window/steady_tab_widget.h"
#include "wizard/train_wizard.h"

namespace stx::studio {

namespace {

constexpr int kMaxRecentFiles = 10;

}  // namespace

QIcon applicationIcon() {
  QIcon icon;
  for (int size : {16, 24, 32, 48, 64, 128, 256, 512}) {
    icon.addFile(QStringLiteral(":/icons/%1x%1/apps/stx-studio.png").arg(size), QSize(size, size));
  }
  return icon;
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("STX Studio"));
  setWindowIcon(applicationIcon());  // the About box shows it too
  setAcceptDrops(true);
  tabs_ = new SteadyTabWidget;
  tabs_->setDocumentMode(true);
  banner_ = new ErrorBanner;
  auto* central = new QWidget;
  auto* column = new QVBoxLayout(central);
  column->setContentsMargins(6, 6, 6, 0);
  column->addWidget(banner_);
  column->addWidget(tabs_, 1);
  setCentralWidget(central);

  addTab(QStringLiteral("image"), tr("&Image"), new ImageTab(&context_));
  addTab(QStringLiteral("audio"), tr("&Audio"), new AudioTab(&context_));
  addTab(QStringLiteral("text"), tr("&Text"), new TextTab(&context_));
  addTab(QStringLiteral("patterns"), tr("&Patterns"), new PatternsTab(&context_));
  auto* models = new ModelsTab(&context_);
  addTab(QStringLiteral("models"), tr("&Models"), models);
  connect(models, &ModelsTab::openModelRequested, this, &MainWindow::openModelInTab);
  connect(models, &ModelsTab::trainRequested, this, &MainWindow::showTrainWizard);
  connect(models, &ModelsTab::libraryChanged, this, [this] {
    for (int i = 0; i < tabs_->count(); ++i) static_cast<StudioTab*>(tabs_->widget(i))->refreshModels();
  });

  buildActions();
  buildStatusBar();
  buildLogDock();
  connect(&context_, &StudioContext::logged, this, &MainWindow::appendLog);
  connect(&context_, &StudioContext::errorShown, banner_, &ErrorBanner::showMessage);
  connect(&context_, &StudioContext::recentFileAdded, this, &MainWindow::rememberRecent);
  connect(&context_, &StudioContext::statusChanged, this,
          [this](const QObject* tab, const QString& model, const QString& device, double rate) {
            if (tab != currentTab()) return;
            statusModel_->setText(model.isEmpty() ? tr("no model") : model);
            statusDevice_->setText(device.isEmpty() ? QStringLiteral("-") : device);
            statusRate_->setText(rate >= 0 ? tr("%1 tok/s").arg(QLocale().toString(rate, 'f', 0)) : QString());
          });
  connect(tabs_, &QTabWidget::currentChanged, this, [this] {
    // The status bar speaks for the tab in front: the one before's model and rate go, and a tab that has no
    // model (Patterns) leaves it empty.
    statusModel_->clear();
    statusDevice_->clear();
    statusRate_->clear();
    if (StudioTab* tab = currentTab()) tab->activated();
    updateActions();
  });
  restoreState();
  updateActions();
}

MainWindow::~MainWindow() = default;

void MainWindow::addTab(const QString& name, const QString& title, StudioTab* tab) {
  tab->setObjectName(name + QStringLiteral("Tab"));
  tabs_->addTab(tab, title);
  tabNames_ << name;
  connect(tab, &StudioTab::actionsChanged, this, &MainWindow::updateActions);
}

StudioTab* MainWindow::tab(const QString& name) const {
  const int index = tabNames_.indexOf(name);
  return index < 0 ? nullptr : static_cast<StudioTab*>(tabs_->widget(index));
}

StudioTab* MainWindow::currentTab() const { return static_cast<StudioTab*>(tabs_->currentWidget()); }

void MainWindow::buildActions() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  openAction_ = file->addAction(style()->standardIcon(QStyle::SP_DialogOpenButton), tr("&Open..."), this,
                                &MainWindow::openFile);
  openAction_->setShortcut(QKeySequence::Open);
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  exportAction_ = file->addAction(style()->standardIcon(QStyle::SP_DialogSaveButton), tr("&Export..."), this,
                                  &MainWindow::exportResults);
  exportAction_->setShortcut(QKeySequence(tr("Ctrl+E")));
  file->addSeparator();
  QAction* train = file->addAction(style()->standardIcon(QStyle::SP_FileDialogNewFolder), tr("&Train New Model..."),
                                   this, &MainWindow::showTrainWizard);
  train->setShortcut(QKeySequence::New);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);
  quit->setMenuRole(QAction::QuitRole);

  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  QAction* preferences = edit->addAction(tr("&Preferences..."), this, &MainWindow::showPreferences);
  preferences->setShortcut(QKeySequence::Preferences);
  if (preferences->shortcut().isEmpty()) preferences->setShortcut(QKeySequence(tr("Ctrl+,")));
  preferences->setMenuRole(QAction::PreferencesRole);

  stopAction_ = new QAction(style()->standardIcon(QStyle::SP_MediaStop), tr("&Stop"), this);
  stopAction_->setShortcut(QKeySequence(tr("Ctrl+.")));
  stopAction_->setToolTip(tr("Stop the job of the tab in front; what it made so far is kept"));
  connect(stopAction_, &QAction::triggered, this, [this] {
    if (StudioTab* tab = currentTab()) tab->stop();
  });

  QToolBar* bar = addToolBar(tr("Main"));
  bar->setObjectName(QStringLiteral("mainToolBar"));
  bar->setMovable(false);
  bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  bar->addAction(openAction_);
  bar->addAction(exportAction_);
  bar->addAction(train);
  bar->addAction(stopAction_);
  rebuildRecentMenu();
}

void MainWindow::buildStatusBar() {
  statusModel_ = new QLabel(tr("no model"));
  statusDevice_ = new QLabel(QStringLiteral("-"));
  statusRate_ = new QLabel;
  statusModel_->setToolTip(tr("The model of the tab in front"));
  statusDevice_->setToolTip(tr("Where the model runs"));
  statusRate_->setToolTip(tr("Tokens (bytes) per second of the latest generation"));
  statusBar()->addPermanentWidget(statusModel_);
  statusBar()->addPermanentWidget(statusDevice_);
  statusBar()->addPermanentWidget(statusRate_);
}

void MainWindow::buildLogDock() {
  log_ = new QPlainTextEdit;
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  logDock_ = new QDockWidget(tr("Log"), this);
  logDock_->setObjectName(QStringLiteral("logDock"));
  logDock_->setWidget(log_);
  addDockWidget(Qt::BottomDockWidgetArea, logDock_);
  logDock_->hide();
  QMenu* view = menuBar()->addMenu(tr("&View"));
  QAction* toggle = logDock_->toggleViewAction();
  toggle->setText(tr("Show &Log"));
  toggle->setShortcut(QKeySequence(tr("Ctrl+L")));
  view->addAction(toggle);
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About STX Studio"), this, &MainWindow::showAbout);
}

void MainWindow::appendLog(StudioContext::Level level, const QString& text) {
  const QString time = QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss"));
  const QString tag = level == StudioContext::Level::error     ? tr("error")
                      : level == StudioContext::Level::warning ? tr("warning")
                                                               : tr("info");
  log_->appendPlainText(QStringLiteral("%1  %2  %3").arg(time, tag, text));
}

void MainWindow::updateActions() {
  StudioTab* tab = currentTab();
  openAction_->setEnabled(tab && !tab->openFilter().isEmpty());
  exportAction_->setEnabled(tab && tab->canExport());
  stopAction_->setEnabled(tab && tab->busy());
}

StudioTab* MainWindow::tabForFile(const QString& path) const {
  if (StudioTab* current = currentTab(); current && current->acceptsFile(path)) return current;
  for (int i = 0; i < tabs_->count(); ++i) {
    auto* tab = static_cast<StudioTab*>(tabs_->widget(i));
    if (tab->acceptsFile(path)) return tab;
  }
  return nullptr;
}

bool MainWindow::openPath(const QString& path) {
  StudioTab* tab = tabForFile(path);
  if (!tab) {
    context_.showError(tr("%1: no tab opens this kind of file (images, audio or text files)").arg(path));
    return false;
  }
  tabs_->setCurrentWidget(tab);
  tab->openFile(path);
  rememberRecent(path);
  return true;
}

void MainWindow::openFile() {
  StudioTab* tab = currentTab();
  if (!tab || tab->openFilter().isEmpty()) return;
  QSettings settings;
  const QString folder = settings.value(QStringLiteral("window/lastOpenFolder")).toString();
  const QString path = QFileDialog::getOpenFileName(this, tr("Open"), folder, tab->openFilter());
  if (path.isEmpty()) return;
  settings.setValue(QStringLiteral("window/lastOpenFolder"), QFileInfo(path).absolutePath());
  tab->openFile(path);
  rememberRecent(path);
}

void MainWindow::exportResults() {
  if (StudioTab* tab = currentTab(); tab && tab->canExport()) tab->exportResults();
}

void MainWindow::rememberRecent(const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  recentFiles_.removeAll(absolute);
  recentFiles_.prepend(absolute);
  while (recentFiles_.size() > kMaxRecentFiles) recentFiles_.removeLast();
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recentMenu_->clear();
  for (const QString& path : recentFiles_) {
    recentMenu_->addAction(QFileInfo(path).fileName(), this, [this, path] { openPath(path); })->setToolTip(path);
  }
  recentMenu_->setEnabled(!recentFiles_.isEmpty());
}

void MainWindow::openModelInTab(const QString& kind, const QString& path) {
  StudioTab* target = tab(kind);
  if (!target) return;
  tabs_->setCurrentWidget(target);
  target->useModel(path);
}

void MainWindow::showTrainWizard() {
  if (!wizard_) {
    wizard_ = new TrainWizard(&context_, this);
    wizard_->setAttribute(Qt::WA_DeleteOnClose);
    connect(wizard_, &TrainWizard::modelReady, this, [this](const QString& kind, const QString& path) {
      for (int i = 0; i < tabs_->count(); ++i) static_cast<StudioTab*>(tabs_->widget(i))->refreshModels();
      openModelInTab(kind, path);
    });
  }
  wizard_->show();
  wizard_->raise();
  wizard_->activateWindow();
}

void MainWindow::showPreferences() {
  PreferencesDialog dialog(this);
  connect(&dialog, &PreferencesDialog::recentFilesCleared, this, [this] {
    recentFiles_.clear();
    rebuildRecentMenu();
  });
  connect(&dialog, &PreferencesDialog::deviceChosen, &context_, &StudioContext::setDevice);
  connect(&dialog, &PreferencesDialog::threadsChosen, this, [](int threads) { EngineHost::setThreadLimit(threads); });
  dialog.exec();
}

void MainWindow::showAbout() {
  QMessageBox::about(
      this, tr("About STX Studio"),
      tr("<b>STX Studio %1</b><br>Sparse Transformers (Child et al. 2019) on your own machine: "
         "image completion, 12 kHz audio, text, and the attention behind every byte.")
          .arg(QApplication::applicationVersion()));
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QStringList running;
  for (int i = 0; i < tabs_->count(); ++i) {
    if (static_cast<StudioTab*>(tabs_->widget(i))->hasRunningWork()) running << tabs_->tabText(i).remove('&');
  }
  if (!running.isEmpty()) {
    const auto answer = QMessageBox::question(
        this, tr("Quit STX Studio?"),
        tr("%1 still running. Stop and quit? What was generated so far stays on screen until the window closes; "
           "export it first to keep it.").arg(running.join(QStringLiteral(", "))),
        QMessageBox::Yes | QMessageBox::No, QMessageBox::No);
    if (answer != QMessageBox::Yes) {
      event->ignore();
      return;
    }
  }
  // The wizard asks on its own whether to stop a training run, and saves a checkpoint when it does.
  if (wizard_ && !wizard_->close()) {
    event->ignore();
    return;
  }
  for (int i = 0; i < tabs_->count(); ++i) static_cast<StudioTab*>(tabs_->widget(i))->stop();
  saveState();
  event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  const QMimeData* mime = event->mimeData();
  if (!mime->hasUrls()) return;
  for (const QUrl& url : mime->urls()) {
    if (url.isLocalFile() && tabForFile(url.toLocalFile())) {
      event->acceptProposedAction();
      return;
    }
  }
}

void MainWindow::dropEvent(QDropEvent* event) {
  for (const QUrl& url : event->mimeData()->urls()) {
    if (url.isLocalFile() && openPath(url.toLocalFile())) {
      event->acceptProposedAction();
      return;
    }
  }
}

void MainWindow::restoreState() {
  QSettings settings;
  const QString theme = settings.value(QStringLiteral("preferences/theme"), QStringLiteral("system")).toString();
  if (theme != QStringLiteral("system")) PreferencesDialog::applyTheme(theme);
  if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())) resize(1280, 820);
  QMainWindow::restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
  if (settings.value(QStringLiteral("preferences/showLog"), false).toBool()) logDock_->show();
  context_.setDevice(PreferencesDialog::savedDevice());
  EngineHost::setThreadLimit(PreferencesDialog::savedThreads());
  recentFiles_ = settings.value(QStringLiteral("window/recentFiles")).toStringList();
  rebuildRecentMenu();
  for (int i = 0; i < tabs_->count(); ++i) {
    settings.beginGroup(tabNames_[i]);
    static_cast<StudioTab*>(tabs_->widget(i))->restoreSettings(settings);
    settings.endGroup();
  }
  tabs_->setCurrentIndex(std::clamp(settings.value(QStringLiteral("window/tab"), 0).toInt(), 0, tabs_->count() - 1));
  if (StudioTab* tab = currentTab()) tab->activated();
}

void MainWindow::saveState() const {
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), QMainWindow::saveState());
  settings.setValue(QStringLiteral("window/tab"), tabs_->currentIndex());
  settings.setValue(QStringLiteral("window/recentFiles"), recentFiles_);
  for (int i = 0; i < tabs_->count(); ++i) {
    settings.beginGroup(tabNames_[i]);
    static_cast<const StudioTab*>(tabs_->widget(i))->saveSettings(settings);
    settings.endGroup();
  }
}

}  // namespace stx::studio
