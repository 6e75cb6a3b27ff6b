#include "text/byte_text.h"

#include <algorithm>

namespace stx::studio {

namespace {

constexpr char32_t kReplacement = 0xFFFD;

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// How a sequence starting with `lead` goes on: its length (0: `lead` cannot start one) and the range its
// second byte must lie in (RFC 3629 excludes overlong forms, surrogates and code points above U+10FFFF).
struct LeadRule {
  int length = 0;
  uint8_t low = 0x80, high = 0xBF;
};

LeadRule lead_rule(uint8_t lead) {
  if (lead >= 0xC2 && lead <= 0xDF) return {2, 0x80, 0xBF};
  if (lead == 0xE0) return {3, 0xA0, 0xBF};
  if (lead == 0xED) return {3, 0x80, 0x9F};
  if (lead >= 0xE1 && lead <= 0xEF) return {3, 0x80, 0xBF};
  if (lead == 0xF0) return {4, 0x90, 0xBF};
  if (lead >= 0xF1 && lead <= 0xF3) return {4, 0x80, 0xBF};
  if (lead == 0xF4) return {4, 0x80, 0x8F};
  return {};
}

// A control byte would be invisible or break the layout: it is shown as its Control Pictures symbol
// (U+2400 block), except newline and tab, which text needs, and '\r', which is hidden so CRLF text reads
// as lines.
QString printable_ascii(uint8_t b) {
  if (b == '\n' || b == '\t') return QString(QChar(b));
  if (b == '\r') return {};
  if (b < 0x20) return QString(QChar(0x2400 + b));
  if (b == 0x7F) return QString(QChar(0x2421));
  return QString(QChar(b));
}

}  // namespace

void ByteText::clear() {
  bytes_.clear();
  text_.clear();
  units_.clear();
  unitOfByte_.clear();
  complete_ = false;
  rewound_ = false;
  forcedFrom_ = 0;
}

void ByteText::write(qint64 position, std::string_view data) {
  position = std::clamp<qint64>(position, 0, static_cast<qint64>(bytes_.size()));
  qint64 keepDecoded = static_cast<qint64>(unitOfByte_.size());
  if (complete_) {
    // More bytes after the end was declared: the tail shown as replacement characters may be a real
    // character after all.
    complete_ = false;
    keepDecoded = std::min(keepDecoded, forcedFrom_);
  }
  keepDecoded = std::min(keepDecoded, position);
  if (keepDecoded < static_cast<qint64>(unitOfByte_.size())) {
    // Drop every unit that holds a byte from keepDecoded on; a unit straddling it goes too.
    const int firstDropped = unitOfByte_[static_cast<size_t>(keepDecoded)];
    const Unit& unit = units_[static_cast<size_t>(firstDropped)];
    text_.truncate(unit.charStart);
    unitOfByte_.resize(static_cast<size_t>(unit.byte));
    units_.resize(static_cast<size_t>(firstDropped));
    rewound_ = true;
  }
  bytes_.resize(static_cast<size_t>(position));
  bytes_.insert(bytes_.end(), data.begin(), data.end());
  decode();
}

void ByteText::setComplete(bool complete) {
  if (complete == complete_) return;
  if (!complete) {
    write(static_cast<qint64>(bytes_.size()), {});  // undoes the forced decode of the tail
    return;
  }
  forcedFrom_ = static_cast<qint64>(unitOfByte_.size());
  complete_ = true;
  decode();
}

void ByteText::decode() {
  const size_t size = bytes_.size();
  size_t i = unitOfByte_.size();
  while (i < size) {
    const uint8_t lead = bytes_[i];
    Unit unit;
    unit.byte = static_cast<qint64>(i);
    unit.charStart = text_.size();
    QString shown;
    if (lead < 0x80) {
      shown = printable_ascii(lead);
    } else {
      const LeadRule rule = lead_rule(lead);
      int have = 1;  // bytes of the sequence present and valid so far
      bool valid = rule.length > 0;
      while (valid && have < rule.length && i + static_cast<size_t>(have) < size) {
        const uint8_t next = bytes_[i + static_cast<size_t>(have)];
        valid = have == 1 ? (next >= rule.low && next <= rule.high) : is_continuation(next);
        if (valid) ++have;
      }
      if (valid && have < rule.length && !complete_) break;  // the rest may come with the next event
      if (valid && have == rule.length) {
        char32_t code = lead & (0xFF >> (rule.length + 1));
        for (int k = 1; k < rule.length; ++k)
          code = (code << 6) | (bytes_[i + static_cast<size_t>(k)] & 0x3F);
        shown = QString::fromUcs4(&code, 1);
        unit.byteCount = rule.length;
      } else {
        // One replacement character per bad byte keeps every byte individually visible and inspectable.
        shown = QString::fromUcs4(&kReplacement, 1);
      }
    }
    unit.charCount = shown.size();
    text_ += shown;
    const int index = static_cast<int>(units_.size());
    units_.push_back(unit);
    unitOfByte_.insert(unitOfByte_.end(), static_cast<size_t>(unit.byteCount), index);
    i += static_cast<size_t>(unit.byteCount);
  }
}

int ByteText::unitOfByte(qint64 position) const {
  if (position < 0 || position >= static_cast<qint64>(unitOfByte_.size())) return -1;
  return unitOfByte_[static_cast<size_t>(position)];
}

int ByteText::unitAtChar(int charPosition) const {
  if (charPosition < 0 || charPosition >= text_.size()) return -1;
  // The last unit starting at or before charPosition that has a character there (skips hidden '\r').
  auto it = std::upper_bound(units_.begin(), units_.end(), charPosition,
                             [](int c, const Unit& u) { return c < u.charStart; });
  while (it != units_.begin()) {
    --it;
    if (it->charCount > 0) {
      return charPosition < it->charStart + it->charCount ? static_cast<int>(it - units_.begin()) : -1;
    }
  }
  return -1;
}

}  // namespace stx::studio
