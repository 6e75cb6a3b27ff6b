#include "core/model_picker.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include "core/model_library.h"

namespace stx::studio {

ModelPicker::ModelPicker(const QString& kind, QWidget* parent) : QWidget(parent), kind_(kind) {
  combo_ = new QComboBox;
  combo_->setMinimumWidth(200);
  combo_->setPlaceholderText(tr("no %1 model yet: open a folder or train one").arg(kind));
  browse_ = new QPushButton(tr("Open..."));
  browse_->setToolTip(tr("Open a model or training-run folder"));
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* row = new QHBoxLayout;
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(combo_, 1);
  row->addWidget(browse_);
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  column->addLayout(row);
  column->addWidget(summary_);
  connect(combo_, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (index >= 0) emit modelChosen(combo_->itemData(index).toString());
  });
  connect(browse_, &QPushButton::clicked, this, [this] {
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Open a %1 model folder").arg(kind_),
                                                             QFileInfo(currentPath()).absolutePath());
    if (!folder.isEmpty()) choose(folder);
  });
  refresh();
}

QString ModelPicker::currentPath() const { return combo_->currentData().toString(); }

void ModelPicker::choose(const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  int index = combo_->findData(absolute);
  if (index < 0) {
    combo_->addItem(QFileInfo(absolute).fileName(), absolute);
    index = combo_->count() - 1;
  }
  if (combo_->currentIndex() == index) {
    emit modelChosen(absolute);  // chosen again: open it again (it may have been retrained)
  } else {
    combo_->setCurrentIndex(index);
  }
}

void ModelPicker::refresh() {
  const QString current = currentPath();
  const QSignalBlocker block(combo_);
  combo_->clear();
  for (const LibraryEntry& entry : ModelLibrary::scan(kind_)) {
    if (!entry.error.isEmpty()) continue;
    const QString name = QString::fromStdString(entry.summary.name);
    const QString label = QFileInfo(entry.path).fileName() + (entry.bundled ? tr(" (bundled)") : QString());
    combo_->addItem(label, QFileInfo(entry.path).absoluteFilePath());
    combo_->setItemData(combo_->count() - 1, name, Qt::ToolTipRole);
  }
  if (!current.isEmpty()) {
    int index = combo_->findData(current);
    if (index < 0) {
      combo_->addItem(QFileInfo(current).fileName(), current);
      index = combo_->count() - 1;
    }
    combo_->setCurrentIndex(index);
  } else {
    combo_->setCurrentIndex(-1);
  }
}

void ModelPicker::showSummary(const QString& line) { summary_->setText(line); }

}  // namespace stx::studio
