// `stx-studio --screenshots DIR`: every tab and dialog of the studio rendered to DIR/<name>.png, for the
// documentation, the AppStream metainfo and anyone reviewing a change to the interface. The Image, Audio and
// Text tabs show a finished generation from the bundled models (fixed seeds, so a second run draws the same
// pictures), the training wizard a short fine-tuning run of the bundled text model.
//
// It runs offscreen on a settings file and a model library of its own, in a temporary folder, so the user's
// settings and models are neither read nor changed. Call it once per process: Qt keeps the settings path it
// sets until the process ends.
#pragma once

#include <QString>
#include <QStringList>

class QTextStream;

namespace stx::studio {

// The names of the files a complete run writes (without ".png"), in the order it writes them.
QStringList screenshot_names();

// Writes every screenshot into `folder` (created when missing). Prints a line to `out` for each file
// written and to `err` for each that could not be, naming the file and the reason. Returns 0 when every
// file was written, 1 otherwise. Needs a QApplication.
int render_screenshots(const QString& folder, QTextStream& out, QTextStream& err);

}  // namespace stx::studio
