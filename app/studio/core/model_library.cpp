#include "core/model_library.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "stx/engine/bundled_models.h"


namespace fs = std::filesystem;

namespace stx::studio {

namespace {

bool looks_like_model(const QDir& dir) {
  return dir.exists(QStringLiteral("config.json")) || dir.exists(QStringLiteral("latest.json"));
}

void check_name(const QString& name) {
  if (name.trimmed().isEmpty()) throw std::runtime_error("a model needs a name");
  if (name.contains('/') || name.startsWith('.') || name.size() > 120) {
    throw std::runtime_error(("'" + name + "' cannot be a model name: no '/', no leading '.', at most 120 "
                              "characters").toStdString());
  }
}

}  // namespace

QString ModelLibrary::userFolder() {
  QString folder = qEnvironmentVariable("STX_STUDIO_MODELS_DIR");
  if (folder.isEmpty()) {
    folder = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + "/stx-studio/models";
  }
  QDir().mkpath(folder);
  return folder;
}

QStringList ModelLibrary::bundledFolders() {
  QStringList folders;
  for (const auto& root : stx::engine::bundled_model_roots()) folders << QString::fromStdString(root.string());
  return folders;
}

LibraryEntry ModelLibrary::describe(const QString& path, bool bundled) {
  LibraryEntry entry;
  entry.path = path;
  entry.bundled = bundled;
  try {
    entry.summary = stx::engine::describe_model(path.toStdString());
  } catch (const std::exception& e) {
    entry.error = QString::fromStdString(e.what());
  }
  return entry;
}

std::vector<LibraryEntry> ModelLibrary::scan(const QString& kind) {
  std::vector<LibraryEntry> entries;
  auto add_from = [&](const QString& root, bool bundled) {
    const QDir dir(root);
    for (const QString& name : dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
      const QDir model(dir.absoluteFilePath(name));
      if (!looks_like_model(model)) continue;
      LibraryEntry entry = describe(model.absolutePath(), bundled);
      if (!kind.isEmpty() && entry.error.isEmpty() && QString::fromStdString(entry.summary.kind) != kind) continue;
      entries.push_back(std::move(entry));
    }
  };
  for (const QString& root : bundledFolders()) add_from(root, true);
  add_from(userFolder(), false);
  return entries;
}

bool ModelLibrary::isUserModel(const QString& path) {
  const QString user = QFileInfo(userFolder()).canonicalFilePath();
  return QFileInfo(QFileInfo(path).canonicalFilePath()).dir().canonicalPath() == user;
}

QString ModelLibrary::importModel(const QString& folder, const QString& name) {
  check_name(name);
  if (!looks_like_model(QDir(folder))) {
    throw std::runtime_error((folder + ": not a model folder (no config.json) and not a run folder (no "
                              "latest.json)").toStdString());
  }
  {
    const LibraryEntry entry = describe(folder);
    if (!entry.error.isEmpty()) throw std::runtime_error(entry.error.toStdString());
  }
  const fs::path target = fs::path(userFolder().toStdString()) / name.toStdString();
  std::error_code ec;
  if (fs::exists(target, ec)) throw std::runtime_error(("a model named '" + name + "' already exists").toStdString());
  // Copied beside the target under a hidden name, then renamed: the library never lists half a copy.
  const fs::path staging = target.parent_path() / ("." + name.toStdString() + ".importing");
  fs::remove_all(staging, ec);
  fs::copy(folder.toStdString(), staging, fs::copy_options::recursive, ec);
  if (!ec) fs::rename(staging, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    throw std::runtime_error(("copying " + folder + " into the library failed: ").toStdString() + ec.message());
  }
  return QString::fromStdString(target.string());
}

void ModelLibrary::renameModel(const QString& path, const QString& newName) {
  check_name(newName);
  if (!isUserModel(path)) throw std::runtime_error("bundled models cannot be renamed");
  const fs::path from = path.toStdString();
  const fs::path to = from.parent_path() / newName.toStdString();
  std::error_code ec;
  if (fs::exists(to, ec)) throw std::runtime_error(("a model named '" + newName + "' already exists").toStdString());
  fs::rename(from, to, ec);
  if (ec) throw std::runtime_error(("renaming " + path + " failed: ").toStdString() + ec.message());
}

void ModelLibrary::deleteModel(const QString& path) {
  if (!isUserModel(path)) throw std::runtime_error("bundled models cannot be deleted");
  const fs::path from = path.toStdString();
  const fs::path doomed = from.parent_path() / (".deleting-" + from.filename().string());
  std::error_code ec;
  fs::rename(from, doomed, ec);
  if (ec) throw std::runtime_error(("deleting " + path + " failed: ").toStdString() + ec.message());
  fs::remove_all(doomed, ec);  // a leftover hidden folder is not listed and is harmless
}

}  // namespace stx::studio
