// What the Image, Audio and Text tabs share: an engine of their own, the picker of the model they generate
// with, the open model, and where and how fast their latest generation ran. The base opens the model the
// picker chooses, accepts only models of the tab's kind, and keeps the status bar up to date from the
// engine's events; each tab says what the model means for its own views through the hooks below.
//
//   class ImageTab : public GenerationTab {
//     ImageTab(StudioContext* context) : GenerationTab(QStringLiteral("image"), context) { ... }
//     void modelOpened(const stx::engine::ModelSummary& summary) override { canvas_->setShape(...); }
//     ...
//   };
#pragma once

#include <QString>
#include <QStringList>  // core/engine_types.h uses QStringList without including it
#include <optional>

#include "core/engine_types.h"
#include "core/studio_tab.h"

namespace stx::studio {

class EngineHost;
class ModelPicker;
class SamplingControls;

class GenerationTab : public StudioTab {
  Q_OBJECT

 public:
  // kind: "image" | "audio" | "text": the models the picker lists and the tab accepts.
  GenerationTab(const QString& kind, StudioContext* context, QWidget* parent = nullptr);

  void useModel(const QString& path) override;
  void refreshModels() override;
  void activated() override;
  bool busy() const override;
  // Only a generation is work to lose; opening a model or inspecting attention is quick to redo.
  bool hasRunningWork() const override;
  void stop() override;

  // A model of the tab's kind is open and ready to generate.
  bool modelReady() const { return model_.has_value(); }
  const std::optional<stx::engine::ModelSummary>& model() const { return model_; }
  EngineHost* host() const { return host_; }
  // Each tab places the picker in its own layout.
  ModelPicker* modelPicker() const { return picker_; }

 protected:
  // The hooks, each called once the state above is up to date.
  // Whether the tab can generate with `summary` (opened from the picker); by default, a model of its kind.
  virtual bool acceptsModel(const stx::engine::ModelSummary& summary) const;
  // The engine is about to open `path` (the open model, if any, stays until the tab forgets it).
  virtual void openingModel(const QString& path) = 0;
  // `summary` is now model(); the picker already shows its summary line.
  virtual void modelOpened(const stx::engine::ModelSummary& summary) = 0;
  // The tab's sampling controls: they take an opened model's sampling defaults.
  virtual SamplingControls* samplingControls() const = 0;
  // The model opened but acceptsModel() refused it; no model is open now.
  virtual void modelRefused(const stx::engine::ModelSummary& summary) = 0;
  // The model could not be opened (`message` says why); no model is open now.
  virtual void modelFailed(const QString& message) = 0;
  // Any other job failed: a generation, a regeneration, an inspection.
  virtual void jobFailed(EngineJob job, const QString& message) = 0;
  // The engine became busy or idle: enable and disable the tab's controls.
  virtual void updateControls() = 0;
  // The model's name as the status bar shows it; by default the open model's name, empty without one.
  virtual QString statusModelName() const;

  // No model until the one at `path` has opened: generating waits, and the picker says it is opening.
  void forgetModel(const QString& path);
  // Opens the library's first model once the window has restored the last one (or had none), so that
  // Generate works at once.
  void openFirstModelLater();
  // The engine's log lines go to the log panel; its errors come through jobFailed() and friends instead.
  void logEngineLines();
  // The status bar: the model, where its generations run, the latest tokens/s.
  void showStatus();
  // A new run has no rate until its first progress.
  void clearTokensPerSecond() { tokensPerSecond_ = -1; }
  bool opening() const { return opening_; }
  QString openingPath() const { return openingPath_; }
  QString deviceDescription() const { return device_; }

 private:
  void openChosenModel(const QString& path);
  void onModelOpened(const stx::engine::ModelSummary& summary);
  void onFailed(EngineJob job, const QString& message);

  QString kind_;
  EngineHost* host_;
  ModelPicker* picker_;
  std::optional<stx::engine::ModelSummary> model_;
  bool opening_ = false;
  QString openingPath_;  // the model asked for last, whether or not it opened
  QString device_;       // where the latest generation ran, or where the next runs (Preferences > Device)
  double tokensPerSecond_ = -1;  // of the latest generation; negative: none yet
};

}  // namespace stx::studio
