// Writes the pictures of `stx-studio --screenshots DIR`: each widget as DIR/<name>.png, through a temporary
// file and a rename (stx::engine::write_file_atomic), so that the folder never holds half a picture. One
// line goes to `out` for each file written, and one to `err` for each file that could not be, naming it and
// the reason.
//
//   ScreenshotWriter writer(folder, out, err);
//   writer.save(QStringLiteral("window-image"), &window);   // "wrote DIR/window-image.png (1280x860)"
//   writer.fail(QStringLiteral("window-audio"), reason);    // "stx-studio: DIR/window-audio.png: <reason>"
#pragma once

#include <QString>

class QTextStream;
class QWidget;

namespace stx::studio {

class ScreenshotWriter {
 public:
  ScreenshotWriter(const QString& folder, QTextStream& out, QTextStream& err);

  QString pathOf(const QString& name) const;
  // Renders `widget` as it is on screen now, children included, and writes it; false (reported) on failure.
  bool save(const QString& name, QWidget* widget);
  // Reports that `name` was not written, and why.
  void fail(const QString& name, const QString& reason);
  // Some file could not be written.
  bool failed() const { return failures_ > 0; }

 private:
  void report(QTextStream& stream, const QString& line);

  QString folder_;
  QTextStream& out_;
  QTextStream& err_;
  int failures_ = 0;
};

}  // namespace stx::studio
