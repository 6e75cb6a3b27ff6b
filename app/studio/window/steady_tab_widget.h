// The main window's tabs, without a whole-window repaint each time a label inside a page changes.
//
// A label's new text makes its layout recompute, and that reaches QTabWidget as a layout request, which it
// answers by laying out its bar and pages again and repainting all of itself. During a generation the
// progress and playback labels change 30 times a second: the whole window was painted 30 times a second,
// and on a 2-core machine that painting took the time the generation needed (audio at 0.60x of `stx sample`'s
// rate, the GUI thread at 100%; docs/benchmarks.md, "A busy machine"). A page lays itself out on its own request; here the tab widget acts on one only when
// what it lays out changed: its bar's size or the pages' size hints.
#pragma once

#include <QSize>
#include <QTabWidget>

namespace stx::studio {

class SteadyTabWidget : public QTabWidget {
  Q_OBJECT

 public:
  using QTabWidget::QTabWidget;

 protected:
  bool event(QEvent* event) override;

 private:
  struct Hints {
    QSize bar, minimum, preferred;
    bool operator==(const Hints& other) const {
      return bar == other.bar && minimum == other.minimum && preferred == other.preferred;
    }
  };
  Hints last_;
  bool laidOut_ = false;
};

}  // namespace stx::studio
