// Reads the model library on a thread of its own. Each model costs a few small file reads (config.json, the
// safetensors header, train_state.json, MODEL_CARD.md); with hundreds of models on a slow or network disk
// that is seconds, which the GUI thread must never spend. Results come back through finished() on the
// thread that owns the scanner.
#pragma once

#include <QObject>
#include <QStringList>
#include <atomic>
#include <memory>
#include <vector>

#include "core/model_library.h"

class QThread;

namespace stx::studio {

class ModelScanner : public QObject {
  Q_OBJECT

 public:
  explicit ModelScanner(QObject* parent = nullptr);
  // Cancels a running scan and waits for it: it stops between two models, so the wait is short.
  ~ModelScanner() override;

  // Reads the library again. A scan already running is cancelled and started over, so the result always
  // reflects the folders as they are after the latest call.
  void start();
  bool running() const { return thread_ != nullptr; }
  // The latest finished scan: bundled models first, then the user's, each group by folder name.
  const std::vector<LibraryEntry>& entries() const { return entries_; }

  // Where to look; by default ModelLibrary::bundledFolders() and ModelLibrary::userFolder(). Set before
  // start(), e.g. to point a test at bundled models of its own.
  void setFolders(const QStringList& bundled, const QString& user);

 signals:
  // Models read so far of those found; at most ~20 times a second.
  void progress(int done, int total);
  void finished();

 private:
  void launch();
  void threadDone();

  QStringList bundled_;
  QString user_;
  bool foldersSet_ = false;
  QThread* thread_ = nullptr;
  std::shared_ptr<std::atomic<bool>> cancel_;
  std::shared_ptr<std::vector<LibraryEntry>> result_;
  bool restart_ = false;
  std::vector<LibraryEntry> entries_;
};

}  // namespace stx::studio
