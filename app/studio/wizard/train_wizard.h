// The training wizard: data -> base model -> settings -> run -> finish. Each step is a QWizardPage that
// publishes what the user chose as wizard fields ("kind", "dataFolder", "baseModel", "preset", "steps",
// "batch", "learningRate", "context", "validationPercent", "checkpointEvery", "device", "modelName",
// "runFolder");
// trainOptions() turns them into the engine's TrainOptions.
//
// When it is first shown it looks in the user's library for a run that stopped short of its planned steps
// and offers to resume the newest; yes jumps straight to the Run page. Closing it while a run trains asks
// first, then stops the run and waits for its final checkpoint.
#pragma once

#include <QString>
#include <QWizard>
#include <array>

#include "stx/engine/trainer.h"

namespace stx::studio {

class StudioContext;
class DataPage;
class BaseModelPage;
class SettingsPage;
class RunPage;
class FinishPage;

class TrainWizard : public QWizard {
  Q_OBJECT

 public:
  enum PageId { DataPageId, BaseModelPageId, SettingsPageId, RunPageId, FinishPageId };

  explicit TrainWizard(StudioContext* context, QWidget* parent = nullptr);
  ~TrainWizard() override;

  StudioContext* context() const { return context_; }

  // "image" | "audio" | "text": the Data page's choice, or the resumed run's kind.
  QString kind() const;
  // The run folder: the Settings page's, or the resumed run.
  QString runFolder() const;
  // The image shape (height, width, channels) that data is read at: the base model's when one is chosen,
  // otherwise the image-small preset's 28x28x1.
  std::array<int, 3> imageShape() const;
  // The options of a new run from the pages, or of the resumed run (resume = its folder, steps = planned).
  stx::engine::TrainOptions trainOptions() const;

  // Non-empty while the wizard resumes a run the user picked from the resume offer.
  QString resumeFolder() const { return resumeFolder_; }
  // The newest run folder (latest.json) in ModelLibrary::userFolder() whose checkpoint stopped short of its
  // planned steps; empty when there is none.
  static QString newestResumableRun();
  // Asks whether to resume the newest unfinished run; returns true when the user said yes and it resumes.
  bool offerResume();
  // Jumps to the Run page and resumes `folder` (a run folder) up to its planned steps.
  void resumeRun(const QString& folder);

  DataPage* dataPage() const { return dataPage_; }
  BaseModelPage* baseModelPage() const { return baseModelPage_; }
  SettingsPage* settingsPage() const { return settingsPage_; }
  RunPage* runPage() const { return runPage_; }
  FinishPage* finishPage() const { return finishPage_; }

 signals:
  // At Finish: the new model's kind and run folder, for the window to add to the library and open.
  void modelReady(const QString& kind, const QString& path);

 public slots:
  void accept() override;
  // Asks before stopping a running training job, then waits for its final checkpoint. Also reached by
  // closing the window (QDialog::closeEvent calls it) and by Esc.
  void reject() override;

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  StudioContext* context_;
  DataPage* dataPage_;
  BaseModelPage* baseModelPage_;
  SettingsPage* settingsPage_;
  RunPage* runPage_;
  FinishPage* finishPage_;
  QString resumeFolder_;
  QString resumeKind_;
  qint64 resumeSteps_ = 0;
  bool offeredResume_ = false;
};

}  // namespace stx::studio
