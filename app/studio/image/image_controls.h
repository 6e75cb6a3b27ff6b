// The Image tab's left panel: model, prompt image and rows kept, sampling, Generate and Regenerate, the
// attention layer and head, export. It only holds the controls; the tab decides what they do.
#pragma once

#include <QWidget>

#include "core/layer_head_picker.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QSettings;
class QSpinBox;

namespace stx::studio {

class ModelPicker;
class SamplingControls;

class ImageControls : public QWidget {
  Q_OBJECT

 public:
  // `picker` is the tab's (GenerationTab::modelPicker()); the panel only places it.
  ImageControls(ModelPicker* picker, int maxSamples, QWidget* parent = nullptr);

  // The open model's layers and heads. The choice made before (or restored from the settings) is kept where
  // it still exists.
  void setLayersAndHeads(int layers, int heads);
  int layer() const;  // -1 before a model is open
  int head() const;   // -1: all heads, their weights averaged

  // Sampling, attention choices (the model and folders are the tab's).
  void restore(QSettings& settings);
  void save(QSettings& settings) const;

  ModelPicker* picker() const { return picker_; }
  SamplingControls* sampling() const { return sampling_; }
  QLabel* promptText() const { return promptText_; }
  QPushButton* openImageButton() const { return openImage_; }
  QPushButton* clearImageButton() const { return clearImage_; }
  QSpinBox* keepRowsBox() const { return keepRows_; }
  QPushButton* generateButton() const { return generate_; }
  QPushButton* regenerateButton() const { return regenerate_; }
  QCheckBox* liveAttentionBox() const { return liveAttention_; }
  QComboBox* layerBox() const { return attentionHead_->layerBox(); }
  QComboBox* headBox() const { return attentionHead_->headBox(); }
  QPushButton* exportSelectedButton() const { return exportSelected_; }
  QPushButton* exportAllButton() const { return exportAll_; }

 signals:
  // The layer or head picked changed (not when a model fills the lists).
  void attentionChoiceChanged();

 private:
  ModelPicker* picker_;
  SamplingControls* sampling_;
  QLabel* promptText_;
  QPushButton* openImage_;
  QPushButton* clearImage_;
  QSpinBox* keepRows_;
  QPushButton* generate_;
  QPushButton* regenerate_;
  QCheckBox* liveAttention_;
  LayerHeadPicker* attentionHead_;
  QPushButton* exportSelected_;
  QPushButton* exportAll_;
};

}  // namespace stx::studio
