#include "patterns/color_legend.h"

#include <QEvent>
#include <QGridLayout>
#include <QLabel>
#include <QPainter>
#include <QPixmap>

namespace stx::studio {

ColorLegend::ColorLegend(int columns, QWidget* parent) : QWidget(parent), columns_(std::max(1, columns)) {
  grid_ = new QGridLayout(this);
  grid_->setContentsMargins(0, 0, 0, 0);
  grid_->setHorizontalSpacing(6);
  grid_->setVerticalSpacing(2);
}

void ColorLegend::addEntry(PatternColors::Role role, const QString& text, bool outlined) {
  const int index = static_cast<int>(entries_.size());
  Entry entry{role, outlined, new QLabel, new QLabel(text)};
  const int row = index / columns_, column = (index % columns_) * 2;
  grid_->addWidget(entry.swatch, row, column);
  grid_->addWidget(entry.text, row, column + 1);
  grid_->setColumnStretch(column + 1, 1);
  paintSwatch(entry);
  entries_.push_back(entry);
}

QStringList ColorLegend::texts() const {
  QStringList out;
  for (const Entry& entry : entries_) out << entry.text->text();
  return out;
}

void ColorLegend::paintSwatch(const Entry& entry) const {
  const int side = std::max(10, fontMetrics().height() - 4);
  const qreal ratio = devicePixelRatioF();
  QPixmap pixmap(QSize(side, side) * ratio);
  pixmap.setDevicePixelRatio(ratio);
  pixmap.fill(Qt::transparent);
  const PatternColors colors = PatternColors::forPalette(palette());
  QPainter painter(&pixmap);
  painter.fillRect(QRectF(0, 0, side, side), colors.color(entry.role));
  // A border keeps "not attended" (the base colour) visible as a swatch.
  painter.setPen(QPen(entry.outlined ? colors.outline() : colors.gridLine(), entry.outlined ? 2 : 1));
  painter.drawRect(QRectF(0.5, 0.5, side - 1, side - 1));
  painter.end();
  entry.swatch->setPixmap(pixmap);
}

void ColorLegend::changeEvent(QEvent* event) {
  if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) {
    for (const Entry& entry : entries_) paintSwatch(entry);
  }
  QWidget::changeEvent(event);
}

}  // namespace stx::studio
