// The Image tab: sample images from an image model, or complete an image the user opened (keep its top rows,
// let the model draw the rest), watch the samples fill pixel by pixel with the attention of the byte being
// drawn, regenerate a sample from a chosen row, inspect what a head attended for any pixel afterwards, and
// export PNGs that record how they were made.
#pragma once

#include <QString>
#include <QStringList>
#include <vector>

#include "core/engine_types.h"
#include "core/generation_tab.h"
#include "image/image_canvas.h"
#include "image/image_export.h"

class QCheckBox;
class QLabel;
class QPushButton;
class QSpinBox;

namespace stx::studio {

class AttentionInspector;
class ImageControls;
class ImageLoader;
class JobProgress;
class SamplingControls;

class ImageTab : public GenerationTab {
  Q_OBJECT

 public:
  explicit ImageTab(StudioContext* context, QWidget* parent = nullptr);

  QString openFilter() const override;
  void openFile(const QString& path) override;
  bool acceptsFile(const QString& path) const override;
  bool canExport() const override;
  void exportResults() override;
  void restoreSettings(QSettings& settings) override;
  void saveSettings(QSettings& settings) const override;
  // A generation or regeneration is queued or running; opening a model or inspecting a pixel does not count.
  bool busy() const override { return job_ != Job::none; }

  // What the buttons do, without the dialogs (the window's actions and the tests call these).
  void generate();
  void regenerateSelected();
  // Writes sample `index` (or all, numbered "name-1.png"...) to `path`; false after showing the error.
  bool exportSample(int index, const QString& path, stx::engine::Overwrite overwrite);
  bool exportAll(const QString& path, stx::engine::Overwrite overwrite);
  // Shows what the chosen layer and head attended for byte `position` of a finished sample.
  void inspectAt(int sample, qint64 position);

  const stx::engine::SampleResult& lastResult() const { return lastResult_; }
  // The finished samples (prompt included), as exports and inspections use them.
  const std::vector<Bytes>& samples() const { return results_; }
  const Bytes& promptImage() const { return promptImage_; }

  ImageCanvas* canvas() const { return canvas_; }
  SamplingControls* samplingControls() const override { return sampling_; }
  JobProgress* progress() const { return progress_; }
  ImageControls* controls() const { return controls_; }
  QPushButton* generateButton() const { return generate_; }
  QPushButton* regenerateButton() const { return regenerate_; }
  QSpinBox* keepRowsBox() const { return keepRows_; }
  QCheckBox* liveAttentionBox() const { return liveAttention_; }

 protected:
  bool acceptsModel(const stx::engine::ModelSummary& summary) const override;
  void openingModel(const QString& path) override;
  void modelOpened(const stx::engine::ModelSummary& summary) override;
  void modelRefused(const stx::engine::ModelSummary& summary) override;
  void modelFailed(const QString& message) override;
  void jobFailed(EngineJob job, const QString& message) override;
  void updateControls() override;

 private:
  enum class Job { none, generate, regenerate };

  void connectEngine();
  void jobEnded(EngineJob job, bool ok);
  void sampleStarted(const stx::engine::SampleStarted& started);
  void sampleBytes(const stx::engine::SampleBytes& bytes);
  void sampleProgress(const stx::engine::SampleProgress& progress);
  void attentionProbe(const stx::engine::AttentionProbe& probe);
  void sampleFinished(const stx::engine::SampleResult& result);
  void inspected(const stx::engine::AttentionProbe& probe);
  void pixelHovered(int sample, qint64 pixel);
  void pixelClicked(int sample, qint64 pixel);
  void imageLoaded(const QString& path, const Bytes& bytes);
  void imageFailed(const QString& path, const QString& message);
  void clearPromptImage();
  stx::engine::SampleRequest baseRequest() const;
  int cellOf(int64_t engineSample) const;
  void updatePromptText();
  void exportSelectedWithDialog();
  void exportAllWithDialog();
  QString askExportPath(const QString& title, const QString& suggestedName);
  bool confirmReplacing(const QStringList& existing);
  void openImageWithDialog();

  AttentionInspector* inspector_;
  ImageLoader* loader_;

  // The panel's controls the tab uses most, kept at hand.
  ImageControls* controls_ = nullptr;
  SamplingControls* sampling_ = nullptr;
  QLabel* promptText_ = nullptr;
  QSpinBox* keepRows_ = nullptr;
  QPushButton* generate_ = nullptr;
  QPushButton* regenerate_ = nullptr;
  QCheckBox* liveAttention_ = nullptr;
  QPushButton* exportSelected_ = nullptr;
  QPushButton* exportAll_ = nullptr;
  ImageCanvas* canvas_ = nullptr;
  JobProgress* progress_ = nullptr;

  QString promptPath_;     // the image whose bytes are in promptImage_
  QString requestedPath_;  // the image being loaded, if any
  Bytes promptImage_;      // at the open model's shape

  Job job_ = Job::none;
  int regenerateTarget_ = -1;
  SampleOrigin jobOrigin_;  // the running job's prompt and settings; its seed once started
  stx::engine::SampleResult lastResult_;
  stx::engine::ModelSummary resultsModel_;  // the model the results came from, which exports record
  std::vector<Bytes> results_;
  std::vector<SampleOrigin> origins_;

  struct Pinned {  // the pixel last clicked: its attention stays when the mouse leaves
    int sample = -1;
    qint64 position = -1;
    AttentionOverlay overlay;
  } pinned_;

  QString imageFolder_, exportFolder_;
};

}  // namespace stx::studio
