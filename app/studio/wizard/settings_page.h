// Step 3: how long and how hard to train, and where the run is saved. When the page is shown it measures a
// few real training steps (EngineHost::estimate) and shows the time per step, the total time and the
// memory, before anything is started; the estimate can be cancelled and run again.
#pragma once

#include <QWizardPage>
#include <optional>

#include "stx/engine/training_estimate.h"

class QCheckBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace stx::studio {

class DeviceBox;
class EngineHost;

class SettingsPage : public QWizardPage {
  Q_OBJECT
  Q_PROPERTY(QString runFolder READ runFolder NOTIFY runFolderChanged)

 public:
  explicit SettingsPage(QWidget* parent = nullptr);

  // Fits the controls to the base model or preset (context, a free name) and starts the estimate.
  void initializePage() override;
  bool isComplete() const override;
  // Stops the estimate; refuses a run folder that appeared meanwhile.
  bool validatePage() override;
  void cleanupPage() override;

  // ModelLibrary::userFolder()/<name>.
  QString runFolder() const;
  // Why the run cannot be saved under this name, in plain words; empty when it can.
  QString folderProblem() const;

  void startEstimate();
  void cancelEstimate();
  bool estimating() const;
  const std::optional<stx::engine::TrainingEstimate>& estimate() const { return estimate_; }

  QSpinBox* stepsSpin() const { return steps_; }
  QSpinBox* batchSpin() const { return batch_; }
  QSpinBox* contextSpin() const { return context_; }
  QSpinBox* checkpointSpin() const { return checkpointEvery_; }
  QCheckBox* bf16Check() const { return bf16_; }
  // Where the run trains (the "device" field): the CUDA GPU is offered only when there is one.
  DeviceBox* deviceBox() const { return device_; }
  QLabel* deviceNote() const { return deviceNote_; }
  QLineEdit* nameEdit() const { return name_; }
  QLabel* estimateLabel() const { return estimateText_; }
  QPushButton* estimateButton() const { return estimateButton_; }

 signals:
  void runFolderChanged();
  void estimateFinished();

 private:
  QGroupBox* makeTrainingGroup();
  QGroupBox* makeSaveGroup();
  QGroupBox* makeEstimateGroup();
  void registerFields();
  void connectSignals();
  QString freeName(const QString& stem) const;
  void showEstimate();
  void markEstimateStale();

  EngineHost* host_;
  QSpinBox* steps_;
  QSpinBox* batch_;
  QDoubleSpinBox* learningRate_;
  QSpinBox* context_;
  QLabel* contextNote_;
  QDoubleSpinBox* validation_;
  QSpinBox* checkpointEvery_;
  QCheckBox* bf16_;
  DeviceBox* device_;
  QLabel* deviceNote_;
  QLineEdit* name_;
  QLabel* folderText_;
  QLabel* folderError_;
  QLabel* estimateText_;
  QProgressBar* estimateBusy_;
  QPushButton* estimateButton_;

  QString startingPoint_;  // the base model or preset the controls were fitted to
  QString suggestedName_;  // replaced when the starting point changes, unless the user typed a name
  std::optional<stx::engine::TrainingEstimate> estimate_;
  QString estimateError_;
  bool estimateStale_ = false;
};

}  // namespace stx::studio
