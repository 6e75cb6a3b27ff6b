#include "text/text_side_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>

#include "core/sampling_controls.h"

namespace stx::studio {

TextSidePanel::TextSidePanel(QWidget* parent) : QWidget(parent) {
  sampling_ = new SamplingControls(8);
  length_ = new QSpinBox;
  length_->setRange(1, 1 << 22);
  length_->setValue(256);
  length_->setSuffix(tr(" bytes"));
  length_->setToolTip(tr("How many bytes to add after the prompt (a byte is one token of these models)"));
  contextNote_ = new QLabel;
  contextNote_->setWordWrap(true);
  stopString_ = new QLineEdit;
  stopString_->setPlaceholderText(tr("none"));
  stopString_->setToolTip(
      tr("A sample ends when it produces this text (left out of the result). "
         "Write \\n for a new line, \\t for a tab."));

  liveAttention_ = new QCheckBox(tr("Show attention while generating"));
  liveAttention_->setChecked(true);
  layer_ = new QComboBox;
  head_ = new QComboBox;
  layer_->setToolTip(tr("The layer whose attention is drawn over the text"));
  head_->setToolTip(
      tr("The head whose attention is drawn; \"all heads\" averages them "
         "(while generating, the first head is shown)"));

  generate_ = new QPushButton(tr("Generate"));
  generate_->setDefault(true);
  generate_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
  generate_->setToolTip(tr("Continue the prompt (Ctrl+Enter)"));
  export_ = new QPushButton(tr("Export TXT..."));
  export_->setToolTip(tr("Save the selected sample, prompt included, as a text file"));
  exportAll_ = new QCheckBox(tr("all samples"));
  exportAll_->setToolTip(tr("Save every sample, numbered: name-1.txt, name-2.txt, ..."));

  auto* generation = new QGroupBox(tr("Generation"));
  auto* generationForm = new QFormLayout(generation);
  generationForm->addRow(sampling_);
  generationForm->addRow(tr("Bytes to generate"), length_);
  generationForm->addRow(contextNote_);
  generationForm->addRow(tr("Stop at"), stopString_);
  auto* attention = new QGroupBox(tr("Attention"));
  auto* attentionForm = new QFormLayout(attention);
  attentionForm->addRow(liveAttention_);
  attentionForm->addRow(tr("Layer"), layer_);
  attentionForm->addRow(tr("Head"), head_);
  auto* exportRow = new QHBoxLayout;
  exportRow->addWidget(export_, 1);
  exportRow->addWidget(exportAll_);
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  column->addWidget(generation);
  column->addWidget(attention);
  column->addStretch(1);
  column->addWidget(generate_);
  column->addLayout(exportRow);
  setMinimumWidth(260);
  setMaximumWidth(340);

  // Remembered apart from the pickers, which are emptied and refilled whenever another model opens.
  connect(layer_, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (index >= 0) wantedLayer_ = layer_->itemData(index).toInt();
  });
  connect(head_, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (index >= 0) wantedHead_ = head_->itemData(index).toInt();
  });
  connect(layer_, &QComboBox::activated, this, &TextSidePanel::attentionHeadChosen);
  connect(head_, &QComboBox::activated, this, &TextSidePanel::attentionHeadChosen);
}

void TextSidePanel::setModel(const stx::engine::ModelSummary* summary) {
  const int wantedLayer = wantedLayer_, wantedHead = wantedHead_;
  const QSignalBlocker blockLayer(layer_), blockHead(head_);
  layer_->clear();
  head_->clear();
  if (!summary) return;
  for (int l = 0; l < summary->layers; ++l) layer_->addItem(tr("Layer %1").arg(l + 1), l);
  head_->addItem(tr("All heads (average)"), kAllHeads);
  for (int h = 0; h < summary->heads; ++h) head_->addItem(tr("Head %1").arg(h + 1), h);
  layer_->setCurrentIndex(std::max(layer_->findData(wantedLayer), 0));
  head_->setCurrentIndex(std::max(head_->findData(wantedHead), 0));
}

int TextSidePanel::layer() const { return layer_->currentIndex() < 0 ? -1 : layer_->currentData().toInt(); }

int TextSidePanel::head() const {
  return head_->currentIndex() < 0 ? wantedHead_ : head_->currentData().toInt();
}

void TextSidePanel::setState(bool modelReady, bool generating, bool canExport, int samples) {
  generate_->setEnabled(modelReady && !generating);
  layer_->setEnabled(modelReady);
  head_->setEnabled(modelReady);
  export_->setEnabled(canExport);
  exportAll_->setEnabled(canExport && samples > 1);
}

void TextSidePanel::restore(QSettings& settings) {
  sampling_->restore(settings);
  length_->setValue(settings.value(QStringLiteral("bytesToGenerate"), length_->value()).toInt());
  stopString_->setText(settings.value(QStringLiteral("stopString"), stopString_->text()).toString());
  liveAttention_->setChecked(
      settings.value(QStringLiteral("liveAttention"), liveAttention_->isChecked()).toBool());
  exportAll_->setChecked(settings.value(QStringLiteral("exportAll"), exportAll_->isChecked()).toBool());
  const int layer = settings.value(QStringLiteral("attentionLayer"), wantedLayer_).toInt();
  const int head = settings.value(QStringLiteral("attentionHead"), wantedHead_).toInt();
  wantedLayer_ = layer;
  wantedHead_ = head;
  if (layer_->count() > 0) layer_->setCurrentIndex(std::max(layer_->findData(layer), 0));
  if (head_->count() > 0) head_->setCurrentIndex(std::max(head_->findData(head), 0));
}

void TextSidePanel::save(QSettings& settings) const {
  sampling_->save(settings);
  settings.setValue(QStringLiteral("bytesToGenerate"), length_->value());
  settings.setValue(QStringLiteral("stopString"), stopString_->text());
  settings.setValue(QStringLiteral("liveAttention"), liveAttention_->isChecked());
  settings.setValue(QStringLiteral("exportAll"), exportAll_->isChecked());
  settings.setValue(QStringLiteral("attentionLayer"), wantedLayer_);
  settings.setValue(QStringLiteral("attentionHead"), wantedHead_);
}

}  // namespace stx::studio
