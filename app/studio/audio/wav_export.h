// Writing the Audio tab's samples as WAV files through the engine's writer (atomic, with the model, seed,
// settings and prompt in the LIST/INFO chunk), and asking where to.
#pragma once

#include <QString>
#include <QStringList>
#include <vector>

#include "core/engine_types.h"
#include "stx/engine/export/export.h"

class QWidget;

namespace stx::studio {

class WavExport {
 public:
  // A save dialog starting at `suggested`; adds ".wav" when missing and asks before replacing any of the
  // `count` numbered files (name-1.wav, ...) that the dialog itself did not ask about. Empty: cancelled.
  static QString askTarget(QWidget* parent, const QString& title, const QString& suggested, int count);

  // Writes samples[i] for each i of `which` to `path`, numbered when there are several, replacing files.
  // Each file's metadata says which of the samples it is ("Sample: 2 of 4").
  // Stops at the first failure and puts its one-line reason (naming the file) in *error. Returns the
  // files written.
  static QStringList write(const QString& path, const std::vector<Bytes>& samples,
                           const std::vector<int>& which, int rate, const stx::engine::ExportInfo& info,
                           QString* error);
};

}  // namespace stx::studio
