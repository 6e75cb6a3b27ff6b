#include "wizard/base_model_page.h"

#include <QButtonGroup>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QLocale>
#include <QPushButton>
#include <QRadioButton>
#include <QVBoxLayout>

#include "core/model_library.h"
#include "core/model_text.h"
#include "stx/engine/trainer.h"
#include "stx/engine/model_types.h"

namespace stx::studio {

namespace {

constexpr int kPathRole = Qt::UserRole;
constexpr int kSummaryRole = Qt::UserRole + 1;
constexpr int kAddedRole = Qt::UserRole + 2;  // added with "Other folder...", not found in the library

// What a preset is, in the words of a model card (the parameter count needs the weights, so it is left out).
QString preset_text(const stx::engine::ModelConfig& c) {
  const QLocale locale;
  QStringList parts;
  if (c.kind == stx::engine::DataKind::image) {
    parts << QObject::tr("images %1x%2x%3").arg(c.image_height).arg(c.image_width).arg(c.image_channels);
  }
  parts << QObject::tr("context %1").arg(locale.toString(static_cast<qint64>(c.context)))
        << QObject::tr("%1 layers x %2 heads").arg(c.layers).arg(c.heads)
        << QObject::tr("width %1").arg(c.d_model);
  return parts.join(QStringLiteral(" · "));
}

}  // namespace

BaseModelPage::BaseModelPage(QWidget* parent) : QWizardPage(parent) {
  setTitle(tr("Starting point"));
  setSubTitle(
      tr("Fine-tune a model you have (fast, needs little data) or start a new model from a preset size."));

  fineTune_ = new QRadioButton(tr("&Fine-tune a model"));
  fromPreset_ = new QRadioButton(tr("Start from a &preset size"));
  auto* group = new QButtonGroup(this);
  group->addButton(fineTune_);
  group->addButton(fromPreset_);
  models_ = new QListWidget;
  models_->setAlternatingRowColors(true);
  browse_ = new QPushButton(tr("Other folder..."));
  browse_->setToolTip(tr("Fine-tune a model or run folder that is not in the library"));
  presets_ = new QComboBox;
  details_ = new QLabel;
  details_->setWordWrap(true);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* browseRow = new QHBoxLayout;
  browseRow->addStretch();
  browseRow->addWidget(browse_);
  auto* presetRow = new QHBoxLayout;
  presetRow->addSpacing(24);
  presetRow->addWidget(presets_, 1);
  auto* column = new QVBoxLayout(this);
  column->addWidget(fineTune_);
  column->addWidget(models_, 1);
  column->addLayout(browseRow);
  column->addSpacing(8);
  column->addWidget(fromPreset_);
  column->addLayout(presetRow);
  column->addSpacing(8);
  column->addWidget(details_);

  registerField(QStringLiteral("baseModel"), this, "baseModel", SIGNAL(choiceChanged()));
  registerField(QStringLiteral("preset"), this, "preset", SIGNAL(choiceChanged()));

  connect(group, &QButtonGroup::buttonToggled, this, [this](QAbstractButton*, bool on) {
    if (on) updateState();
  });
  connect(models_, &QListWidget::currentRowChanged, this, [this] {
    if (models_->currentItem() && !fineTune_->isChecked()) fineTune_->setChecked(true);
    updateState();
  });
  connect(presets_, &QComboBox::currentIndexChanged, this, [this] { updateState(); });
  connect(browse_, &QPushButton::clicked, this, [this] {
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Choose a %1 model folder").arg(kind_),
                                                             ModelLibrary::userFolder());
    if (!folder.isEmpty()) chooseBaseModel(folder);
  });
}

void BaseModelPage::initializePage() {
  const QString kind = field(QStringLiteral("kind")).toString();
  const bool kindChanged = kind != kind_;
  kind_ = kind;
  fillModels();
  fillPresets();
  if (kindChanged || (!fineTune_->isChecked() && !fromPreset_->isChecked())) {
    // A model that already knows this kind of data learns from less; a preset when there is none.
    const bool haveModel = models_->count() > 0 && (models_->item(0)->flags() & Qt::ItemIsEnabled);
    if (haveModel) {
      models_->setCurrentRow(0);
      fineTune_->setChecked(true);
    } else {
      fromPreset_->setChecked(true);
    }
  }
  updateState();
}

void BaseModelPage::fillModels() {
  const QString previous =
      models_->currentItem() ? models_->currentItem()->data(kPathRole).toString() : QString();
  QStringList extra;  // folders the user added with "Other folder..." stay listed
  for (int i = 0; i < models_->count(); ++i) {
    if (models_->item(i)->data(kAddedRole).toBool()) extra << models_->item(i)->data(kPathRole).toString();
  }
  models_->clear();
  for (const LibraryEntry& entry : ModelLibrary::scan(kind_)) {
    if (!entry.error.isEmpty() && !entry.bundled) continue;  // a broken user folder is the library's business
    const QString name = QFileInfo(entry.path).fileName();
    auto* item = new QListWidgetItem(models_);
    item->setData(kPathRole, entry.path);
    if (entry.error.isEmpty()) {
      const QString summary = summary_line(entry.summary);
      item->setText(tr("%1%2 — %3").arg(name, entry.bundled ? tr(" (bundled)") : QString(), summary));
      item->setData(kSummaryRole, summary);
    } else {
      item->setText(tr("%1 — cannot be read: %2").arg(name, entry.error));
      item->setFlags(item->flags() & ~Qt::ItemIsEnabled);
    }
  }
  for (const QString& path : extra) addFolder(path);
  for (int i = 0; i < models_->count(); ++i) {
    if (models_->item(i)->data(kPathRole).toString() == previous) models_->setCurrentRow(i);
  }
  fineTune_->setEnabled(models_->count() > 0);
}

void BaseModelPage::fillPresets() {
  const QString previous = presets_->currentData().toString();
  presets_->clear();
  for (const std::string& name : stx::engine::preset_names()) {
    const stx::engine::ModelConfig config = stx::engine::preset(name);
    if (QString::fromLatin1(stx::engine::to_string(config.kind)) != kind_) continue;
    const QString text = QString::fromStdString(name);
    presets_->addItem(tr("%1 — %2").arg(text, preset_text(config)), text);
  }
  const int index = presets_->findData(previous);
  presets_->setCurrentIndex(index >= 0 ? index : 0);
  fromPreset_->setEnabled(presets_->count() > 0);
}

int BaseModelPage::addFolder(const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  for (int i = 0; i < models_->count(); ++i) {
    if (QFileInfo(models_->item(i)->data(kPathRole).toString()).absoluteFilePath() == absolute) return i;
  }
  const LibraryEntry entry = ModelLibrary::describe(absolute);
  const QString name = QFileInfo(absolute).fileName();
  auto* item = new QListWidgetItem(models_);
  item->setData(kPathRole, absolute);
  item->setData(kAddedRole, true);
  if (!entry.error.isEmpty()) {
    item->setText(tr("%1 — cannot be read: %2").arg(name, entry.error));
    item->setFlags(item->flags() & ~Qt::ItemIsEnabled);
  } else if (QString::fromStdString(entry.summary.kind) != kind_) {
    item->setText(tr("%1 — a %2 model, not %3").arg(name, QString::fromStdString(entry.summary.kind), kind_));
    item->setFlags(item->flags() & ~Qt::ItemIsEnabled);
  } else {
    const QString summary = summary_line(entry.summary);
    item->setText(tr("%1 — %2").arg(name, summary));
    item->setData(kSummaryRole, summary);
  }
  fineTune_->setEnabled(true);
  return models_->count() - 1;
}

void BaseModelPage::chooseBaseModel(const QString& path) {
  const int row = addFolder(path);
  if (models_->item(row)->flags() & Qt::ItemIsEnabled) {
    models_->setCurrentRow(row);
    fineTune_->setChecked(true);
  }
  updateState();
}

void BaseModelPage::choosePreset(const QString& name) {
  const int index = presets_->findData(name);
  if (index < 0) return;
  presets_->setCurrentIndex(index);
  fromPreset_->setChecked(true);
  updateState();
}

QString BaseModelPage::baseModel() const {
  if (!fineTune_->isChecked() || !models_->currentItem() ||
      !(models_->currentItem()->flags() & Qt::ItemIsEnabled)) {
    return {};
  }
  return models_->currentItem()->data(kPathRole).toString();
}

QString BaseModelPage::preset() const {
  return fromPreset_->isChecked() ? presets_->currentData().toString() : QString();
}

bool BaseModelPage::isComplete() const { return !baseModel().isEmpty() || !preset().isEmpty(); }

void BaseModelPage::updateState() {
  models_->setEnabled(fineTune_->isEnabled());
  presets_->setEnabled(fromPreset_->isChecked());
  if (!baseModel().isEmpty()) {
    details_->setText(tr("Fine-tunes %1: %2. Its size and context stay as they are.")
                          .arg(QDir::toNativeSeparators(baseModel()),
                               models_->currentItem()->data(kSummaryRole).toString()));
  } else if (!preset().isEmpty()) {
    details_->setText(
        tr("Starts a new %1 model of preset size %2 from random weights: it needs more data and "
           "more steps than fine-tuning.")
            .arg(kind_, preset()));
  } else {
    details_->setText(tr("Choose a model to fine-tune or a preset."));
  }
  emit choiceChanged();
  emit completeChanged();
}

}  // namespace stx::studio
