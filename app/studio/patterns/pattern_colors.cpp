#include "patterns/pattern_colors.h"

namespace stx::studio {

namespace {

QColor mix(const QColor& a, const QColor& b, double t) {
  return QColor::fromRgbF(static_cast<float>(a.redF() * (1 - t) + b.redF() * t),
                          static_cast<float>(a.greenF() * (1 - t) + b.greenF() * t),
                          static_cast<float>(a.blueF() * (1 - t) + b.blueF() * t));
}

bool is_dark(const QColor& c) { return c.lightnessF() < 0.5; }

}  // namespace

PatternColors PatternColors::forPalette(const QPalette& palette) {
  PatternColors colors;
  const QColor base = palette.color(QPalette::Base);
  const QColor text = palette.color(QPalette::Text);
  colors.none_ = base;
  // A faint tint marks the future half, so the causal diagonal stays visible without competing with data.
  colors.later_ = mix(base, text, 0.10);
  colors.outside_ = palette.color(QPalette::Window);
  // Okabe-Ito-like hues (told apart with the common colour-vision deficiencies); slightly lighter on dark
  // themes so that they keep their contrast against a dark base.
  const bool dark = is_dark(base);
  colors.a1_ = dark ? QColor(0x4d, 0x9d, 0xf0) : QColor(0x1f, 0x6f, 0xc8);
  colors.a2_ = dark ? QColor(0xf2, 0xa3, 0x2a) : QColor(0xe0, 0x85, 0x00);
  colors.both_ = dark ? QColor(0xe0, 0x5c, 0xb0) : QColor(0xb8, 0x2e, 0x8a);
  colors.reach_ = dark ? QColor(0x3c, 0x8f, 0x62) : QColor(0x9a, 0xd8, 0xad);
  colors.highlight_ = palette.color(QPalette::Highlight);
  colors.outline_ = text;
  colors.gridLine_ = mix(base, text, 0.22);
  return colors;
}

QColor PatternColors::color(Role role) const {
  switch (role) {
    case Role::later: return later_;
    case Role::none: return none_;
    case Role::a1: return a1_;
    case Role::a2: return a2_;
    case Role::both: return both_;
    case Role::reach: return reach_;
    case Role::outside: return outside_;
  }
  return none_;
}

}  // namespace stx::studio
