// The Audio tab's "Prompt clip" box: open (or drop) a clip, keep its first N seconds as the prompt every
// sample starts with, or clear it to generate unconditionally. The clip is decoded off the GUI thread.
#pragma once

#include <QGroupBox>
#include <QStringList>  // before engine_types.h, which uses it without including it

#include "core/engine_types.h"

class QDoubleSpinBox;
class QLabel;
class QPushButton;

namespace stx::studio {

class ClipLoader;

class PromptClipBox : public QGroupBox {
  Q_OBJECT

 public:
  explicit PromptClipBox(QWidget* parent = nullptr);

  // The files libsndfile reads, by suffix (MP3 with libsndfile 1.1 and later).
  static QString fileFilter();
  static bool acceptsFile(const QString& path);

  // Starts decoding `path`; clipOpened or failed follows.
  void openFile(const QString& path);
  bool loading() const;

  // The kept start of the clip (empty: unconditional), 12 kHz mu-law.
  const Bytes& prompt() const { return prompt_; }
  QString clipName() const { return clipName_; }
  // How the samples begin, for export metadata: "clip a.wav, first 1.5 s" or "unconditional".
  QString promptText() const;

  // The model's context: the prompt keeps at most context - 1 bytes, leaving room to generate. 0: no limit.
  void setContext(qint64 context);
  // While a generation runs the prompt of the run stays as it is.
  void setLocked(bool locked);
  // What the user asked to keep, in seconds (also for a clip not opened yet).
  double keepSeconds() const { return wantedKeepSeconds_; }
  void setKeepSeconds(double seconds);
  void setFolder(const QString& folder) { folder_ = folder; }

  QDoubleSpinBox* keepBox() const { return keep_; }

 signals:
  void promptChanged();
  void clipOpened(const QString& path);
  void failed(const QString& message);
  // The clip opened with a warning (a truncated file), naming the file.
  void warned(const QString& message);

 private:
  void clipLoaded(const QString& path, const Bytes& clip);
  void refresh();

  ClipLoader* loader_;
  QPushButton* open_;
  QPushButton* clear_;
  QLabel* label_;
  QDoubleSpinBox* keep_;
  Bytes clip_;
  QString clipName_;
  Bytes prompt_;
  qint64 context_ = 0;
  bool locked_ = false;
  double wantedKeepSeconds_ = 2.0;
  QString folder_;
};

}  // namespace stx::studio
