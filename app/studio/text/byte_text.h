// A sample's raw bytes as displayable text, with a known mapping between byte positions and character
// positions. Models emit bytes, not characters: a multi-byte UTF-8 sequence may arrive split over two
// events, and a byte may be invalid UTF-8 altogether. Every byte belongs to exactly one unit (a whole
// character or one replacement character), so attention over byte positions can be drawn over text.
//
//   ByteText text;
//   text.append("h\xC3", 2);      // "h"; the half of "é" waits for its second byte
//   text.append("\xA9", 1);       // "hé"
//   text.unitOfByte(2);           // 1: bytes 1..2 are the unit "é" at character 1
#pragma once

#include <QString>
#include <QStringList>  // core/engine_types.h uses QStringList without including it
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/engine_types.h"

namespace stx::studio {

class ByteText {
 public:
  // One displayed character (or none, for '\r') and the bytes it stands for.
  struct Unit {
    qint64 byte = 0;    // first byte
    int byteCount = 1;  // 1..4
    int charStart = 0;  // position in text() (UTF-16 code units, as QTextDocument counts)
    int charCount = 1;  // 0..2
  };

  void clear();
  // Writes `data` at byte `position` (bytes from there on are replaced). Decodes what is complete.
  void write(qint64 position, std::string_view data);
  void append(std::string_view data) { write(static_cast<qint64>(bytes_.size()), data); }
  // No more bytes will come: a sequence cut off at the end is shown as replacement characters.
  void setComplete(bool complete);
  bool complete() const { return complete_; }
  // True when write() changed bytes that were already decoded (a caller showing units must start again).
  bool rewound() const { return rewound_; }
  void clearRewound() { rewound_ = false; }

  const Bytes& bytes() const { return bytes_; }
  const QString& text() const { return text_; }
  const std::vector<Unit>& units() const { return units_; }
  // The unit holding byte `position`; -1 while it is not decoded yet (or out of range).
  int unitOfByte(qint64 position) const;
  // The unit shown at character `charPosition` of text(); -1 when none.
  int unitAtChar(int charPosition) const;

 private:
  void decode();

  Bytes bytes_;
  QString text_;
  std::vector<Unit> units_;
  std::vector<int> unitOfByte_;  // one entry per decoded byte
  bool complete_ = false;
  bool rewound_ = false;
  qint64 forcedFrom_ = 0;  // decoded bytes before setComplete(true) forced the tail out
};

}  // namespace stx::studio
