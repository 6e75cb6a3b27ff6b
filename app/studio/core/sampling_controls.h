// Temperature, top-k, top-p, seed (with "random") and the number of samples: the controls every generation
// tab shares. With "random" on, the seed field shows the seed that was actually used once a run starts,
// so it can be copied and reused.
#pragma once

#include <QWidget>

#include <cstdint>
#include <optional>

#include "stx/engine/sample_request.h"

class QCheckBox;
class QDoubleSpinBox;
class QLineEdit;
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

  void restore(QSettings& settings);
  void save(QSettings& settings) const;

  QDoubleSpinBox* temperatureBox() const { return temperature_; }
  QLineEdit* seedEdit() const { return seed_; }
  QCheckBox* randomSeedBox() const { return randomSeed_; }
  QSpinBox* countBox() const { return count_; }

 private:
  QDoubleSpinBox* temperature_;
  QSpinBox* topK_;
  QDoubleSpinBox* topP_;
  QLineEdit* seed_;
  QCheckBox* randomSeed_;
  QSpinBox* count_;
};

}  // namespace stx::studio
