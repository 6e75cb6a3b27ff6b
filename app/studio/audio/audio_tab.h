// The Audio tab: generate 12 kHz mu-law audio with an audio model, unconditionally or continuing the start of
// a clip the user opens or drops, watch it grow in a waveform, play it (also while it is still being
// generated), see what a head attends to, and export WAVs at 12, 44.1 or 48 kHz.
#pragma once

#include <QPointer>
#include <QString>
#include <QStringList>  // before engine_types.h, which uses it without including it
#include <optional>
#include <vector>

#include "core/engine_types.h"
#include "core/generation_tab.h"
#include "core/layer_head_picker.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;

namespace stx::studio {

class AudioPlayer;
class PlaybackBar;
class AttentionInspector;
class JobProgress;
class PromptClipBox;
class SamplingControls;
class WaveformView;

class AudioTab : public GenerationTab {
  Q_OBJECT

 public:
  explicit AudioTab(StudioContext* context, QWidget* parent = nullptr);
  ~AudioTab() override;

  QString openFilter() const override;
  void openFile(const QString& path) override;
  bool acceptsFile(const QString& path) const override;
  bool canExport() const override;
  void exportResults() override;
  void restoreSettings(QSettings& settings) override;
  void saveSettings(QSettings& settings) const override;
  // Stops the generation and the playback.
  void stop() override;

  // Starts a generation with the controls' settings (what the Generate button does).
  void generate();
  // Writes the selected sample (or every sample, numbered) as WAV at `rate` to `path`, replacing what is
  // there; errors go to showError. Returns the files written.
  QStringList exportTo(const QString& path, int rate, bool allSamples);

  // The prompt the next generation starts with (the kept part of the clip) and the bytes per sample.
  const Bytes& promptBytes() const;
  qint64 generationLength() const;
  bool clipLoading() const;
  QString clipName() const;
  const std::vector<Bytes>& results() const { return results_; }
  std::optional<uint64_t> lastSeed() const { return lastSeed_; }
  const std::vector<stx::engine::AttentionProbe>& liveProbes() const { return liveProbes_; }

  WaveformView* waveform() const { return waveform_; }
  AudioPlayer* player() const;
  SamplingControls* samplingControls() const override { return sampling_; }
  JobProgress* progress() const { return progress_; }
  QPushButton* generateButton() const { return generate_; }
  QPushButton* playButton() const;
  QPushButton* stopPlaybackButton() const;
  QLabel* playbackNote() const;
  QDoubleSpinBox* durationBox() const { return duration_; }
  QDoubleSpinBox* promptKeepBox() const;
  QComboBox* layerBox() const { return attentionHead_->layerBox(); }
  QComboBox* headBox() const { return attentionHead_->headBox(); }
  QCheckBox* liveAttentionBox() const { return liveAttention_; }
  QComboBox* outputRateBox() const { return outputRate_; }
  QCheckBox* exportAllBox() const { return exportAll_; }

 protected:
  void openingModel(const QString& path) override;
  void modelOpened(const stx::engine::ModelSummary& summary) override;
  void modelRefused(const stx::engine::ModelSummary& summary) override;
  void modelFailed(const QString& message) override;
  void jobFailed(EngineJob job, const QString& message) override;
  void updateControls() override;
  QString statusModelName() const override;

 private:
  QWidget* buildControls();
  QWidget* buildExportRow();
  void connectWorker();
  void promptChanged();
  void updateLengthNote();
  void inspectAt(int lane, qint64 position);

  PlaybackBar* playback_;
  SamplingControls* sampling_;
  WaveformView* waveform_;
  JobProgress* progress_;
  PromptClipBox* prompt_;
  QDoubleSpinBox* duration_;
  QLabel* lengthNote_;
  LayerHeadPicker* attentionHead_;
  QCheckBox* liveAttention_;
  QLabel* attentionNote_;
  QPushButton* generate_;
  QComboBox* outputRate_;
  QCheckBox* exportAll_;
  QPushButton* export_;

  int64_t promptBytes_ = 0;  // of the run in progress (SampleStarted::prompt_bytes)

  // The run being shown, and how it was made (for exports).
  bool generating_ = false;
  Bytes runPrompt_;
  QString runPromptText_;
  stx::engine::SamplingSettings runSettings_;
  stx::engine::ModelSummary runModel_;
  std::optional<uint64_t> lastSeed_;
  std::vector<Bytes> results_;
  std::vector<stx::engine::AttentionProbe> liveProbes_;

  AttentionInspector* inspector_;
  QString lastFolder_;
};

}  // namespace stx::studio
