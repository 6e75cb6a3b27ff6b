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
#include <QSpinBox>
#include <QVBoxLayout>

#include "core/layer_head_picker.h"
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
  attentionHead_ = new LayerHeadPicker(0, this);

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
  attentionForm->addRow(tr("Layer"), attentionHead_->layerBox());
  attentionForm->addRow(tr("Head"), attentionHead_->headBox());
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

  connect(attentionHead_, &LayerHeadPicker::changed, this, &TextSidePanel::attentionHeadChosen);
}

void TextSidePanel::setModel(const stx::engine::ModelSummary* summary) {
  attentionHead_->setShape(summary ? static_cast<int>(summary->layers) : 0,
                           summary ? static_cast<int>(summary->heads) : 0);
}

int TextSidePanel::layer() const { return attentionHead_->layer(); }

int TextSidePanel::head() const { return attentionHead_->head(); }

void TextSidePanel::setState(bool modelReady, bool generating, bool canExport, int samples) {
  generate_->setEnabled(modelReady && !generating);
  attentionHead_->layerBox()->setEnabled(modelReady);
  attentionHead_->headBox()->setEnabled(modelReady);
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
  attentionHead_->restore(settings, QStringLiteral("attentionLayer"), QStringLiteral("attentionHead"));
}

void TextSidePanel::save(QSettings& settings) const {
  sampling_->save(settings);
  settings.setValue(QStringLiteral("bytesToGenerate"), length_->value());
  settings.setValue(QStringLiteral("stopString"), stopString_->text());
  settings.setValue(QStringLiteral("liveAttention"), liveAttention_->isChecked());
  settings.setValue(QStringLiteral("exportAll"), exportAll_->isChecked());
  attentionHead_->save(settings, QStringLiteral("attentionLayer"), QStringLiteral("attentionHead"));
}

}  // namespace stx::studio
