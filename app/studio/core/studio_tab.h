// The part of a tab the main window talks to: Open, Export, drag and drop, remembered settings and the
// status bar. Tabs that have nothing to open or export keep the defaults.
#pragma once

#include <QMimeData>
#include <QSettings>
#include <QString>
#include <QWidget>

namespace stx::studio {

class StudioContext;

class StudioTab : public QWidget {
  Q_OBJECT

 public:
  explicit StudioTab(StudioContext* context, QWidget* parent = nullptr) : QWidget(parent), context_(context) {}

  // File > Open with this tab in front: the dialog's name filter (empty: Open is disabled), and the file.
  virtual QString openFilter() const { return {}; }
  virtual void openFile(const QString& path) { (void)path; }
  // Whether a file dropped on the window belongs to this tab (by its suffix).
  virtual bool acceptsFile(const QString& path) const { (void)path; return false; }
  // File > Export: false when there is nothing to export yet.
  virtual bool canExport() const { return false; }
  virtual void exportResults() {}
  // QSettings under the tab's own group; called at start-up and at exit.
  virtual void restoreSettings(QSettings& settings) { (void)settings; }
  virtual void saveSettings(QSettings& settings) const { (void)settings; }
  // Generation tabs: open this model (from the Models tab or a finished training run) and select it.
  virtual void useModel(const QString& path) { (void)path; }
  // The model library changed (import, rename, delete, a new trained model): re-read it.
  virtual void refreshModels() {}
  // The tab came to the front: refresh the status bar (model, device, tokens/s).
  virtual void activated() {}
  // A job of the tab's is queued or running (opening a model included).
  virtual bool busy() const { return false; }
  // Work a user would lose by quitting now (a generation, an import): the window asks first.
  virtual bool hasRunningWork() const { return busy(); }
  // Stops whatever the tab runs (Quit, or the window's Stop action).
  virtual void stop() {}

 signals:
  // canExport() or busy() changed: the window updates its actions.
  void actionsChanged();

 protected:
  StudioContext* context() const { return context_; }

 private:
  StudioContext* context_;
};

}  // namespace stx::studio
