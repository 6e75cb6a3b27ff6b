#include "core/model_text.h"

#include <QLocale>

namespace stx::studio {

QString format_count(qint64 n) {
  if (n >= 1'000'000) return QString::number(static_cast<double>(n) / 1e6, 'f', 1) + QStringLiteral("M");
  if (n >= 10'000) return QString::number(static_cast<double>(n) / 1e3, 'f', 0) + QStringLiteral("k");
  return QString::number(n);
}

QString pattern_text(const stx::engine::ModelSummary& s) {
  const QString pattern = QString::fromStdString(s.pattern);
  if (s.pattern == "dense") return pattern;
  QString text = QStringLiteral("%1 l=%2").arg(pattern).arg(s.stride);
  if (s.pattern == "fixed") text += QStringLiteral(" c=%1").arg(s.summary);
  return text;
}

QString summary_line(const stx::engine::ModelSummary& s) {
  const QLocale locale;
  QStringList parts;
  QString kind = QString::fromStdString(s.kind);
  if (s.kind == "image") kind += QStringLiteral(" %1x%2x%3").arg(s.image_height).arg(s.image_width).arg(s.image_channels);
  parts << kind << pattern_text(s) << QObject::tr("context %1").arg(locale.toString(s.context))
        << QObject::tr("%1 parameters").arg(format_count(s.parameters));
  if (s.bits_per_byte)
    parts << (s.bits_per_byte_held_out ? QObject::tr("%1 bits/byte held-out") : QObject::tr("%1 bits/byte"))
                 .arg(*s.bits_per_byte, 0, 'f', 3);
  return parts.join(QStringLiteral(" · "));
}

}  // namespace stx::studio
