#include "core/job_progress.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>

#include <cmath>

namespace stx::studio {

QString format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return QStringLiteral("--");
  const qint64 s = static_cast<qint64>(std::llround(seconds));
  const qint64 h = s / 3600, m = (s / 60) % 60, sec = s % 60;
  if (h > 0) return QStringLiteral("%1:%2:%3").arg(h).arg(m, 2, 10, QChar('0')).arg(sec, 2, 10, QChar('0'));
  return QStringLiteral("%1:%2").arg(m).arg(sec, 2, 10, QChar('0'));
}

JobProgress::JobProgress(QWidget* parent) : QWidget(parent) {
  bar_ = new QProgressBar;
  bar_->setRange(0, 1000);
  bar_->setValue(0);
  bar_->setTextVisible(true);
  label_ = new QLabel(tr("Ready"));
  label_->setMinimumWidth(220);
  stop_ = new QPushButton(tr("Stop"));
  stop_->setEnabled(false);
  stop_->setToolTip(tr("Stop the job; what was made so far is kept (Esc)"));
  stop_->setShortcut(Qt::Key_Escape);
  connect(stop_, &QPushButton::clicked, this, &JobProgress::stopRequested);
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(bar_, 1);
  row->addWidget(label_);
  row->addWidget(stop_);
}

void JobProgress::start(const QString& what) {
  bar_->setValue(0);
  bar_->setFormat(QStringLiteral("%p%"));
  label_->setText(what);
  stop_->setEnabled(true);
}

void JobProgress::update(qint64 done, qint64 total, double rate, const QString& unit, double etaSeconds) {
  bar_->setValue(total > 0 ? static_cast<int>(1000.0 * static_cast<double>(done) / static_cast<double>(total)) : 0);
  const QLocale locale;
  QString text = tr("%1 / %2").arg(locale.toString(done), locale.toString(total));
  if (rate >= 0) text += QStringLiteral(" · ") + tr("%1 %2/s").arg(locale.toString(rate, 'f', 0), unit);
  if (etaSeconds >= 0) text += QStringLiteral(" · ") + tr("ETA %1").arg(format_duration(etaSeconds));
  label_->setText(text);
}

void JobProgress::finish(const QString& message) {
  label_->setText(message);
  stop_->setEnabled(false);
}

}  // namespace stx::studio
