#include "screenshots/screenshot_writer.h"

#include <QBuffer>
#include <QByteArray>
#include <QDir>
#include <QImage>
#include <QTextStream>
#include <QWidget>
#include <exception>
#include <filesystem>
#include <string_view>

#include "stx/engine/io/atomic_file.h"

namespace stx::studio {

ScreenshotWriter::ScreenshotWriter(const QString& folder, QTextStream& out, QTextStream& err)
    : folder_(folder), out_(out), err_(err) {}

QString ScreenshotWriter::pathOf(const QString& name) const {
  return QDir(folder_).filePath(name + QStringLiteral(".png"));
}

bool ScreenshotWriter::save(const QString& name, QWidget* widget) {
  const QString path = pathOf(name);
  const QImage image = widget->grab().toImage();
  if (image.isNull()) {
    fail(name, QStringLiteral("the window could not be rendered"));
    return false;
  }
  QByteArray png;
  QBuffer buffer(&png);
  buffer.open(QIODevice::WriteOnly);
  if (!image.save(&buffer, "PNG")) {
    fail(name, QStringLiteral("Qt could not encode the picture as PNG"));
    return false;
  }
  try {
    stx::engine::write_file_atomic(std::filesystem::path(path.toStdString()),
                                   std::string_view(png.constData(), static_cast<size_t>(png.size())));
  } catch (const std::exception& e) {
    // The engine's message names the file and the reason ("cannot write PATH: No space left on device").
    ++failures_;
    report(err_, QStringLiteral("stx-studio: %1").arg(QString::fromStdString(e.what())));
    return false;
  }
  report(out_, QStringLiteral("wrote %1 (%2x%3)").arg(path).arg(image.width()).arg(image.height()));
  return true;
}

void ScreenshotWriter::fail(const QString& name, const QString& reason) {
  ++failures_;
  report(err_, QStringLiteral("stx-studio: %1 not written: %2").arg(pathOf(name), reason));
}

void ScreenshotWriter::report(QTextStream& stream, const QString& line) {
  stream << line << '\n';
  stream.flush();  // a line as each picture is done: the whole run takes a minute or more
}

}  // namespace stx::studio
