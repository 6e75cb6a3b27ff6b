#include "image/image_controls.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>

#include "core/layer_head_picker.h"
#include "core/model_picker.h"
#include "core/sampling_controls.h"

namespace stx::studio {

ImageControls::ImageControls(ModelPicker* picker, int maxSamples, QWidget* parent)
    : QWidget(parent), picker_(picker) {
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
  attentionHead_ = new LayerHeadPicker(LayerHeadPicker::kAllHeads, this);
  connect(attentionHead_, &LayerHeadPicker::changed, this, &ImageControls::attentionChoiceChanged);
  auto* attentionHint =
      new QLabel(tr("After generating, point at a pixel to see what it attended; click to keep it."));
  attentionHint->setWordWrap(true);
  auto* attentionBox = new QGroupBox(tr("Attention"));
  auto* attentionLayout = new QFormLayout(attentionBox);
  attentionLayout->addRow(liveAttention_);
  attentionLayout->addRow(tr("Layer"), attentionHead_->layerBox());
  attentionLayout->addRow(tr("Head"), attentionHead_->headBox());
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

void ImageControls::setLayersAndHeads(int layers, int heads) { attentionHead_->setShape(layers, heads); }

int ImageControls::layer() const { return attentionHead_->layer(); }

int ImageControls::head() const { return attentionHead_->head(); }

void ImageControls::restore(QSettings& settings) {
  sampling_->restore(settings);
  attentionHead_->restore(settings, QStringLiteral("layer"), QStringLiteral("head"));
  liveAttention_->setChecked(settings.value(QStringLiteral("liveAttention"), true).toBool());
}

void ImageControls::save(QSettings& settings) const {
  sampling_->save(settings);
  attentionHead_->save(settings, QStringLiteral("layer"), QStringLiteral("head"));
  settings.setValue(QStringLiteral("liveAttention"), liveAttention_->isChecked());
}

}  // namespace stx::studio
