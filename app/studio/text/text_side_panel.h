// The Text tab's settings column, as a chat app's side panel: sampling, how many bytes to generate (with a
// note on what fits in the context), the stop string, the attention layer and head, Generate and Export.
// It remembers its controls in the tab's settings.
#pragma once

#include <QWidget>

#include "core/engine_types.h"
#include "core/layer_head_picker.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSettings;
class QSpinBox;

namespace stx::studio {

class SamplingControls;

class TextSidePanel : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kAllHeads = LayerHeadPicker::kAllHeads;

  explicit TextSidePanel(QWidget* parent = nullptr);

  // Fills the layer and head pickers from the open model (none: empties them), keeping the user's choice.
  void setModel(const stx::engine::ModelSummary* summary);
  // The chosen layer (-1 before a model is open) and head (or kAllHeads).
  int layer() const;
  int head() const;
  // Enables what can be used: Generate with a model and no run, Export once there is a result.
  void setState(bool modelReady, bool generating, bool canExport, int samples);

  void restore(QSettings& settings);
  void save(QSettings& settings) const;

  SamplingControls* samplingControls() const { return sampling_; }
  QSpinBox* bytesToGenerateBox() const { return length_; }
  QLabel* contextNote() const { return contextNote_; }
  QLineEdit* stopStringEdit() const { return stopString_; }
  QCheckBox* liveAttentionBox() const { return liveAttention_; }
  QComboBox* layerBox() const { return attentionHead_->layerBox(); }
  QComboBox* headBox() const { return attentionHead_->headBox(); }
  QPushButton* generateButton() const { return generate_; }
  QPushButton* exportButton() const { return export_; }
  QCheckBox* exportAllBox() const { return exportAll_; }

 signals:
  // Another layer or head was picked (by the user, or restored from the settings).
  void attentionHeadChosen();

 private:
  SamplingControls* sampling_;
  QSpinBox* length_;
  QLabel* contextNote_;
  QLineEdit* stopString_;
  QCheckBox* liveAttention_;
  LayerHeadPicker* attentionHead_;
  QPushButton* generate_;
  QPushButton* export_;
  QCheckBox* exportAll_;
};

}  // namespace stx::studio
