// Reads a file the user opens or drops as the Text tab's prompt: plain checks in plain words, so that a
// wrong file (too large, a folder, gone, unreadable) is refused with a message naming it.
#pragma once

#include <QCoreApplication>
#include <QString>
#include <QStringList>
#include <optional>

namespace stx::studio {

class PromptFile {
  Q_DECLARE_TR_FUNCTIONS(PromptFile)

 public:
  // Larger files are refused: a prompt longer than any context is never read whole.
  static constexpr qint64 kMaxBytes = 1 << 20;

  // The suffixes the tab takes (lower case, no dot) and the Open dialog's filter for them.
  static const QStringList& suffixes();
  static QString filter();
  static bool accepts(const QString& path);

  struct Text {
    QString text;
    QString warning;  // set when the file is not valid UTF-8 (invalid bytes became U+FFFD)
  };
  // The file's text, or none with `error` set to "<file name>: <reason>".
  static std::optional<Text> read(const QString& path, QString* error);
};

}  // namespace stx::studio
