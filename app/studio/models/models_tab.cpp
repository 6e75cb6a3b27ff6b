#include "models/models_tab.h"

#include <QAction>
#include <QColor>
#include <QComboBox>
#include <QDesktopServices>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <QThread>
#include <QToolButton>
#include <QTreeWidget>
#include <QUrl>
#include <QVBoxLayout>
#include <exception>
#include <memory>

#include "core/counted_text.h"
#include "core/model_text.h"
#include "core/studio_context.h"
#include "models/model_card.h"
#include "models/model_scanner.h"

namespace stx::studio {

namespace {

constexpr int kIndexRole = Qt::UserRole;     // index into ModelScanner::entries()
constexpr int kPathRole = Qt::UserRole + 1;  // the model's folder
const QColor kErrorColor(0xc6, 0x28, 0x28);

QString clean(const QString& path) { return QDir::cleanPath(QFileInfo(path).absoluteFilePath()); }

// "<subject>: <reason>", unless the engine's message already starts with the subject.
QString about(const QString& subject, const QString& reason) {
  return reason.startsWith(subject) ? reason : subject + QStringLiteral(": ") + reason;
}

QString folder_name(const QString& path) { return QFileInfo(path).fileName(); }

QToolButton* button_for(QAction* action) {
  auto* button = new QToolButton;
  // A tool button shows iconText(), which drops the "..." that says a dialog follows: keep it.
  action->setIconText(action->text());
  button->setDefaultAction(action);
  button->setToolButtonStyle(Qt::ToolButtonTextOnly);
  return button;
}

}  // namespace

ModelsTab::ModelsTab(StudioContext* context, QWidget* parent) : StudioTab(context, parent) {
  scanner_ = new ModelScanner(this);

  importAction_ = new QAction(tr("Import..."), this);
  importAction_->setToolTip(tr("Copy a model or training-run folder into your library"));
  trainAction_ = new QAction(tr("Train new model..."), this);
  trainAction_->setToolTip(tr("Open the training wizard"));
  refreshAction_ = new QAction(tr("Refresh"), this);
  refreshAction_->setToolTip(tr("Read the library folders again (F5)"));
  refreshAction_->setShortcut(QKeySequence::Refresh);
  refreshAction_->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  addAction(refreshAction_);
  openAction_ = new QAction(tr("Open in tab"), this);
  openAction_->setToolTip(tr("Open this model in its tab to generate with it (double-click, Return)"));
  openAction_->setShortcut(Qt::Key_Return);
  revealAction_ = new QAction(tr("Reveal in file manager"), this);
  renameAction_ = new QAction(tr("Rename..."), this);
  renameAction_->setShortcut(Qt::Key_F2);
  deleteAction_ = new QAction(tr("Delete..."), this);
  deleteAction_->setShortcut(QKeySequence::Delete);
  for (QAction* action : {openAction_, revealAction_, renameAction_, deleteAction_}) {
    action->setShortcutContext(Qt::WidgetShortcut);  // keys act on the list only, never on the search box
  }
  importAction_->setObjectName(QStringLiteral("importAction"));
  trainAction_->setObjectName(QStringLiteral("trainAction"));
  refreshAction_->setObjectName(QStringLiteral("refreshAction"));
  openAction_->setObjectName(QStringLiteral("openAction"));
  revealAction_->setObjectName(QStringLiteral("revealAction"));
  renameAction_->setObjectName(QStringLiteral("renameAction"));
  deleteAction_->setObjectName(QStringLiteral("deleteAction"));

  kindFilter_ = new QComboBox;
  kindFilter_->addItem(tr("All kinds"), QString());
  kindFilter_->addItem(tr("Image"), QStringLiteral("image"));
  kindFilter_->addItem(tr("Audio"), QStringLiteral("audio"));
  kindFilter_->addItem(tr("Text"), QStringLiteral("text"));
  search_ = new QLineEdit;
  search_->setPlaceholderText(tr("Search models"));
  search_->setClearButtonEnabled(true);

  list_ = new QTreeWidget;
  list_->setColumnCount(columnCount);
  list_->setHeaderLabels({tr("Name"), tr("Kind"), tr("Parameters"), tr("bits/byte"), QString()});
  list_->headerItem()->setToolTip(bitsColumn, tr("Best validation bits per byte: lower is better"));
  list_->setRootIsDecorated(false);
  // Rows of unreadable models wrap onto a second line, so that their error is read whole.
  list_->setWordWrap(true);
  list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  list_->setAllColumnsShowFocus(true);
  list_->setSelectionMode(QAbstractItemView::SingleSelection);
  list_->header()->setStretchLastSection(false);
  list_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  list_->header()->setSectionResizeMode(nameColumn, QHeaderView::Stretch);
  list_->setContextMenuPolicy(Qt::ActionsContextMenu);
  list_->addActions({openAction_, revealAction_, renameAction_, deleteAction_});
  count_ = new QLabel;
  count_->setObjectName(QStringLiteral("count"));
  count_->setEnabled(false);

  auto* filters = new QHBoxLayout;
  filters->addWidget(new QLabel(tr("Show:")));
  filters->addWidget(kindFilter_);
  filters->addWidget(search_, 1);
  auto* library = new QHBoxLayout;
  library->addWidget(button_for(importAction_));
  library->addWidget(button_for(trainAction_));
  library->addStretch(1);
  library->addWidget(button_for(refreshAction_));
  auto* left = new QWidget;
  auto* leftColumn = new QVBoxLayout(left);
  leftColumn->setContentsMargins(0, 0, 0, 0);
  leftColumn->addLayout(library);
  leftColumn->addLayout(filters);
  leftColumn->addWidget(list_, 1);
  leftColumn->addWidget(count_);

  card_ = new ModelCard;
  auto* modelActions = new QHBoxLayout;
  for (QAction* action : {openAction_, revealAction_, renameAction_, deleteAction_}) {
    modelActions->addWidget(button_for(action));
  }
  modelActions->addStretch(1);
  auto* right = new QWidget;
  auto* rightColumn = new QVBoxLayout(right);
  rightColumn->setContentsMargins(0, 0, 0, 0);
  rightColumn->addLayout(modelActions);
  rightColumn->addWidget(card_, 1);

  splitter_ = new QSplitter(Qt::Horizontal);
  splitter_->addWidget(left);
  splitter_->addWidget(right);
  splitter_->setStretchFactor(0, 1);
  splitter_->setStretchFactor(1, 1);
  splitter_->setChildrenCollapsible(false);
  auto* page = new QVBoxLayout(this);
  page->addWidget(splitter_);

  connect(importAction_, &QAction::triggered, this, &ModelsTab::importFromDialog);
  connect(trainAction_, &QAction::triggered, this, &ModelsTab::trainRequested);
  connect(refreshAction_, &QAction::triggered, this, &ModelsTab::refreshModels);
  connect(openAction_, &QAction::triggered, this, &ModelsTab::openSelected);
  connect(revealAction_, &QAction::triggered, this, &ModelsTab::revealSelected);
  connect(renameAction_, &QAction::triggered, this, &ModelsTab::renameSelected);
  connect(deleteAction_, &QAction::triggered, this, &ModelsTab::deleteSelected);
  connect(kindFilter_, &QComboBox::currentIndexChanged, this, &ModelsTab::applyFilter);
  connect(search_, &QLineEdit::textChanged, this, &ModelsTab::applyFilter);
  connect(list_, &QTreeWidget::currentItemChanged, this, &ModelsTab::showSelected);
  connect(list_, &QTreeWidget::itemDoubleClicked, this, &ModelsTab::openSelected);
  connect(scanner_, &ModelScanner::progress, this, [this](int done, int total) {
    count_->setText(tr("Reading models... %1 of %2").arg(done).arg(total));
  });
  connect(scanner_, &ModelScanner::finished, this, &ModelsTab::showScan);

  card_->showMessage(tr("Reading the model library..."));
  updateActions();
  scanner_->start();
}

ModelsTab::~ModelsTab() {
  if (importThread_) {
    importThread_->wait();
    delete importThread_;
  }
}

bool ModelsTab::scanning() const { return scanner_->running() || importThread_ != nullptr; }

void ModelsTab::refreshModels() {
  count_->setText(tr("Reading models..."));
  scanner_->start();
}

void ModelsTab::activated() {
  showSelected();
  // Models appear by other ways too (a finished training run, a copy in the file manager): read again.
  refreshModels();
}

void ModelsTab::showScan() {
  const QString keep = pendingSelection_.isEmpty() ? selectedPath() : pendingSelection_;
  pendingSelection_.clear();
  const std::vector<LibraryEntry>& entries = scanner_->entries();
  {
    const QSignalBlocker block(list_);
    list_->clear();
    const QLocale locale;
    for (int i = 0; i < static_cast<int>(entries.size()); ++i) {
      const LibraryEntry& entry = entries[i];
      auto* item = new QTreeWidgetItem;
      item->setData(0, kIndexRole, i);
      item->setData(0, kPathRole, clean(entry.path));
      item->setToolTip(nameColumn, entry.path);
      list_->addTopLevelItem(item);
      if (!entry.error.isEmpty()) {
        // Listed, not hidden: the user can see what is wrong, reveal the folder, or delete it.
        item->setText(nameColumn, tr("%1 — cannot be read\n%2").arg(folder_name(entry.path), entry.error));
        item->setForeground(nameColumn, kErrorColor);
        item->setToolTip(nameColumn, entry.error);
        item->setFirstColumnSpanned(true);
        continue;
      }
      const stx::engine::ModelSummary& s = entry.summary;
      item->setText(nameColumn, folder_name(entry.path));
      QString kind = QString::fromStdString(s.kind);
      if (s.kind == "image")
        kind += QStringLiteral(" %1×%2×%3").arg(s.image_height).arg(s.image_width).arg(s.image_channels);
      item->setText(kindColumn, kind);
      item->setText(parametersColumn, format_count(s.parameters));
      item->setToolTip(parametersColumn, tr("%1 parameters").arg(locale.toString(s.parameters)));
      item->setText(bitsColumn, s.bits_per_byte ? QString::number(*s.bits_per_byte, 'f', 3) : tr("—"));
      if (entry.bundled) {
        item->setText(sourceColumn, tr("bundled"));
        item->setToolTip(sourceColumn,
                         tr("Comes with STX Studio: read-only, it cannot be renamed or deleted"));
        item->setForeground(sourceColumn, list_->palette().color(QPalette::Disabled, QPalette::Text));
      }
      for (int column : {parametersColumn, bitsColumn})
        item->setTextAlignment(column, Qt::AlignRight | Qt::AlignVCenter);
    }
  }
  applyFilter();
  if (QTreeWidgetItem* item = itemFor(keep); item && !item->isHidden()) list_->setCurrentItem(item);
  showSelected();
  emit libraryScanned();
}

void ModelsTab::applyFilter() {
  const QString kind = kindFilter_->currentData().toString();
  const QString needle = search_->text().trimmed();
  const std::vector<LibraryEntry>& entries = scanner_->entries();
  QTreeWidgetItem* firstVisible = nullptr;
  for (int i = 0; i < list_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* item = list_->topLevelItem(i);
    const LibraryEntry& entry = entries[item->data(0, kIndexRole).toInt()];
    // A model that cannot be read has no known kind: it stays under every kind, so it is never out of sight.
    bool show =
        kind.isEmpty() || !entry.error.isEmpty() || QString::fromStdString(entry.summary.kind) == kind;
    if (show && !needle.isEmpty()) {
      const QString haystack = folder_name(entry.path) + QLatin1Char(' ') +
                               QString::fromStdString(entry.summary.name) + QLatin1Char(' ') +
                               QString::fromStdString(entry.summary.kind) + QLatin1Char(' ') +
                               (entry.error.isEmpty() ? pattern_text(entry.summary) : QString());
      show = haystack.contains(needle, Qt::CaseInsensitive);
    }
    item->setHidden(!show);
    if (show && !firstVisible) firstVisible = item;
  }
  QTreeWidgetItem* current = list_->currentItem();
  if (!current || current->isHidden()) list_->setCurrentItem(firstVisible);
  if (!firstVisible) showSelected();  // nothing to select: the card says why
  updateCount();
}

void ModelsTab::updateCount() {
  const std::vector<LibraryEntry>& entries = scanner_->entries();
  int bundled = 0, unreadable = 0, shown = 0;
  for (const LibraryEntry& entry : entries) {
    bundled += entry.bundled ? 1 : 0;
    unreadable += entry.error.isEmpty() ? 0 : 1;
  }
  for (int i = 0; i < list_->topLevelItemCount(); ++i) shown += list_->topLevelItem(i)->isHidden() ? 0 : 1;
  const int total = static_cast<int>(entries.size());
  const QString models = counted(total, tr("1 model"), tr("%1 models"));
  QString text = shown == total ? models : tr("%1 of %2 shown").arg(shown).arg(models);
  if (bundled) text += tr(" · %1 bundled").arg(bundled);
  if (unreadable) text += tr(" · %1 cannot be read").arg(unreadable);
  count_->setText(text);
}

const LibraryEntry* ModelsTab::selectedEntry() const {
  const QTreeWidgetItem* item = list_->currentItem();
  if (!item || item->isHidden()) return nullptr;
  const int index = item->data(0, kIndexRole).toInt();
  const std::vector<LibraryEntry>& entries = scanner_->entries();
  return index >= 0 && index < static_cast<int>(entries.size()) ? &entries[index] : nullptr;
}

QString ModelsTab::selectedPath() const {
  const LibraryEntry* entry = selectedEntry();
  return entry ? entry->path : QString();
}

QTreeWidgetItem* ModelsTab::itemFor(const QString& path) const {
  if (path.isEmpty()) return nullptr;
  const QString wanted = clean(path);
  for (int i = 0; i < list_->topLevelItemCount(); ++i) {
    if (list_->topLevelItem(i)->data(0, kPathRole).toString() == wanted) return list_->topLevelItem(i);
  }
  return nullptr;
}

void ModelsTab::selectModel(const QString& path) {
  QTreeWidgetItem* item = itemFor(path);
  if (!item) {
    pendingSelection_ = path;  // not listed yet: selected when the running scan shows it
    return;
  }
  if (item->isHidden()) {
    // Asked for by name: show it even when the filter had hidden it.
    const QSignalBlocker block(search_);
    search_->clear();
    kindFilter_->setCurrentIndex(0);
    applyFilter();
  }
  list_->setCurrentItem(item);
}

void ModelsTab::showSelected() {
  const LibraryEntry* entry = selectedEntry();
  if (entry) {
    card_->showEntry(*entry);
  } else if (scanner_->entries().empty()) {
    card_->showMessage(scanner_->running()
                           ? tr("Reading the model library...")
                           : tr("No models yet.\nImport a model folder, or train a new model."));
  } else if (list_->currentItem() == nullptr && !search_->text().isEmpty()) {
    card_->showMessage(tr("No model matches “%1”.").arg(search_->text()));
  } else {
    card_->showMessage(tr("Select a model to see its card."));
  }
  // The status bar names the selected model (the window shows it only while this tab is in front).
  context()->setStatus(this, entry ? folder_name(entry->path) : QString(), QString(), -1.0);
  updateActions();
}

void ModelsTab::updateActions() {
  const LibraryEntry* entry = selectedEntry();
  const bool readable = entry && entry->error.isEmpty();
  // Bundled models are shared by every user of the installation: they are never renamed or deleted here.
  const bool own = entry && !entry->bundled;
  openAction_->setEnabled(readable);
  revealAction_->setEnabled(entry != nullptr);
  renameAction_->setEnabled(own);
  deleteAction_->setEnabled(own);
  importAction_->setEnabled(importThread_ == nullptr);
  const QString why = entry && entry->bundled ? tr(" (bundled models are read-only)") : QString();
  renameAction_->setToolTip(tr("Rename this model's folder (F2)") + why);
  deleteAction_->setToolTip(tr("Delete this model from disk (Delete)") + why);
}

void ModelsTab::openSelected() {
  const LibraryEntry* entry = selectedEntry();
  if (!entry || !entry->error.isEmpty()) return;
  emit openModelRequested(QString::fromStdString(entry->summary.kind), entry->path);
}

void ModelsTab::revealSelected() {
  const LibraryEntry* entry = selectedEntry();
  if (!entry) return;
  if (!QDesktopServices::openUrl(QUrl::fromLocalFile(entry->path))) {
    context()->showError(tr("%1: no file manager could be started to show it").arg(entry->path));
  }
}

void ModelsTab::importFromDialog() {
  const QString start = lastImportFolder_.isEmpty() ? QDir::homePath() : lastImportFolder_;
  const QString folder =
      QFileDialog::getExistingDirectory(this, tr("Import a model or training-run folder"), start);
  if (!folder.isEmpty()) importFolder(folder);
}

void ModelsTab::importFolder(const QString& folder) {
  if (importThread_) return;
  lastImportFolder_ = QFileInfo(folder).absolutePath();
  bool ok = false;
  const QString name =
      QInputDialog::getText(this, tr("Import model"), tr("Name of the model in your library:"),
                            QLineEdit::Normal, folder_name(QDir::cleanPath(folder)), &ok)
          .trimmed();
  if (!ok) return;
  // The copy may be gigabytes: it runs on a thread of its own, the list updates when it is done.
  auto result = std::make_shared<std::pair<QString, QString>>();  // (new path, error)
  importThread_ = QThread::create([folder, name, result] {
    try {
      result->first = ModelLibrary::importModel(folder, name);
    } catch (const std::exception& e) {
      result->second = QString::fromStdString(e.what());
    }
  });
  connect(
      importThread_, &QThread::finished, this,
      [this, folder, name, result] { importFinished(folder, name, result->first, result->second); },
      Qt::QueuedConnection);
  count_->setText(tr("Importing %1...").arg(name));
  updateActions();
  importThread_->start();
  emit actionsChanged();  // busy() is true until the copy is done
}

void ModelsTab::importFinished(const QString& folder, const QString& name, const QString& path,
                               const QString& error) {
  importThread_->wait();
  delete importThread_;
  importThread_ = nullptr;
  updateActions();
  emit actionsChanged();
  if (!error.isEmpty()) {
    context()->showError(about(folder, error));
    updateCount();
    return;
  }
  context()->log(StudioContext::Level::info, tr("Imported %1 as “%2” (%3)").arg(folder, name, path));
  libraryEdited(path);
}

void ModelsTab::renameSelected() {
  const LibraryEntry* entry = selectedEntry();
  if (!entry || entry->bundled) return;
  const QString path = entry->path;
  const QString oldName = folder_name(path);
  bool ok = false;
  const QString newName =
      QInputDialog::getText(this, tr("Rename model"), tr("New name for “%1”:").arg(oldName),
                            QLineEdit::Normal, oldName, &ok)
          .trimmed();
  if (!ok || newName == oldName) return;
  try {
    ModelLibrary::renameModel(path, newName);
  } catch (const std::exception& e) {
    context()->showError(about(path, QString::fromStdString(e.what())));
    return;
  }
  context()->log(StudioContext::Level::info, tr("Renamed “%1” to “%2”").arg(oldName, newName));
  libraryEdited(QFileInfo(path).dir().filePath(newName));
}

void ModelsTab::deleteSelected() {
  const LibraryEntry* entry = selectedEntry();
  if (!entry || entry->bundled) return;
  const QString path = entry->path;
  const QString name = folder_name(path);
  QMessageBox box(QMessageBox::Warning, tr("Delete model"), tr("Delete the model “%1”?").arg(name),
                  QMessageBox::Cancel, this);
  box.setInformativeText(
      tr("Its folder %1 and everything in it are removed from disk. This cannot be undone.").arg(path));
  QPushButton* confirm = box.addButton(tr("Delete"), QMessageBox::DestructiveRole);
  box.setDefaultButton(QMessageBox::Cancel);  // Return must not delete by accident
  box.exec();
  if (box.clickedButton() != confirm) return;
  // The neighbour takes the selection, so that repeated deletes walk down the list.
  QString next;
  if (QTreeWidgetItem* item = itemFor(path)) {
    QTreeWidgetItem* neighbour = list_->itemBelow(item) ? list_->itemBelow(item) : list_->itemAbove(item);
    if (neighbour) next = neighbour->data(0, kPathRole).toString();
  }
  try {
    ModelLibrary::deleteModel(path);
  } catch (const std::exception& e) {
    context()->showError(about(path, QString::fromStdString(e.what())));
    return;
  }
  context()->log(StudioContext::Level::info, tr("Deleted the model “%1” (%2)").arg(name, path));
  libraryEdited(next);
}

void ModelsTab::libraryEdited(const QString& path) {
  pendingSelection_ = path;
  refreshModels();
  emit libraryChanged();
}

void ModelsTab::restoreSettings(QSettings& settings) {
  const int kind = kindFilter_->findData(settings.value(QStringLiteral("kindFilter")).toString());
  kindFilter_->setCurrentIndex(kind < 0 ? 0 : kind);
  const QString selected = settings.value(QStringLiteral("selectedModel")).toString();
  if (!selected.isEmpty()) {
    if (itemFor(selected)) {
      selectModel(selected);
    } else {
      pendingSelection_ = selected;
    }
  }
  lastImportFolder_ = settings.value(QStringLiteral("importFolder")).toString();
  if (settings.contains(QStringLiteral("splitter"))) {
    splitter_->restoreState(settings.value(QStringLiteral("splitter")).toByteArray());
  }
}

void ModelsTab::saveSettings(QSettings& settings) const {
  settings.setValue(QStringLiteral("kindFilter"), kindFilter_->currentData().toString());
  const QString selected = selectedPath().isEmpty() ? pendingSelection_ : selectedPath();
  settings.setValue(QStringLiteral("selectedModel"), selected);
  settings.setValue(QStringLiteral("splitter"), splitter_->saveState());
  settings.setValue(QStringLiteral("importFolder"), lastImportFolder_);
}

}  // namespace stx::studio
