#include "window/steady_tab_widget.h"

#include <QEvent>
#include <QTabBar>

namespace stx::studio {

bool SteadyTabWidget::event(QEvent* event) {
  if (event->type() == QEvent::LayoutRequest) {
    const Hints now{tabBar()->sizeHint(), minimumSizeHint(), sizeHint()};
    if (laidOut_ && now == last_) return true;  // nothing the tab widget places has changed
    last_ = now;
    laidOut_ = true;
  }
  return QTabWidget::event(event);
}

}  // namespace stx::studio
