// Step 1: what to train on. The user picks the kind (image, audio, text) and a folder; the folder is read
// off the GUI thread (EngineHost::scanFolder) with a progress bar, then the page shows how much data there
// is, a few items, and the files that will be skipped and why. A folder that cannot be used keeps Next
// disabled and says why.
#pragma once

#include <QTimer>
#include <QWizardPage>

#include "core/engine_types.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QHBoxLayout;

namespace stx::studio {

class EngineHost;
class SampleView;

class DataPage : public QWizardPage {
  Q_OBJECT
  Q_PROPERTY(QString kind READ kind NOTIFY kindChanged)

 public:
  explicit DataPage(QWidget* parent = nullptr);

  QString kind() const;  // "image" | "audio" | "text"
  QString folder() const;
  void setKind(const QString& kind);
  void setFolder(const QString& folder);

  // The latest finished scan of the current folder and kind (valid when scanUpToDate()).
  const DatasetScan& scan() const { return scan_; }
  bool scanUpToDate() const;
  // Why Next is disabled, in plain words; empty when the data can be used.
  QString problem() const;

  bool isComplete() const override;

  QLabel* summaryLabel() const { return summary_; }
  QLabel* problemLabel() const { return problem_; }
  QListWidget* skippedList() const { return skipped_; }
  QList<SampleView*> previews() const { return previews_; }

 signals:
  void kindChanged();
  void scanned();  // a scan of the current folder finished (or failed)

 public slots:
  // Reads the folder again now (the folder may have changed on disk).
  void rescan();

 private:
  void requestScan();
  void startScan();
  void onScanFinished(const DatasetScan& scan);
  void showScan();

  EngineHost* host_;
  QComboBox* kindCombo_;
  QLineEdit* folderEdit_;
  QPushButton* browse_;
  QProgressBar* progress_;
  QLabel* summary_;
  QLabel* problem_;
  QHBoxLayout* previewRow_;
  QList<SampleView*> previews_;
  QLabel* skippedTitle_;
  QListWidget* skipped_;
  QTimer debounce_;  // a folder typed by hand is scanned once the typing pauses

  DatasetScan scan_;
  bool haveScan_ = false;
  bool scanQueued_ = false;        // a scan waits for the running one to stop
  QString scanFolder_, scanKind_;  // what the running scan reads
};

}  // namespace stx::studio
