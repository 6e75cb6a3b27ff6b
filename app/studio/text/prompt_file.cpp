#include "text/prompt_file.h"

#include <QFile>
#include <QFileInfo>
#include <QLocale>

namespace stx::studio {

const QStringList& PromptFile::suffixes() {
  static const QStringList list = {"txt",   "text", "md",  "markdown", "rst", "csv",  "tsv", "json",
                                   "jsonl", "log",  "xml", "html",     "htm", "yaml", "yml", "toml",
                                   "ini",   "tex",  "py",  "c",        "h",   "cpp",  "hpp", "js"};
  return list;
}

QString PromptFile::filter() {
  QStringList patterns;
  for (const QString& suffix : suffixes()) patterns << QStringLiteral("*.") + suffix;
  return tr("Text files (%1);;All files (*)").arg(patterns.join(QLatin1Char(' ')));
}

bool PromptFile::accepts(const QString& path) {
  return suffixes().contains(QFileInfo(path).suffix().toLower());
}

std::optional<PromptFile::Text> PromptFile::read(const QString& path, QString* error) {
  const QFileInfo info(path);
  const QString name = info.fileName().isEmpty() ? path : info.fileName();
  auto fail = [&](const QString& reason) {
    if (error) *error = tr("%1: %2").arg(name, reason);
    return std::nullopt;
  };
  if (!info.exists()) return fail(tr("the file does not exist (moved or deleted?)"));
  if (info.isDir()) return fail(tr("this is a folder; open a text file"));
  // A FIFO or a device would block the read (and the studio with it) until something writes to it.
  if (!info.isFile()) return fail(tr("not a regular file (a pipe or a device?); open a text file"));
  const QString tooLarge =
      tr("the file is %1; a prompt file can be 1 MB at most").arg(QLocale().formattedDataSize(info.size()));
  if (info.size() > kMaxBytes) return fail(tooLarge);
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return fail(tr("cannot be read (%1)").arg(file.errorString()));
  // One byte past the limit: a file that grew since, or a pipe, is refused rather than cut silently.
  const QByteArray data = file.read(kMaxBytes + 1);
  if (file.error() != QFileDevice::NoError) return fail(tr("cannot be read (%1)").arg(file.errorString()));
  if (data.size() > kMaxBytes) return fail(tooLarge);
  Text text;
  text.text = QString::fromUtf8(data);
  if (text.text.contains(QChar::ReplacementCharacter) && !data.contains("\xEF\xBF\xBD")) {
    text.warning = tr("%1 is not valid UTF-8: the bytes that are not were replaced by \uFFFD").arg(name);
  }
  return text;
}

}  // namespace stx::studio
