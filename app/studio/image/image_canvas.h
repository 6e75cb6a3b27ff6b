// The Image tab's canvas: the prompt image (when one is open) and a grid of samples, each drawn at an
// integer zoom so that small images stay readable, filling pixel by pixel as bytes arrive. Pixels not
// generated yet show as a dim checker. A horizontal line, dragged with the mouse, chooses how many rows are
// kept: of the prompt image for Generate, of the selected sample for Regenerate. Attention is drawn as an
// orange tint over the attended pixels with the current pixel outlined.
#pragma once

#include <QString>
#include <QWidget>
#include <cstdint>
#include <vector>

#include "core/coalesced_repaint.h"
#include "core/engine_types.h"

namespace stx::studio {

// What one head attended for one byte of a sample.
struct AttentionOverlay {
  qint64 position = -1;            // the byte being generated or inspected; -1: nothing to draw
  std::vector<int64_t> positions;  // attended byte positions, ascending
  std::vector<float> weights;      // one per position
};

class ImageCanvas : public QWidget {
  Q_OBJECT

 public:
  explicit ImageCanvas(QWidget* parent = nullptr);

  // The model's image shape; clears prompt and samples.
  void setShape(int height, int width, int channels);
  int imageHeight() const { return height_; }
  int imageWidth() const { return width_; }
  int imageChannels() const { return channels_; }
  qint64 imageBytes() const { return static_cast<qint64>(height_) * width_ * channels_; }

  // The image being completed (height * width * channels bytes), shown first; empty: none.
  void setPrompt(const Bytes& image, const QString& label);
  bool hasPrompt() const { return !prompt_.empty(); }

  // `count` empty samples: every pixel pending.
  void resetSamples(int count);
  int sampleCount() const { return static_cast<int>(samples_.size()); }
  // Bytes of `sample` from `position` on arrived (the engine's SampleBytes, or the prompt).
  void writeBytes(int sample, qint64 position, const uint8_t* bytes, qint64 size);
  // Bytes of `sample` from `position` on will be generated again: shown pending.
  void forgetFrom(int sample, qint64 position);
  // The samples as received so far; a byte counts only where receivedBytes says so.
  const std::vector<Bytes>& samples() const { return samples_; }
  // How many leading bytes of `sample` have arrived (every one of them, no gaps).
  qint64 receivedBytes(int sample) const;
  bool complete(int sample) const { return receivedBytes(sample) == imageBytes(); }
  // A short word under a sample: "stopped", "regenerating".
  void setNote(int sample, const QString& note);

  void setAttention(int sample, const AttentionOverlay& overlay);
  void clearAttention();
  const AttentionOverlay& attention(int sample) const;

  int selectedSample() const { return selected_; }
  void setSelectedSample(int sample);

  // Rows kept, 0 .. height - 1 (at least one row is always generated).
  int cutRow() const { return cutRow_; }
  void setCutRow(int row);

  // Where a sample is drawn (its pixels, without the label), for tests and tooltips; empty when hidden.
  QRect sampleRect(int sample) const;
  QRect promptRect() const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void sampleSelected(int sample);
  void cutRowChanged(int row);                  // the user dragged the line
  void pixelHovered(int sample, qint64 pixel);  // sample -1: the mouse left the samples
  void pixelClicked(int sample, qint64 pixel);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  struct Grid {
    double scale = 1;  // screen pixels per image pixel
    int columns = 1;
    int cellWidth = 0, cellHeight = 0;  // the image area; a label line sits under it
    int left = 0, top = 0;
  };
  // A point on a cell: cell 0 is the prompt when there is one, then the samples.
  struct Hit {
    int cell = -1;
    int sample = -1;  // -1 on the prompt cell
    int row = -1, column = -1;
    QRect rect;
  };

  int cellCount() const { return (hasPrompt() ? 1 : 0) + sampleCount(); }
  int promptOffset() const { return hasPrompt() ? 1 : 0; }
  Grid grid() const;
  Grid gridFor(QSize size) const;
  QRect cellRect(const Grid& grid, int cell) const;
  Hit hitTest(QPoint point) const;
  bool lineShownOn(int cell) const;
  int rowAt(const QRect& rect, int y) const;
  void drawCell(QPainter& painter, const Grid& grid, int cell);
  void drawAttention(QPainter& painter, const QRect& rect, double scale, const AttentionOverlay& overlay);
  QImage toImage(const Bytes& bytes, const std::vector<uint8_t>* known) const;
  void userSetsRow(int row);

  int height_ = 0, width_ = 0, channels_ = 0;
  Bytes prompt_;
  QString promptLabel_;
  std::vector<Bytes> samples_;
  std::vector<std::vector<uint8_t>> known_;  // 1 where the byte has arrived
  std::vector<QString> notes_;
  std::vector<AttentionOverlay> attention_;
  int selected_ = -1;
  int cutRow_ = 0;

  Hit press_;
  QPoint pressPoint_;
  bool draggingLine_ = false;
  int hoveredSample_ = -1;
  qint64 hoveredPixel_ = -1;
  CoalescedRepaint repaint_{this};
};

}  // namespace stx::studio
