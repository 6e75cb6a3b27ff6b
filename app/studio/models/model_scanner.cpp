#include "models/model_scanner.h"

#include <QDir>
#include <QElapsedTimer>
#include <QThread>
#include <utility>

namespace stx::studio {

namespace {

struct Candidate {
  QString path;
  bool bundled = false;
};

// The same folders ModelLibrary::scan() lists: visible sub-folders holding config.json (a model) or
// latest.json (a training run). Hidden ones are imports or deletions in progress.
std::vector<Candidate> list_candidates(const QStringList& bundled, const QString& user) {
  std::vector<Candidate> found;
  auto add_from = [&](const QString& root, bool is_bundled) {
    const QDir dir(root);
    for (const QString& name : dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
      const QDir model(dir.absoluteFilePath(name));
      if (model.exists(QStringLiteral("config.json")) || model.exists(QStringLiteral("latest.json"))) {
        found.push_back({model.absolutePath(), is_bundled});
      }
    }
  };
  for (const QString& root : bundled) add_from(root, true);
  if (!user.isEmpty()) add_from(user, false);
  return found;
}

}  // namespace

ModelScanner::ModelScanner(QObject* parent) : QObject(parent) {}

ModelScanner::~ModelScanner() {
  if (thread_) {
    cancel_->store(true);
    thread_->wait();
    delete thread_;
  }
}

void ModelScanner::setFolders(const QStringList& bundled, const QString& user) {
  bundled_ = bundled;
  user_ = user;
  foldersSet_ = true;
}

void ModelScanner::start() {
  if (thread_) {
    // The running scan may already have passed a folder that just changed: drop its result, read again.
    cancel_->store(true);
    restart_ = true;
    return;
  }
  launch();
}

void ModelScanner::launch() {
  restart_ = false;
  // Read on the GUI thread: the user folder is created on first use and the environment is read once here.
  const QStringList bundled = foldersSet_ ? bundled_ : ModelLibrary::bundledFolders();
  const QString user = foldersSet_ ? user_ : ModelLibrary::userFolder();
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  result_ = std::make_shared<std::vector<LibraryEntry>>();
  thread_ = QThread::create([this, bundled, user, cancel = cancel_, result = result_] {
    const std::vector<Candidate> candidates = list_candidates(bundled, user);
    const int total = static_cast<int>(candidates.size());
    QElapsedTimer since_report;
    since_report.start();
    for (int i = 0; i < total; ++i) {
      if (cancel->load()) return;
      result->push_back(ModelLibrary::describe(candidates[i].path, candidates[i].bundled));
      if (since_report.elapsed() >= 50 || i + 1 == total) {
        since_report.restart();
        // Queued to the scanner's thread; dropped if the scanner is gone by then (it waits for us first).
        QMetaObject::invokeMethod(
            this,
            [this, cancel, done = i + 1, total] {
              if (!cancel->load()) emit progress(done, total);
            },
            Qt::QueuedConnection);
      }
    }
  });
  // QThread::finished is emitted on the scan thread after run() returned; the queued hop makes the result
  // visible here only once the thread is done with it.
  connect(thread_, &QThread::finished, this, &ModelScanner::threadDone, Qt::QueuedConnection);
  thread_->start(QThread::LowPriority);
}

void ModelScanner::threadDone() {
  thread_->wait();
  delete thread_;
  thread_ = nullptr;
  if (restart_) {
    launch();
    return;
  }
  entries_ = std::move(*result_);
  result_.reset();
  emit finished();
}

}  // namespace stx::studio
