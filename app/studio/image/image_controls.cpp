#include "image/image_controls.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>

#include "core/model_picker.h"
#include "core/sampling_controls.h"

namespace stx::studio {

ImageControls::ImageControls(int maxSamples, QWidget* parent) : QWidget(parent) {
  picker_ = new ModelPicker(QStringLiteral("image"));
  auto* modelBox = new QGroupBox(tr("Model"));
  (new QVBoxLayout(modelBox))->addWidget(picker_);

  promptText_ = new QLabel;
  promptText_->setWordWrap(true);
  openImage_ = new QPushButton(tr("Open image..."));
  openImage_->setToolTip(tr("Complete an image: the model keeps its top rows and draws the rest"));
  clearImage_ = new QPushButton(tr("Clear"));
  clearImage_->setToolTip(tr("Forget the prompt image: samples start from nothing"));
  keepRows_ = new QSpinBox;
  keepRows_->setRange(0, 0);
  keepRows_->setToolTip(
      tr("Rows kept from the top (of the prompt image, or of the selected sample when "
         "regenerating); drag the yellow line on the canvas to change it"));
  auto* imageButtons = new QHBoxLayout;
  imageButtons->addWidget(openImage_, 1);
  imageButtons->addWidget(clearImage_);
  auto* promptBox = new QGroupBox(tr("Prompt image"));
  auto* promptLayout = new QFormLayout(promptBox);
  promptLayout->addRow(promptText_);
  promptLayout->addRow(imageButtons);
  promptLayout->addRow(tr("Keep rows"), keepRows_);

  sampling_ = new SamplingControls(maxSamples);
  sampling_->setSampleCount(std::min(4, maxSamples));
  auto* samplingBox = new QGroupBox(tr("Sampling"));
  (new QVBoxLayout(samplingBox))->addWidget(sampling_);

  generate_ = new QPushButton(tr("Generate"));
  generate_->setDefault(true);
  generate_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
  generate_->setToolTip(tr("Draw the samples (Ctrl+Return)"));
  regenerate_ = new QPushButton(tr("Regenerate from here"));
  regenerate_->setToolTip(tr("Keep the selected sample above the yellow line and draw the rest again"));

  liveAttention_ = new QCheckBox(tr("Show while generating"));
  liveAttention_->setChecked(true);
  liveAttention_->setToolTip(tr("Tint the pixels the chosen head reads for the pixel being drawn"));
  layer_ = new QComboBox;
  head_ = new QComboBox;
  head_->setToolTip(tr("merged: every head's weights averaged (while generating, head 1 is shown)"));
  connect(layer_, &QComboBox::currentIndexChanged, this, &ImageControls::attentionChoiceChanged);
  connect(head_, &QComboBox::currentIndexChanged, this, &ImageControls::attentionChoiceChanged);
  auto* attentionHint =
      new QLabel(tr("After generating, point at a pixel to see what it attended; click to keep it."));
  attentionHint->setWordWrap(true);
  auto* attentionBox = new QGroupBox(tr("Attention"));
  auto* attentionLayout = new QFormLayout(attentionBox);
  attentionLayout->addRow(liveAttention_);
  attentionLayout->addRow(tr("Layer"), layer_);
  attentionLayout->addRow(tr("Head"), head_);
  attentionLayout->addRow(attentionHint);

  exportSelected_ = new QPushButton(tr("Export selected..."));
  exportAll_ = new QPushButton(tr("Export all..."));
  auto* exportBox = new QGroupBox(tr("Export PNG"));
  auto* exportLayout = new QHBoxLayout(exportBox);
  exportLayout->addWidget(exportSelected_);
  exportLayout->addWidget(exportAll_);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 4, 0);
  layout->addWidget(modelBox);
  layout->addWidget(promptBox);
  layout->addWidget(samplingBox);
  layout->addWidget(generate_);
  layout->addWidget(regenerate_);
  layout->addWidget(attentionBox);
  layout->addWidget(exportBox);
  layout->addStretch(1);
  setLayersAndHeads(0, 0);
}

void ImageControls::setLayersAndHeads(int layers, int heads) {
  const int layer = layer_->count() > 0 ? layer_->currentData().toInt() : wantedLayer_;
  const int head = head_->count() > 0 ? head_->currentData().toInt() : wantedHead_;
  const QSignalBlocker blockLayer(layer_), blockHead(head_);
  layer_->clear();
  head_->clear();
  if (layers > 0 && heads > 0) {
    for (int i = 0; i < layers; ++i) layer_->addItem(tr("Layer %1").arg(i + 1), i);
    head_->addItem(tr("merged (all heads averaged)"), -1);
    for (int i = 0; i < heads; ++i) head_->addItem(tr("Head %1").arg(i + 1), i);
    layer_->setCurrentIndex(std::max(0, layer_->findData(layer)));
    head_->setCurrentIndex(std::max(0, head_->findData(head)));
  } else {
    wantedLayer_ = layer;
    wantedHead_ = head;
  }
  layer_->setEnabled(layers > 0);
  head_->setEnabled(heads > 0);
}

int ImageControls::layer() const { return layer_->count() > 0 ? layer_->currentData().toInt() : -1; }

int ImageControls::head() const { return head_->count() > 0 ? head_->currentData().toInt() : -1; }

void ImageControls::restore(QSettings& settings) {
  sampling_->restore(settings);
  wantedLayer_ = settings.value(QStringLiteral("layer"), 0).toInt();
  wantedHead_ = settings.value(QStringLiteral("head"), -1).toInt();
  if (layer_->count() > 0) layer_->setCurrentIndex(std::max(0, layer_->findData(wantedLayer_)));
  if (head_->count() > 0) head_->setCurrentIndex(std::max(0, head_->findData(wantedHead_)));
  liveAttention_->setChecked(settings.value(QStringLiteral("liveAttention"), true).toBool());
}

void ImageControls::save(QSettings& settings) const {
  sampling_->save(settings);
  settings.setValue(QStringLiteral("layer"), layer_->count() > 0 ? layer() : wantedLayer_);
  settings.setValue(QStringLiteral("head"), head_->count() > 0 ? head() : wantedHead_);
  settings.setValue(QStringLiteral("liveAttention"), liveAttention_->isChecked());
}

}  // namespace stx::studio
