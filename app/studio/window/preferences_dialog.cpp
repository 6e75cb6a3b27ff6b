#include "window/preferences_dialog.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPalette>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStyle>
#include <QStyleFactory>
#include <QUrl>

#include "core/device_box.h"
#include "core/model_library.h"
#include "stx/engine/threads.h"

namespace stx::studio {

namespace {

QPalette dark_palette() {
  QPalette p;
  const QColor window(0x2b, 0x2b, 0x2b), base(0x1e, 0x1e, 0x1e), text(0xe6, 0xe6, 0xe6), accent(0x3d, 0x8e, 0xd9);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, base);
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::white);
  p.setColor(QPalette::Highlight, accent);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::PlaceholderText, QColor(0x8a, 0x8a, 0x8a));
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x7a, 0x7a, 0x7a));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x7a, 0x7a, 0x7a));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x7a, 0x7a, 0x7a));
  return p;
}

const char* const kDeviceKey = "preferences/device";
const char* const kThreadsKey = "preferences/threads";

}  // namespace

QString PreferencesDialog::savedDevice() { return QSettings().value(kDeviceKey, "auto").toString(); }

int PreferencesDialog::savedThreads() {
  const int threads = QSettings().value(kThreadsKey, 0).toInt();
  return threads >= 0 && threads <= stx::engine::kMaxThreads ? threads : 0;
}

void PreferencesDialog::applyTheme(const QString& theme) {
  // The platform's own style and palette at start-up, kept so that "system" can return to them.
  static const QString systemStyle = QApplication::style()->name();
  static const QPalette systemPalette = QApplication::palette();
  if (theme == QStringLiteral("dark") || theme == QStringLiteral("light")) {
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    QApplication::setPalette(theme == QStringLiteral("dark") ? dark_palette() : QApplication::style()->standardPalette());
  } else {
    QApplication::setStyle(QStyleFactory::create(systemStyle));
    QApplication::setPalette(systemPalette);
  }
}

PreferencesDialog::PreferencesDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Preferences"));
  QSettings settings;
  theme_ = new QComboBox;
  theme_->addItem(tr("Follow the system"), QStringLiteral("system"));
  theme_->addItem(tr("Light"), QStringLiteral("light"));
  theme_->addItem(tr("Dark"), QStringLiteral("dark"));
  theme_->setCurrentIndex(std::max(0, theme_->findData(settings.value("preferences/theme", "system").toString())));
  showLog_ = new QCheckBox(tr("Show the log panel when the studio starts"));
  showLog_->setChecked(settings.value("preferences/showLog", false).toBool());
  device_ = new DeviceBox;
  device_->setDevice(savedDevice());
  device_->setToolTip(tr("Where the image, audio and text tabs run their models"));
  threads_ = new QSpinBox;
  threads_->setRange(0, stx::engine::kMaxThreads);
  threads_->setSpecialValueText(tr("All cores (%1)").arg(stx::engine::usable_cores()));
  threads_->setValue(savedThreads());
  threads_->setToolTip(tr("Threads that generation and training may use. Generation uses fewer on its own "
                          "while other programs keep cores busy."));
  deviceNote_ = new QLabel(DeviceBox::unavailableNote());
  deviceNote_->setWordWrap(true);
  deviceNote_->setForegroundRole(QPalette::PlaceholderText);  // a side note, quieter than the settings
  deviceNote_->setVisible(!deviceNote_->text().isEmpty());

  const QString library = ModelLibrary::userFolder();
  auto* libraryLabel = new QLabel(library);
  libraryLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* reveal = new QPushButton(tr("Reveal"));
  connect(reveal, &QPushButton::clicked, this, [library] { QDesktopServices::openUrl(QUrl::fromLocalFile(library)); });
  auto* libraryRow = new QHBoxLayout;
  libraryRow->addWidget(libraryLabel, 1);
  libraryRow->addWidget(reveal);
  auto* clearRecent = new QPushButton(tr("Clear recent files"));
  connect(clearRecent, &QPushButton::clicked, this, &PreferencesDialog::recentFilesCleared);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  connect(buttons, &QDialogButtonBox::accepted, this, &PreferencesDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* form = new QFormLayout(this);
  form->addRow(tr("Colours"), theme_);
  form->addRow(QString(), showLog_);
  form->addRow(tr("Device"), device_);
  form->addRow(QString(), deviceNote_);
  form->addRow(tr("CPU threads"), threads_);
  form->addRow(tr("Your models"), libraryRow);
  form->addRow(QString(), clearRecent);
  form->addRow(buttons);
}

void PreferencesDialog::accept() {
  QSettings settings;
  const QString theme = theme_->currentData().toString();
  settings.setValue("preferences/theme", theme);
  settings.setValue("preferences/showLog", showLog_->isChecked());
  settings.setValue(kDeviceKey, device_->device());
  settings.setValue(kThreadsKey, threads_->value());
  applyTheme(theme);
  emit deviceChosen(device_->device());
  emit threadsChosen(threads_->value());
  QDialog::accept();
}

}  // namespace stx::studio
