// stx-studio --screenshots DIR, run through its function as the program runs it: every tab and dialog
// becomes a real picture (a PNG that decodes, of a window's size, not one flat colour), and a folder it
// cannot write to is named with the reason.
#include <QDir>
#include <QFile>
#include <QImage>
#include <QSet>
#include <QTemporaryDir>
#include <QTextStream>
#include <QtTest>

#include "screenshots/screenshot_tour.h"

namespace {

// The distinct colours on a grid of points over the picture: a blank or cleared window has one or two.
int colours_seen(const QImage& image) {
  QSet<QRgb> colours;
  for (int y = 0; y < image.height(); y += 7) {
    for (int x = 0; x < image.width(); x += 7) colours.insert(image.pixel(x, y));
  }
  return static_cast<int>(colours.size());
}

}  // namespace

class ScreenshotsTest : public QObject {
  Q_OBJECT

 private slots:
  void rendersEveryTabAndDialogToAPicture() {
    // given the bundled models, which the suites' environment otherwise hides
    qputenv("STX_BUNDLED_MODELS", STX_BUNDLED_MODELS_SOURCE);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString folder = dir.filePath(QStringLiteral("shots"));
    QString printed, errors;
    QTextStream out(&printed), err(&errors);

    // when
    const int status = stx::studio::render_screenshots(folder, out, err);

    // then every file is written, announced on its own line, and a picture worth looking at
    QVERIFY2(errors.isEmpty(), qPrintable(errors));
    QCOMPARE(status, 0);
    const QStringList names = stx::studio::screenshot_names();
    QCOMPARE(printed.split(QLatin1Char('\n'), Qt::SkipEmptyParts).size(), names.size());
    for (const QString& name : names) {
      const QString path = QDir(folder).filePath(name + QStringLiteral(".png"));
      QVERIFY2(QFile::exists(path), qPrintable(path));
      QVERIFY2(printed.contains(path), qPrintable(printed));
      QImage image;
      QVERIFY2(image.load(path, "PNG"), qPrintable(path + QStringLiteral(" is not a PNG")));
      QVERIFY2(image.width() > 100 && image.height() > 100,
               qPrintable(QStringLiteral("%1 is %2x%3").arg(path).arg(image.width()).arg(image.height())));
      QVERIFY2(colours_seen(image) > 8, qPrintable(path + QStringLiteral(" is (nearly) one flat colour")));
    }
    // and no temporary file is left beside them
    QCOMPARE(QDir(folder).entryList(QDir::Files | QDir::Hidden).size(), names.size());
  }

  void aFolderThatCannotBeMadeIsNamedWithTheReason() {
    // given a file where the folder would go
    QTemporaryDir dir;
    QFile blocker(dir.filePath(QStringLiteral("taken")));
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    const QString folder = dir.filePath(QStringLiteral("taken/shots"));
    QString printed, errors;
    QTextStream out(&printed), err(&errors);

    // when, then: nothing is rendered, and the error names the folder
    QCOMPARE(stx::studio::render_screenshots(folder, out, err), 1);
    QVERIFY(printed.isEmpty());
    QVERIFY2(errors.startsWith(QStringLiteral("stx-studio: cannot create the folder ") + folder + ": "),
             qPrintable(errors));
  }
};

QTEST_MAIN(ScreenshotsTest)
#include "test_screenshots.moc"
