// Export TXT: where to write, and the writing itself through the engine's atomic writer (temp file, fsync,
// rename), so that a failed export never leaves half a file where a good one was.
#pragma once

#include <QCoreApplication>
#include <QString>
#include <QStringList>
#include <vector>

#include "core/engine_types.h"

class QWidget;

namespace stx::studio {

class TextExport {
  Q_DECLARE_TR_FUNCTIONS(TextExport)

 public:
  // Asks for the file; empty when the user cancels. With several samples the files written are numbered
  // (name-1.txt, ...): the dialog's own overwrite question would be about the wrong name, so those are
  // asked about here. `folder` is where the dialog opens, and becomes the chosen file's folder.
  static QString askPath(QWidget* parent, const QString& suggestedName, int samples, QString* folder);
  // Writes one sample to `path`, or several to numbered_path(path, i, n), replacing existing files (the
  // user was asked). Returns the files written. Throws stx::engine::Error naming the file on failure.
  static QStringList write(const QString& path, const std::vector<Bytes>& samples);
};

}  // namespace stx::studio
