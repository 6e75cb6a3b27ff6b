// The Text tab: continue a prompt with a text model. The prompt is typed, opened or dropped; the
// continuation streams into a view in an accent colour, one or several samples at once. While it runs, the
// chosen head's attention is drawn live over the text; afterwards hovering a character (or clicking, to keep
// it) shows what that head, or all heads averaged, attended when the character was generated.
#pragma once

#include <QString>
#include <QStringList>  // core/engine_types.h uses QStringList without including it
#include <optional>

#include "core/engine_types.h"
#include "core/generation_tab.h"
#include "text/prompt_file.h"
#include "text/text_side_panel.h"
#include "text/text_view.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTabBar;

namespace stx::studio {

class TextAttentionInspector;
class JobProgress;
class SamplingControls;

class TextTab : public GenerationTab {
  Q_OBJECT

 public:
  static constexpr qint64 kMaxPromptFileBytes = PromptFile::kMaxBytes;

  explicit TextTab(StudioContext* context, QWidget* parent = nullptr);

  QString openFilter() const override;
  void openFile(const QString& path) override;
  bool acceptsFile(const QString& path) const override;
  bool canExport() const override;
  void exportResults() override;
  void restoreSettings(QSettings& settings) override;
  void saveSettings(QSettings& settings) const override;
  // Stops the generation and forgets the inspection waiting to run.
  void stop() override;

  // Writes the selected sample to `path`, or every sample to numbered_path(path, i, n) when allSamples,
  // replacing existing files (the user was asked). Errors go to showError; returns false then.
  bool exportTo(const QString& path, bool allSamples);
  // Shows what `position` of the selected sample attended (layer and head from the pickers).
  void inspectAt(qint64 position);

  const std::optional<stx::engine::SampleResult>& lastResult() const { return result_; }
  bool generating() const { return generating_; }

  QPlainTextEdit* promptEditor() const { return prompt_; }
  SamplingControls* samplingControls() const override { return side_->samplingControls(); }
  QSpinBox* bytesToGenerateBox() const { return side_->bytesToGenerateBox(); }
  QLabel* contextNote() const { return side_->contextNote(); }
  QLineEdit* stopStringEdit() const { return side_->stopStringEdit(); }
  QCheckBox* liveAttentionBox() const { return side_->liveAttentionBox(); }
  QComboBox* layerBox() const { return side_->layerBox(); }
  QComboBox* headBox() const { return side_->headBox(); }
  QPushButton* generateButton() const { return side_->generateButton(); }
  QPushButton* exportButton() const { return side_->exportButton(); }
  QCheckBox* exportAllBox() const { return side_->exportAllBox(); }
  JobProgress* progress() const { return progress_; }
  QTabBar* sampleBar() const { return sampleBar_; }
  TextView* view() const { return view_; }
  QLabel* attentionNote() const { return attentionNote_; }

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

  void openingModel(const QString& path) override;
  void modelOpened(const stx::engine::ModelSummary& summary) override;
  void modelRefused(const stx::engine::ModelSummary& summary) override;
  void modelFailed(const QString& message) override;
  void jobFailed(EngineJob job, const QString& message) override;
  void updateControls() override;
  QString statusModelName() const override;

 private:
  void buildLayout();
  void connectEngine();
  void generate();
  void onStarted(const stx::engine::SampleStarted& started);
  void onProgress(const stx::engine::SampleProgress& progress);
  void onProbe(const stx::engine::AttentionProbe& probe);
  void onFinished(const stx::engine::SampleResult& result);
  void onInspected(int sample, int layer, int head, const TextView::Attention& attention);
  void onJobFinished(EngineJob job);
  void requestInspect(qint64 position);
  void updateContextNote();
  // The open model's name, else the folder asked for: exports are named after it.
  QString modelName() const;
  static QString droppedFile(const QMimeData* mime);

  TextAttentionInspector* inspector_;
  QPlainTextEdit* prompt_ = nullptr;
  TextSidePanel* side_ = nullptr;
  JobProgress* progress_ = nullptr;
  QTabBar* sampleBar_ = nullptr;
  TextView* view_ = nullptr;
  QLabel* attentionNote_ = nullptr;

  std::optional<stx::engine::SampleResult> result_;
  bool generating_ = false;
  QString exportFolder_;
  qint64 inspected_ = -1;  // the position last asked about (hovered or clicked)
  qint64 pinned_ = -1;     // clicked: hovering no longer moves the highlight
};

}  // namespace stx::studio
