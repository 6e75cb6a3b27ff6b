#include "window/error_banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QStyle>
#include <QToolButton>

namespace stx::studio {

ErrorBanner::ErrorBanner(QWidget* parent) : QFrame(parent) {
  setObjectName(QStringLiteral("errorBanner"));
  // A red that reads on both dark and light palettes, with the palette's own bright text on it.
  setStyleSheet(QStringLiteral("#errorBanner { background: #b3261e; border-radius: 4px; }"
                               "#errorBanner QLabel { color: white; }"));
  auto* icon = new QLabel;
  icon->setPixmap(style()->standardIcon(QStyle::SP_MessageBoxWarning).pixmap(20, 20));
  text_ = new QLabel;
  text_->setWordWrap(true);
  text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  close_ = new QToolButton;
  close_->setText(tr("Dismiss"));
  close_->setAutoRaise(true);
  connect(close_, &QToolButton::clicked, this, &QWidget::hide);
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(8, 4, 4, 4);
  row->addWidget(icon);
  row->addWidget(text_, 1);
  row->addWidget(close_);
  hide();
}

void ErrorBanner::showMessage(const QString& message) {
  text_->setText(message);
  show();
}

QString ErrorBanner::message() const { return isVisible() ? text_->text() : QString(); }

}  // namespace stx::studio
