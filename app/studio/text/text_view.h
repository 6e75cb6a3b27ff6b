// The generated samples as text: the prompt in the palette's text colour, the continuation in an accent
// colour, and attention drawn as a background over the characters a head read (alpha by weight). One
// sample is shown at a time; all of them are kept.
//
// Bytes arrive in events faster than a screen can use them: they are stored at once and shown at most ~30
// times a second, appended to the document rather than rebuilding it. Each byte maps to one known character
// range (ByteText), so byte positions from the engine and character positions under the mouse convert
// both ways.
#pragma once

#include <QColor>
#include <QPair>
#include <QTextCharFormat>
#include <QTextEdit>
#include <QTimer>
#include <string_view>
#include <vector>

#include "core/engine_types.h"
#include "text/byte_text.h"

namespace stx::studio {

class TextView : public QTextEdit {
  Q_OBJECT

 public:
  // What one head attended when `position` was generated; weights are one per position.
  struct Attention {
    qint64 position = -1;  // -1: none
    std::vector<int64_t> positions;
    std::vector<float> weights;
  };
  // Extra-selection format properties, so that a reader (or a test) can tell the highlights apart.
  static constexpr int kWeightProperty = QTextFormat::UserProperty;       // double: the unit's weight
  static constexpr int kCurrentProperty = QTextFormat::UserProperty + 1;  // bool: the position generated

  explicit TextView(QWidget* parent = nullptr);

  // A new run of `count` samples that all start with `prompt`; what was shown before is dropped.
  void startRun(int count, const Bytes& prompt);
  // New bytes of `sample` starting at byte `position` (SampleBytes).
  void appendBytes(int sample, qint64 position, std::string_view bytes);
  // The run ended: `samples` are the engine's final bytes (they win over what was streamed).
  void finishRun(const std::vector<Bytes>& samples);

  int sampleCount() const { return static_cast<int>(samples_.size()); }
  int currentSample() const { return current_; }
  void setCurrentSample(int sample);
  const Bytes& sampleBytes(int sample) const;
  qint64 promptBytes() const { return prompt_; }
  // The shown sample's characters and where each byte sits among them.
  const ByteText& shownText() const;

  void setAttention(int sample, const Attention& attention);
  void clearAttention();
  const Attention& attention(int sample) const;

  // For the shown sample: the document characters of byte `position` ({start, count}; count 0 when it is not
  // on screen), the byte under document character `charPosition`, and the byte under a viewport point
  // (-1: none).
  QPair<int, int> charRange(qint64 position) const;
  qint64 byteAtChar(int charPosition) const;
  qint64 byteAt(const QPoint& viewportPoint) const;
  // Byte `position` of the shown sample as a user reads it: "'a'", "'é'", "'\n'", "0xFF".
  QString describeByte(qint64 position) const;

  // Chosen from the palette, so that they read on dark and light themes alike.
  QColor accentColor() const;
  QColor attentionColor() const;
  QColor currentColor() const;

  // Shows pending bytes and highlights now instead of at the next frame (tests, screenshots).
  void refreshNow();

 signals:
  void byteHovered(qint64 position);
  void byteClicked(qint64 position);

 protected:
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void scheduleRefresh();
  void refresh();
  void appendNewUnits();
  void updateHighlights();
  void updateFormats();

  std::vector<ByteText> samples_;
  std::vector<Attention> attention_;
  qint64 prompt_ = 0;
  int current_ = 0;
  int shownUnits_ = 0;   // units of the current sample already in the document
  bool rebuild_ = true;  // the document must be rebuilt from scratch at the next refresh
  QTimer frame_;         // coalesces refreshes to at most one per frame
  QTextCharFormat promptFormat_, generatedFormat_;
  qint64 hovered_ = -1, pressed_ = -1;
};

}  // namespace stx::studio
