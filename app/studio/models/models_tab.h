// The Models tab ("My models"): every model the studio knows, bundled (read-only) and the user's own, with
// a card for the selected one and the library's housekeeping: import a folder, rename, delete, reveal it in
// the file manager, open it in its kind's tab, train a new one.
//
// The library is read by a ModelScanner on a thread of its own and an import copies on one too, so a large
// library or a large model never freezes the window. Renames are a single rename(2) and stay on the GUI
// thread.
#pragma once

#include <QString>

#include "core/model_library.h"
#include "core/studio_tab.h"

class QAction;
class QComboBox;
class QLabel;
class QLineEdit;
class QSplitter;
class QThread;
class QTreeWidget;
class QTreeWidgetItem;

namespace stx::studio {

class ModelCard;
class ModelScanner;

class ModelsTab : public StudioTab {
  Q_OBJECT

 public:
  explicit ModelsTab(StudioContext* context, QWidget* parent = nullptr);
  // Waits for an import still copying, so that it finishes (or cleans up) rather than being cut short.
  ~ModelsTab() override;

  void restoreSettings(QSettings& settings) override;
  void saveSettings(QSettings& settings) const override;
  void refreshModels() override;
  void activated() override;
  bool busy() const override { return importThread_ != nullptr; }

  // The folder of the selected model (empty when none) and selecting one by its folder.
  QString selectedPath() const;
  void selectModel(const QString& path);
  // A scan or an import is still running: the list is about to change.
  bool scanning() const;
  bool importing() const { return importThread_ != nullptr; }

  QTreeWidget* list() const { return list_; }
  ModelCard* card() const { return card_; }
  QComboBox* kindFilter() const { return kindFilter_; }
  QLineEdit* searchBox() const { return search_; }
  ModelScanner* scanner() const { return scanner_; }

 public slots:
  void importFromDialog();
  // Asks for the model's name (prefilled with the folder's), then copies the folder into the library.
  void importFolder(const QString& folder);
  void renameSelected();
  void deleteSelected();
  void revealSelected();
  void openSelected();

 signals:
  // The window switches to the tab of `kind` ("image" | "audio" | "text") and opens `path` there.
  void openModelRequested(const QString& kind, const QString& path);
  void trainRequested();
  // A model was imported, renamed or deleted: the other tabs refresh their pickers.
  void libraryChanged();
  // The list now shows the result of a scan.
  void libraryScanned();

 private:
  enum Column { nameColumn, kindColumn, parametersColumn, bitsColumn, sourceColumn, columnCount };

  void showScan();
  void applyFilter();
  void showSelected();
  void updateActions();
  void updateCount();
  const LibraryEntry* selectedEntry() const;
  QTreeWidgetItem* itemFor(const QString& path) const;
  void importFinished(const QString& folder, const QString& name, const QString& path, const QString& error);
  // After an import, rename or delete: read the library again, select `path`, tell the other tabs.
  void libraryEdited(const QString& path);

  ModelScanner* scanner_;
  QComboBox* kindFilter_;
  QLineEdit* search_;
  QTreeWidget* list_;
  QLabel* count_;
  ModelCard* card_;
  QSplitter* splitter_;
  QAction* importAction_;
  QAction* trainAction_;
  QAction* refreshAction_;
  QAction* openAction_;
  QAction* revealAction_;
  QAction* renameAction_;
  QAction* deleteAction_;
  QString pendingSelection_;  // selected once the running scan shows it
  QString lastImportFolder_;
  QThread* importThread_ = nullptr;
};

}  // namespace stx::studio
