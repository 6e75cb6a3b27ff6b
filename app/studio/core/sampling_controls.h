// Temperature, top-k, top-p, min-p, seed (with "random") and the number of samples: the controls every
// generation tab shares. With "random" on, the seed field shows the seed that was actually used once a run
// starts, so it can be copied and reused. A model may carry its own sampling defaults (config.json
// "sampling", chosen by measuring its samples): opening a model other than the last one whose defaults
// were applied sets the four settings to its defaults, and "Model defaults" sets them again.
#pragma once

#include <QWidget>

#include <cstdint>
#include <optional>

#include <QString>

#include "stx/engine/sample_request.h"

class QCheckBox;
class QDoubleSpinBox;
class QLineEdit;
class QPushButton;
class QSettings;
class QSpinBox;

namespace stx::studio {

class SamplingControls : public QWidget {
  Q_OBJECT

 public:
  explicit SamplingControls(int maxSamples = 16, QWidget* parent = nullptr);

  stx::engine::SamplingSettings settings() const;
  // None when "random" is on: the engine draws one and reports it.
  std::optional<uint64_t> seed() const;
  int sampleCount() const;
  void setSampleCount(int count);
  // The engine reported the seed it used: shown in the seed field.
  void showSeedUsed(uint64_t seed);
  // A model opened: its defaults replace the four settings unless they were last applied for `folder`
  // (so a restart with the same model keeps what the user set).
  void modelOpened(const QString& folder, const stx::engine::SamplingSettings& defaults);

  void restore(QSettings& settings);
  void save(QSettings& settings) const;

  QDoubleSpinBox* temperatureBox() const { return temperature_; }
  QDoubleSpinBox* minPBox() const { return minP_; }
  QPushButton* modelDefaultsButton() const { return modelDefaults_; }
  QLineEdit* seedEdit() const { return seed_; }
  QCheckBox* randomSeedBox() const { return randomSeed_; }
  QSpinBox* countBox() const { return count_; }

 private:
  void apply(const stx::engine::SamplingSettings& settings);

  QDoubleSpinBox* temperature_;
  QSpinBox* topK_;
  QDoubleSpinBox* topP_;
  QDoubleSpinBox* minP_;
  QPushButton* modelDefaults_;
  stx::engine::SamplingSettings modelDefaultSettings_;
  QString defaultsFrom_;  // the model folder whose defaults were last applied
  QLineEdit* seed_;
  QCheckBox* randomSeed_;
  QSpinBox* count_;
};

}  // namespace stx::studio
