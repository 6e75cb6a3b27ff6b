#include "wizard/sample_view.h"

#include <QFontDatabase>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>

#include "stx/engine/data/audio_io.h"
#include "stx/engine/mulaw.h"

namespace stx::studio {

namespace {

constexpr int kWaveformBuckets = 400;  // enough columns for a wide preview; painting picks per pixel

}  // namespace

SampleView::SampleView(QWidget* parent) : QWidget(parent) {
  setAttribute(Qt::WA_OpaquePaintEvent);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

QImage SampleView::toImage(const Bytes& pixels, int height, int width, int channels) {
  if (height <= 0 || width <= 0 || (channels != 1 && channels != 3) ||
      pixels.size() !=
          static_cast<size_t>(height) * static_cast<size_t>(width) * static_cast<size_t>(channels)) {
    return {};
  }
  QImage image(width, height, channels == 1 ? QImage::Format_Grayscale8 : QImage::Format_RGB888);
  const int rowBytes = width * channels;
  for (int y = 0; y < height; ++y) {
    std::copy_n(pixels.data() + static_cast<size_t>(y) * rowBytes, rowBytes, image.scanLine(y));
  }
  return image;
}

QString SampleView::toText(const Bytes& bytes) {
  QString text =
      QString::fromUtf8(reinterpret_cast<const char*>(bytes.data()), static_cast<qsizetype>(bytes.size()));
  for (QChar& c : text) {
    if (c.category() == QChar::Other_Control && c != QLatin1Char('\n') && c != QLatin1Char('\t')) {
      c = QChar(0x00B7);  // a visible stand-in, so the preview never prints terminal control codes
    }
  }
  return text;
}

void SampleView::showImage(const Bytes& pixels, int height, int width, int channels) {
  image_ = toImage(pixels, height, width, channels);
  mode_ = image_.isNull() ? Mode::none : Mode::image;
  update();
}

void SampleView::showAudio(const Bytes& mulaw) {
  peaks_.clear();
  audioSeconds_ = static_cast<double>(mulaw.size()) / stx::engine::kSampleRate;
  if (!mulaw.empty()) {
    const size_t buckets = std::min<size_t>(kWaveformBuckets, mulaw.size());
    peaks_.reserve(buckets);
    for (size_t b = 0; b < buckets; ++b) {
      const size_t begin = b * mulaw.size() / buckets,
                   end = std::max(begin + 1, (b + 1) * mulaw.size() / buckets);
      float low = 1, high = -1;
      for (size_t i = begin; i < end; ++i) {
        const float x = stx::engine::mulaw_decode(mulaw[i]);
        low = std::min(low, x);
        high = std::max(high, x);
      }
      peaks_.emplace_back(low, high);
    }
  }
  mode_ = peaks_.empty() ? Mode::none : Mode::audio;
  update();
}

void SampleView::showText(const Bytes& bytes) {
  text_ = toText(bytes);
  mode_ = text_.isEmpty() ? Mode::none : Mode::text;
  update();
}

void SampleView::clear() {
  mode_ = Mode::none;
  image_ = {};
  text_.clear();
  peaks_.clear();
  update();
}

QSize SampleView::sizeHint() const { return mode_ == Mode::image ? QSize(96, 96) : QSize(360, 110); }

QSize SampleView::minimumSizeHint() const { return QSize(48, 48); }

void SampleView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  const QRect area = rect();
  painter.fillRect(area, palette().base());
  painter.setPen(palette().color(QPalette::Mid));
  painter.drawRect(area.adjusted(0, 0, -1, -1));
  const QRect inner = area.adjusted(4, 4, -4, -4);
  switch (mode_) {
    case Mode::none:
      painter.setPen(palette().color(QPalette::PlaceholderText));
      painter.drawText(inner, Qt::AlignCenter, tr("nothing yet"));
      break;
    case Mode::image: {
      // Whole multiples of the pixel size keep the pixels square and sharp.
      const int scale =
          std::max(1, std::min(inner.width() / image_.width(), inner.height() / image_.height()));
      const QSize size = image_.size() * scale;
      const QRect target(inner.center().x() - size.width() / 2, inner.center().y() - size.height() / 2,
                         size.width(), size.height());
      painter.setRenderHint(QPainter::SmoothPixmapTransform, false);
      painter.drawImage(target, image_);
      break;
    }
    case Mode::audio: {
      const double middle = inner.center().y(), half = inner.height() / 2.0;
      painter.setPen(palette().color(QPalette::Mid));
      painter.drawLine(QPointF(inner.left(), middle), QPointF(inner.right(), middle));
      painter.setPen(QPen(palette().color(QPalette::Highlight), 1));
      const int columns = std::max(1, inner.width());
      for (int x = 0; x < columns; ++x) {
        const size_t first = static_cast<size_t>(x) * peaks_.size() / static_cast<size_t>(columns);
        const size_t last =
            std::max(first + 1, static_cast<size_t>(x + 1) * peaks_.size() / static_cast<size_t>(columns));
        float low = 1, high = -1;
        for (size_t i = first; i < last && i < peaks_.size(); ++i) {
          low = std::min(low, peaks_[i].first);
          high = std::max(high, peaks_[i].second);
        }
        if (low > high) continue;
        painter.drawLine(QPointF(inner.left() + x, middle - high * half),
                         QPointF(inner.left() + x, middle - low * half));
      }
      painter.setPen(palette().color(QPalette::Text));
      painter.drawText(inner, Qt::AlignRight | Qt::AlignBottom, tr("%1 s").arg(audioSeconds_, 0, 'f', 2));
      break;
    }
    case Mode::text: {
      QFont font = QFontDatabase::systemFont(QFontDatabase::FixedFont);
      painter.setFont(font);
      painter.setPen(palette().color(QPalette::Text));
      painter.setClipRect(inner);
      painter.drawText(inner, Qt::AlignLeft | Qt::AlignTop | Qt::TextWrapAnywhere, text_);
      break;
    }
  }
}

}  // namespace stx::studio
