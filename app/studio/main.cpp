// stx-studio: the desktop app. Everything lives in the main window; the engine runs on worker threads.
#include <QApplication>
#include <QCommandLineParser>
#include <QStringList>
#include <QTextStream>
#include <cstdio>

#include "screenshots/screenshot_tour.h"
#include "stx/engine/process/process_start.h"
#include "window/main_window.h"

#ifndef STX_VERSION
#define STX_VERSION "0.0.0"
#endif

namespace {

// The command line, read before any window system is asked for, so that --help and --version work
// without a display (the manual page is written from --help). Qt's own options (-platform, -style) are
// left to QApplication.
void describe_command_line(QCommandLineParser& parser) {
  parser.setApplicationDescription(QStringLiteral(
      "STX Studio: complete images, generate 12 kHz audio and continue text with Sparse Transformers,\n"
      "watch what they attend to, and fine-tune them on your own folders."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addOption(QCommandLineOption(
      QStringLiteral("screenshots"),
      QStringLiteral("Render every tab and dialog offscreen to DIR/<name>.png, generating with the bundled "
                     "models (the user's settings and models are neither read nor changed), print each file "
                     "written, and exit: 0 when all were written, 1 otherwise."),
      QStringLiteral("DIR")));
  parser.addPositionalArgument(
      QStringLiteral("files"),
      QStringLiteral("Images (PNG, JPEG, BMP, TGA), audio (WAV, FLAC, Ogg, AIFF) or text files, each opened in "
                     "the tab for its kind."),
      QStringLiteral("[FILE...]"));
}

}  // namespace

int main(int argc, char** argv) {
  stx::engine::restart_with_short_openmp_spins(argv);  // first: it may start the program again
  QApplication::setOrganizationName(QStringLiteral("stx-studio"));
  QApplication::setApplicationName(QStringLiteral("stx-studio"));
  QApplication::setApplicationVersion(QStringLiteral(STX_VERSION));
  QStringList arguments;
  for (int i = 0; i < argc; ++i) arguments << QString::fromLocal8Bit(argv[i]);
  QCommandLineParser parser;
  describe_command_line(parser);
  for (const char* qt_option : {"platform", "style", "stylesheet", "qwindowgeometry", "display"}) {
    // Qt's own options with a value: known here only so that they are not mistaken for files.
    QCommandLineOption option(QString::fromLatin1(qt_option));
    option.setValueName(QStringLiteral("value"));
    option.setFlags(QCommandLineOption::HiddenFromHelp);
    parser.addOption(option);
  }
  parser.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
  if (!parser.parse(arguments)) {
    std::fprintf(stderr, "stx-studio: %s See stx-studio --help.\n", qPrintable(parser.errorText()));
    return 2;
  }
  if (parser.isSet(QStringLiteral("help")) || parser.isSet(QStringLiteral("help-all"))) {
    // With no application object yet, Qt names the program <executable_name>.
    std::fputs(qPrintable(parser.helpText().replace(QStringLiteral("<executable_name>"), QStringLiteral("stx-studio"))),
               stdout);
    return 0;
  }
  if (parser.isSet(QStringLiteral("version"))) {
    std::printf("stx-studio %s\n", STX_VERSION);
    return 0;
  }

  const bool screenshots = parser.isSet(QStringLiteral("screenshots"));
  if (screenshots && !parser.positionalArguments().isEmpty()) {
    std::fprintf(stderr, "stx-studio: --screenshots opens no files. See stx-studio --help.\n");
    return 2;
  }
  // The screenshots need no display: offscreen, unless -platform asks for another.
  if (screenshots && !parser.isSet(QStringLiteral("platform"))) qputenv("QT_QPA_PLATFORM", "offscreen");

  QApplication app(argc, argv);
  QApplication::setApplicationDisplayName(QStringLiteral("STX Studio"));
  QApplication::setDesktopFileName(QStringLiteral("stx-studio"));  // ties the window to stx-studio.desktop
  QApplication::setWindowIcon(stx::studio::applicationIcon());
  if (screenshots) {
    QTextStream out(stdout), err(stderr);
    return stx::studio::render_screenshots(parser.value(QStringLiteral("screenshots")), out, err);
  }
  stx::studio::MainWindow window;
  window.show();
  for (const QString& path : parser.positionalArguments()) window.openPath(path);
  return QApplication::exec();
}
