// stx-studio: the desktop app. Everything lives in the main window; the engine runs on worker threads.
#include <QApplication>

#include "stx/kernels/openmp_spin_policy.h"
#include "window/main_window.h"

int main(int argc, char** argv) {
  stx::kernels::restart_with_short_openmp_spins(argv);  // first: it may start the program again
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("stx-studio"));
  QApplication::setApplicationName(QStringLiteral("stx-studio"));
  QApplication::setApplicationDisplayName(QStringLiteral("STX Studio"));
  QApplication::setApplicationVersion(QStringLiteral("0.1.0"));
  stx::studio::MainWindow window;
  window.show();
  for (const QString& path : QApplication::arguments().mid(1)) window.openPath(path);
  return QApplication::exec();
}
