#include "text/text_export.h"

#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <filesystem>

#include "stx/engine/export/export.h"

namespace stx::studio {

namespace {

std::filesystem::path to_path(const QString& path) { return QFile::encodeName(path).toStdString(); }

QString from_path(const std::filesystem::path& path) {
  return QFile::decodeName(QByteArray::fromStdString(path.string()));
}

std::filesystem::path target(const QString& path, int index, int count) {
  return count > 1 ? stx::engine::numbered_path(to_path(path), index, count) : to_path(path);
}

}  // namespace

QString TextExport::askPath(QWidget* parent, const QString& suggestedName, int samples, QString* folder) {
  const QString start = folder && !folder->isEmpty() ? *folder : QDir::homePath();
  QFileDialog dialog(parent, samples > 1 ? tr("Export all samples as text") : tr("Export the sample as text"),
                     QDir(start).filePath(suggestedName), tr("Text files (*.txt);;All files (*)"));
  dialog.setAcceptMode(QFileDialog::AcceptSave);
  dialog.setDefaultSuffix(QStringLiteral("txt"));
  if (samples > 1) dialog.setOption(QFileDialog::DontConfirmOverwrite);
  if (dialog.exec() != QDialog::Accepted || dialog.selectedFiles().isEmpty()) return {};
  const QString path = dialog.selectedFiles().first();
  if (folder) *folder = QFileInfo(path).absolutePath();
  if (samples > 1) {
    QStringList existing;
    for (int i = 1; i <= samples; ++i) {
      const QString file = from_path(target(path, i, samples));
      if (QFileInfo::exists(file)) existing << QFileInfo(file).fileName();
    }
    if (!existing.isEmpty() &&
        QMessageBox::question(parent, tr("Replace files?"),
                              tr("These files exist already:\n%1\n\nReplace them?").arg(existing.join('\n')),
                              QMessageBox::Yes | QMessageBox::Cancel,
                              QMessageBox::Cancel) != QMessageBox::Yes) {
      return {};
    }
  }
  return path;
}

QStringList TextExport::write(const QString& path, const std::vector<Bytes>& samples) {
  QStringList written;
  const int count = static_cast<int>(samples.size());
  for (int i = 0; i < count; ++i) {
    const std::filesystem::path file = target(path, i + 1, count);
    const Bytes& bytes = samples[static_cast<size_t>(i)];
    stx::engine::write_text(file, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                            stx::engine::Overwrite::Replace);
    written << from_path(file);
  }
  return written;
}

}  // namespace stx::studio
