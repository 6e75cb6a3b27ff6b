#include "audio/wav_export.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <exception>

namespace stx::studio {

QString WavExport::askTarget(QWidget* parent, const QString& title, const QString& suggested, int count) {
  const QString chosen =
      QFileDialog::getSaveFileName(parent, title, suggested, QObject::tr("WAV audio (*.wav)"));
  if (chosen.isEmpty()) return {};
  QString path = chosen;
  if (QFileInfo(path).suffix().compare(QLatin1String("wav"), Qt::CaseInsensitive) != 0)
    path += QStringLiteral(".wav");
  QStringList existing;
  for (int i = 1; i <= count; ++i) {
    const QString target =
        QString::fromStdString(stx::engine::numbered_path(path.toStdString(), i, count).string());
    if (target != chosen && QFileInfo::exists(target)) existing << target;
  }
  if (!existing.isEmpty() &&
      QMessageBox::question(
          parent, QObject::tr("Replace files?"),
          (existing.size() == 1 ? QObject::tr("This file already exists:\n%1\nReplace it?")
                                : QObject::tr("These %1 files already exist:\n%2\nReplace them?").arg(existing.size()))
              .arg(existing.join(QLatin1Char('\n')))) != QMessageBox::Yes) {
    return {};
  }
  return path;
}

QStringList WavExport::write(const QString& path, const std::vector<Bytes>& samples,
                             const std::vector<int>& which, int rate, const stx::engine::ExportInfo& info,
                             QString* error) {
  QStringList written;
  const int count = static_cast<int>(which.size());
  for (int i = 0; i < count; ++i) {
    const int index = which[static_cast<size_t>(i)];
    if (index < 0 || index >= static_cast<int>(samples.size())) continue;
    const Bytes& bytes = samples[static_cast<size_t>(index)];
    try {
      const std::filesystem::path target = stx::engine::numbered_path(path.toStdString(), i + 1, count);
      stx::engine::ExportInfo sample_info = info;
      sample_info.sample_number = index + 1;
      sample_info.sample_count = static_cast<int>(samples.size());
      stx::engine::write_wav(target, bytes.data(), bytes.size(), rate, sample_info, stx::engine::Overwrite::Replace);
      written << QString::fromStdString(target.string());
    } catch (const std::exception& e) {
      if (error) *error = QString::fromStdString(e.what());
      break;
    }
  }
  return written;
}

}  // namespace stx::studio
