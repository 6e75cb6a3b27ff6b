// The Audio tab's waveform: one lane per sample, the prompt in its own colour, growing live as bytes
// arrive, with a time axis in seconds, a playhead, a cursor where the user clicked and attention marks
// (which earlier positions one head read, tick height and opacity by weight).
//
// Long clips are drawn as the min/max of each pixel column; mu-law is monotonic, so the column's smallest
// and largest bytes decode to its extremes and nothing is decoded per sample. Repaints are coalesced.
#pragma once

#include <QStringList>  // before engine_types.h, which uses it without including it
#include <QWidget>
#include <string>
#include <vector>

#include "core/coalesced_repaint.h"
#include "core/engine_types.h"

namespace stx::studio {

class WaveformView : public QWidget {
  Q_OBJECT

 public:
  explicit WaveformView(QWidget* parent = nullptr);

  // Starts over with `count` lanes, each beginning with `prompt`. The time axis spans `length` bytes, so
  // the waveform grows into place from the left.
  void reset(int count, const Bytes& prompt, qint64 length);
  // New bytes of lane `lane` starting at `position` (SampleBytes); a gap would be a bug upstream and is
  // filled with silence so that positions stay true.
  void appendBytes(int lane, qint64 position, const std::string& bytes);
  // The finished samples, exactly as the engine returned them.
  void setSamples(const std::vector<Bytes>& samples, qint64 promptBytes);
  void clear();
  // Shown instead of "Sample 1" on a single lane that is not a sample (the prompt clip before a run).
  void setTitle(const QString& title);

  int laneCount() const { return static_cast<int>(lanes_.size()); }
  const std::vector<Bytes>& lanes() const { return lanes_; }
  const Bytes& laneBytes(int lane) const;
  qint64 promptBytes() const { return promptBytes_; }

  int selectedLane() const { return selected_; }
  void setSelectedLane(int lane);
  // The frame being played in the selected lane; -1 hides the playhead.
  void setPlayhead(qint64 frame);
  qint64 playhead() const { return playhead_; }
  // The position last clicked in the selected lane (-1: none): playback starts there.
  qint64 cursor() const { return cursor_; }

  // What one head attended at `position` of `lane`: ticks at `positions`, sized by `weights`.
  void setAttention(int lane, qint64 position, const std::vector<int64_t>& positions,
                    const std::vector<float>& weights);
  void clearAttention();
  int attentionLane() const { return attentionLane_; }
  qint64 attentionPosition() const { return attentionPosition_; }
  const std::vector<int64_t>& attentionPositions() const { return attentionPositions_; }
  const std::vector<float>& attentionWeights() const { return attentionWeights_; }

  // Geometry, for painting, clicks and tests.
  QRect laneRect(int lane) const;
  int xForPosition(qint64 position) const;
  qint64 positionAt(int x) const;

  QSize sizeHint() const override { return {720, 320}; }
  QSize minimumSizeHint() const override { return {240, 120}; }

 signals:
  void laneSelected(int lane);
  // A click at `position` of `lane` (inside its bytes).
  void positionClicked(int lane, qint64 position);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  QRect plotRect() const;
  qint64 span() const;
  void paintLane(QPainter& painter, int lane) const;
  void paintAttention(QPainter& painter, const QRect& rect) const;
  void paintAxis(QPainter& painter) const;

  CoalescedRepaint repaint_;
  std::vector<Bytes> lanes_;
  QString title_;
  qint64 promptBytes_ = 0;
  qint64 length_ = 0;
  int selected_ = 0;
  qint64 playhead_ = -1;
  qint64 cursor_ = -1;
  int attentionLane_ = -1;
  qint64 attentionPosition_ = -1;
  std::vector<int64_t> attentionPositions_;
  std::vector<float> attentionWeights_;
};

}  // namespace stx::studio
