// A bar across the top of the window that shows the latest error in plain words until dismissed, so an
// error is never only on a console and never blocks the window the way a modal box would.
#pragma once

#include <QFrame>

class QLabel;
class QToolButton;

namespace stx::studio {

class ErrorBanner : public QFrame {
  Q_OBJECT

 public:
  explicit ErrorBanner(QWidget* parent = nullptr);
  void showMessage(const QString& message);
  QString message() const;

 private:
  QLabel* text_;
  QToolButton* close_;
};

}  // namespace stx::studio
