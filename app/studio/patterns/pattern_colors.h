// The colours of the Patterns tab, shared by the matrix, the position grid and their legends. The attended
// sets use fixed hues in a lighter or darker shade depending on the palette's base; everything that is
// "nothing here" comes from the palette itself, so the views follow the user's theme.
#pragma once

#include <QColor>
#include <QPalette>

namespace stx::studio {

class PatternColors {
 public:
  enum class Role {
    later,    // j > i: outside the causal triangle
    none,     // j <= i but not attended (not reached, on the grid)
    a1,       // in A1 only
    a2,       // in A2 only
    both,     // in A1 and A2
    reach,    // reached in two hops, not attended directly
    outside,  // no position (the grid's last row past n)
  };

  static PatternColors forPalette(const QPalette& palette);

  QColor color(Role role) const;
  // The picked query's row (matrix) and the outline of the query cell (grid).
  QColor highlight() const { return highlight_; }
  QColor outline() const { return outline_; }
  QColor gridLine() const { return gridLine_; }

 private:
  QColor later_, none_, a1_, a2_, both_, reach_, outside_, highlight_, outline_, gridLine_;
};

}  // namespace stx::studio
