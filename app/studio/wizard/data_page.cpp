#include "wizard/data_page.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include "core/counted_text.h"
#include "core/engine_host.h"
#include "core/job_progress.h"
#include "wizard/sample_view.h"
#include "wizard/train_wizard.h"

namespace stx::studio {

namespace {

constexpr int kScanDelayMs = 300;
constexpr int kImagePreviews = 6;

}  // namespace

DataPage::DataPage(QWidget* parent) : QWizardPage(parent), host_(new EngineHost(this)) {
  setTitle(tr("Training data"));
  setSubTitle(tr("Choose what kind of model to train and the folder of files it learns from."));

  kindCombo_ = new QComboBox;
  kindCombo_->addItem(tr("Images"), QStringLiteral("image"));
  kindCombo_->addItem(tr("Audio"), QStringLiteral("audio"));
  kindCombo_->addItem(tr("Text"), QStringLiteral("text"));
  kindCombo_->setToolTip(
      tr("Images: png, jpg, bmp, tga. Audio: wav, flac, ogg, aiff. Text: every file, as bytes."));
  folderEdit_ = new QLineEdit;
  folderEdit_->setPlaceholderText(tr("a folder of training files"));
  folderEdit_->setClearButtonEnabled(true);
  browse_ = new QPushButton(tr("Browse..."));
  auto* folderRow = new QHBoxLayout;
  folderRow->addWidget(folderEdit_, 1);
  folderRow->addWidget(browse_);
  auto* form = new QFormLayout;
  form->addRow(tr("&Kind:"), kindCombo_);
  auto* folderLabel = new QLabel(tr("&Folder:"));
  folderLabel->setBuddy(folderEdit_);
  form->addRow(folderLabel, folderRow);

  progress_ = new QProgressBar;
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setFormat(tr("No folder read yet"));
  summary_ = new QLabel;
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont bold = summary_->font();
  bold.setBold(true);
  summary_->setFont(bold);
  problem_ = new QLabel;
  problem_->setWordWrap(true);
  problem_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  problem_->setStyleSheet(QStringLiteral("color: #b00020;"));

  auto* previewBox = new QGroupBox(tr("Preview"));
  previewRow_ = new QHBoxLayout(previewBox);
  previewBox->setMinimumHeight(130);

  skippedTitle_ = new QLabel;
  skipped_ = new QListWidget;
  skipped_->setMaximumHeight(110);
  skipped_->setWordWrap(true);  // a reason names the whole path; it is read, not scrolled
  skipped_->setToolTip(tr("These files are left out of training"));

  auto* column = new QVBoxLayout(this);
  column->addLayout(form);
  column->addWidget(progress_);
  column->addWidget(summary_);
  column->addWidget(problem_);
  column->addWidget(previewBox, 1);
  column->addWidget(skippedTitle_);
  column->addWidget(skipped_);
  skippedTitle_->hide();
  skipped_->hide();

  registerField(QStringLiteral("kind"), this, "kind", SIGNAL(kindChanged()));
  registerField(QStringLiteral("dataFolder"), folderEdit_);

  debounce_.setSingleShot(true);
  debounce_.setInterval(kScanDelayMs);
  connect(&debounce_, &QTimer::timeout, this, &DataPage::startScan);
  connect(kindCombo_, &QComboBox::currentIndexChanged, this, [this] {
    emit kindChanged();
    requestScan();
  });
  connect(folderEdit_, &QLineEdit::textChanged, this, &DataPage::requestScan);
  connect(browse_, &QPushButton::clicked, this, [this] {
    const QString chosen =
        QFileDialog::getExistingDirectory(this, tr("Choose a folder of %1 files").arg(kind()),
                                          folder().isEmpty() ? QDir::homePath() : folder());
    if (!chosen.isEmpty()) setFolder(chosen);
  });
  connect(host_->worker(), &EngineWorker::scanProgress, this, [this](qint64 done, qint64 total) {
    progress_->setRange(0, static_cast<int>(std::max<qint64>(1, total)));
    progress_->setValue(static_cast<int>(done));
    progress_->setFormat(tr("Reading files: %v of %m"));
  });
  connect(host_->worker(), &EngineWorker::scanFinished, this, &DataPage::onScanFinished);
  connect(host_->worker(), &EngineWorker::failed, this, [this](EngineJob, const QString& message) {
    // The scan reports its own errors in the DatasetScan; this is for a job that failed outright.
    if (scanQueued_) return;
    scan_ = DatasetScan{};
    scan_.folder = scanFolder_;
    scan_.kind = scanKind_;
    scan_.error = message;
    haveScan_ = true;
  });
  connect(host_, &EngineHost::busyChanged, this, [this](bool busy) {
    if (busy) return;
    if (scanQueued_) {
      scanQueued_ = false;
      startScan();
      return;
    }
    showScan();
    emit completeChanged();
  });
  showScan();
}

QString DataPage::kind() const { return kindCombo_->currentData().toString(); }

QString DataPage::folder() const { return folderEdit_->text().trimmed(); }

void DataPage::setKind(const QString& kind) {
  const int index = kindCombo_->findData(kind);
  if (index >= 0) kindCombo_->setCurrentIndex(index);
}

void DataPage::setFolder(const QString& folder) { folderEdit_->setText(QDir::toNativeSeparators(folder)); }

bool DataPage::scanUpToDate() const {
  return haveScan_ && !host_->busy() && !scanQueued_ && !debounce_.isActive() &&
         QDir::cleanPath(scan_.folder) == QDir::cleanPath(folder()) && scan_.kind == kind();
}

QString DataPage::problem() const {
  if (folder().isEmpty()) return tr("Choose a folder of %1 files.").arg(kind());
  if (!scanUpToDate()) return tr("Reading the folder...");
  if (!scan_.error.isEmpty()) return scan_.error;
  if (scan_.files == 0) return tr("%1 holds no readable %2 files.").arg(folder(), kind());
  return {};
}

bool DataPage::isComplete() const { return problem().isEmpty(); }

void DataPage::rescan() {
  debounce_.stop();
  startScan();
}

void DataPage::requestScan() {
  emit completeChanged();  // Next waits for the new scan
  debounce_.start();
  showScan();
}

void DataPage::startScan() {
  debounce_.stop();
  if (folder().isEmpty()) {
    haveScan_ = false;
    showScan();
    emit completeChanged();
    return;
  }
  if (host_->busy()) {
    // A stop also stops jobs queued behind it, so the new scan waits until the old one has ended.
    scanQueued_ = true;
    host_->stop();
    return;
  }
  scanFolder_ = folder();
  scanKind_ = kind();
  const auto* wizard = qobject_cast<const TrainWizard*>(this->wizard());
  const std::array<int, 3> shape = wizard ? wizard->imageShape() : std::array<int, 3>{28, 28, 1};
  progress_->setRange(0, 0);  // busy until the first progress report says how many files there are
  progress_->setFormat(tr("Reading the folder..."));
  host_->scanFolder(scanFolder_, scanKind_, shape[0], shape[1], shape[2]);
  showScan();
  emit completeChanged();
}

void DataPage::onScanFinished(const DatasetScan& scan) {
  if (scanQueued_ || scan.folder != scanFolder_ || scan.kind != scanKind_) return;  // an outdated scan
  scan_ = scan;
  haveScan_ = true;
}

void DataPage::showScan() {
  const QLocale locale;
  const bool current = scanUpToDate();
  if (current) {
    progress_->setRange(0, 1);
    progress_->setValue(1);
    progress_->setFormat(scan_.error.isEmpty() ? tr("Read %1").arg(QDir::toNativeSeparators(scan_.folder))
                                               : tr("Could not use this folder"));
  } else if (folder().isEmpty()) {
    progress_->setRange(0, 1);
    progress_->setValue(0);
    progress_->setFormat(tr("No folder chosen"));
  }

  QString summary;
  if (current && scan_.error.isEmpty()) {
    const QString size = locale.formattedDataSize(scan_.total_bytes);
    if (scan_.kind == QLatin1String("image")) {
      summary = tr("%1 at %2x%3x%4 · %5")
                    .arg(counted(scan_.files, tr("1 image"), tr("%1 images")))
                    .arg(scan_.image_height)
                    .arg(scan_.image_width)
                    .arg(scan_.image_channels)
                    .arg(size);
    } else if (scan_.kind == QLatin1String("audio")) {
      summary = tr("%1 · %2 of audio at 12 kHz · %3")
                    .arg(counted(scan_.files, tr("1 file"), tr("%1 files")),
                         format_duration(scan_.audio_seconds), size);
    } else {
      summary = tr("%1 · %2 of text").arg(counted(scan_.files, tr("1 file"), tr("%1 files")), size);
    }
  }
  summary_->setText(summary);
  summary_->setVisible(!summary.isEmpty());
  const QString why = problem();
  problem_->setText(current || folder().isEmpty() ? why : QString());
  problem_->setVisible(!problem_->text().isEmpty());

  while (QLayoutItem* item = previewRow_->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  previews_.clear();
  if (current && scan_.error.isEmpty()) {
    if (scan_.kind == QLatin1String("image")) {
      for (size_t i = 0; i < scan_.previews.size() && i < static_cast<size_t>(kImagePreviews); ++i) {
        auto* view = new SampleView;
        view->setFixedSize(124, 124);  // 28x28 at four screen pixels a pixel
        view->showImage(scan_.previews[i], scan_.image_height, scan_.image_width, scan_.image_channels);
        previews_ << view;
      }
    } else if (!scan_.previews.empty()) {
      auto* view = new SampleView;
      if (scan_.kind == QLatin1String("audio")) {
        view->showAudio(scan_.previews.front());
      } else {
        view->showText(scan_.previews.front());
      }
      previews_ << view;
    }
  }
  for (SampleView* view : previews_) previewRow_->addWidget(view, 0, Qt::AlignTop);
  if (previews_.isEmpty()) {
    auto* placeholder =
        new QLabel(current ? tr("Nothing to show.")
                           : tr("A few items of the data appear here once the folder is read."));
    placeholder->setAlignment(Qt::AlignCenter);
    placeholder->setEnabled(false);
    previewRow_->addWidget(placeholder);
  } else if (scan_.kind == QLatin1String("image")) {
    previewRow_->addStretch();  // thumbnails sit left, not spread
  }

  skipped_->clear();
  const QStringList skipped = current ? scan_.skipped : QStringList();
  for (const QString& line : skipped) {
    auto* item = new QListWidgetItem(line, skipped_);
    item->setToolTip(line);
  }
  skippedTitle_->setText(skipped.size() == 1
                             ? tr("1 file cannot be read and will be skipped:")
                             : tr("%1 files cannot be read and will be skipped:").arg(skipped.size()));
  skippedTitle_->setVisible(!skipped.isEmpty());
  skipped_->setVisible(!skipped.isEmpty());
}

}  // namespace stx::studio
