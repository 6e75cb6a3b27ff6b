// A legend of colour swatches for the Patterns tab's views. The swatches are drawn from the palette's
// PatternColors each time, so that they follow a theme change like the views do.
#pragma once

#include <QString>
#include <QWidget>
#include <vector>

#include "patterns/pattern_colors.h"

class QGridLayout;
class QLabel;

namespace stx::studio {

class ColorLegend : public QWidget {
  Q_OBJECT

 public:
  explicit ColorLegend(int columns, QWidget* parent = nullptr);

  // A swatch of `role`'s colour; `outlined` draws it with the query's outline.
  void addEntry(PatternColors::Role role, const QString& text, bool outlined = false);
  // The entries' text, in order (for tests and accessibility).
  QStringList texts() const;

 protected:
  void changeEvent(QEvent* event) override;

 private:
  struct Entry {
    PatternColors::Role role;
    bool outlined;
    QLabel* swatch;
    QLabel* text;
  };
  void paintSwatch(const Entry& entry) const;

  int columns_;
  QGridLayout* grid_;
  std::vector<Entry> entries_;
};

}  // namespace stx::studio
