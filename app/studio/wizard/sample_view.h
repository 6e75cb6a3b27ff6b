// One small item of training data or one generated sample, drawn the way its kind reads best: an image
// (scaled up without smoothing, so single pixels stay visible), a mini-waveform of mu-law audio, or the
// first bytes of a text. The Data page shows a few of these; the Run page shows the latest sample.
#pragma once

#include <QImage>
#include <QString>
#include <QWidget>
#include <vector>

#include "core/engine_types.h"

namespace stx::studio {

class SampleView : public QWidget {
  Q_OBJECT

 public:
  explicit SampleView(QWidget* parent = nullptr);

  // pixels: height * width * channels bytes, raster order (channels 1 or 3).
  void showImage(const Bytes& pixels, int height, int width, int channels);
  // mulaw: 8-bit mu-law samples at 12 kHz.
  void showAudio(const Bytes& mulaw);
  void showText(const Bytes& bytes);
  void clear();

  bool isEmpty() const { return mode_ == Mode::none; }
  const QImage& image() const { return image_; }
  const QString& text() const { return text_; }
  // Audio: the (min, max) amplitude in [-1, 1] of each column bucket.
  const std::vector<std::pair<float, float>>& peaks() const { return peaks_; }

  // Raw model bytes as a QImage (Grayscale8 or RGB888); a null image when the sizes do not match.
  static QImage toImage(const Bytes& pixels, int height, int width, int channels);
  // Bytes as readable text: UTF-8 where valid, control characters other than newline and tab shown as dots.
  static QString toText(const Bytes& bytes);

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  enum class Mode { none, image, audio, text };
  Mode mode_ = Mode::none;
  QImage image_;
  QString text_;
  std::vector<std::pair<float, float>> peaks_;
  double audioSeconds_ = 0;
};

}  // namespace stx::studio
