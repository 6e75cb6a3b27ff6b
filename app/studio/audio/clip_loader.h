// Decodes an audio file to 12 kHz mu-law off the GUI thread (a long clip takes seconds to read and
// resample). The engine worker has no job for this, and a tab's engine may be busy generating, so the
// Audio tab loads clips on a thread of its own.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>  // before engine_types.h, which uses it without including it

#include "core/engine_types.h"

class QThread;

namespace stx::studio {

class ClipLoader : public QObject {
  Q_OBJECT

 public:
  explicit ClipLoader(QObject* parent = nullptr);
  // Waits for a load still running: it cannot be interrupted inside libsndfile.
  ~ClipLoader() override;

  bool busy() const { return thread_ != nullptr; }
  // Starts loading `path`; false when a load is already running.
  bool load(const QString& path);

 signals:
  void loaded(const QString& path, const stx::studio::Bytes& clip);
  // message names the file and the reason, in plain words.
  void failed(const QString& path, const QString& message);
  // The clip was read, but something about the file deserves a word (it names the file); before loaded().
  void warned(const QString& message);

 private:
  QThread* thread_ = nullptr;
};

}  // namespace stx::studio
