// The models the studio knows: the bundled ones (read-only, shipped with the program) and the user's own in
// ~/.local/share/stx-studio/models (STX_STUDIO_MODELS_DIR overrides it, for tests and portable installs).
// Each entry is a model folder (config.json) or a training run folder (latest.json).
#pragma once

#include <QString>
#include <QStringList>

#include <vector>

#include "core/engine_types.h"

namespace stx::studio {

struct LibraryEntry {
  QString path;        // the folder the user sees (a model or run folder)
  bool bundled = false;
  stx::engine::ModelSummary summary;  // valid when error is empty
  QString error;       // why the folder cannot be read, in plain words
};

class ModelLibrary {
 public:
  static QString userFolder();     // created on first use
  static QStringList bundledFolders();

  // Reads every model's card (no weights are loaded). kind: "image" | "audio" | "text", or empty for all.
  static std::vector<LibraryEntry> scan(const QString& kind = {});
  static LibraryEntry describe(const QString& path, bool bundled = false);

  // Copies `folder` (a model or run folder) into the user's library under `name`; returns the new path.
  // Throws std::runtime_error in plain words (name taken, not a model, copy failed); nothing half-copied
  // stays behind.
  static QString importModel(const QString& folder, const QString& name);
  static void renameModel(const QString& path, const QString& newName);
  // Moves the folder out of sight first, then deletes it, so a failure never leaves half a model.
  static void deleteModel(const QString& path);
  static bool isUserModel(const QString& path);
};

}  // namespace stx::studio
