// Repaints a widget at most ~30 times a second however often its data changes: markDirty() from every
// event, one update() per frame. Generation events arrive faster than a screen can use them.
#pragma once

#include <QTimer>
#include <QWidget>

namespace stx::studio {

class CoalescedRepaint {
 public:
  explicit CoalescedRepaint(QWidget* widget, int frameMs = 33) : widget_(widget) {
    timer_.setSingleShot(true);
    timer_.setInterval(frameMs);
    QObject::connect(&timer_, &QTimer::timeout, widget, [w = widget] { w->update(); });
  }
  void markDirty() {
    if (!timer_.isActive()) timer_.start();
  }

 private:
  QWidget* widget_;
  QTimer timer_;
};

}  // namespace stx::studio
