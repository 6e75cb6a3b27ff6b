#include "audio/prompt_clip_box.h"

#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QSignalBlocker>
#include <algorithm>
#include <cmath>

#include "audio/clip_loader.h"
#include "stx/engine/data/audio_io.h"

namespace stx::studio {

namespace {

constexpr int kRate = stx::engine::kSampleRate;

QString seconds_text(qint64 bytes) { return QLocale().toString(static_cast<double>(bytes) / kRate, 'f', 3); }

}  // namespace

PromptClipBox::PromptClipBox(QWidget* parent) : QGroupBox(tr("Prompt clip"), parent) {
  loader_ = new ClipLoader(this);
  open_ = new QPushButton(tr("Open clip..."));
  open_->setToolTip(
      tr("A WAV, FLAC, OGG, AIFF or MP3 file whose start the model continues (or drop one on "
         "the window)"));
  clear_ = new QPushButton(tr("Clear"));
  clear_->setToolTip(tr("Generate from nothing (unconditional)"));
  label_ = new QLabel;
  label_->setWordWrap(true);
  keep_ = new QDoubleSpinBox;
  keep_->setDecimals(3);
  keep_->setSuffix(tr(" s"));
  keep_->setSingleStep(0.25);
  keep_->setToolTip(tr("How much of the clip's start every sample begins with"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(open_);
  buttons->addWidget(clear_);
  buttons->addStretch();
  auto* form = new QFormLayout(this);
  form->addRow(buttons);
  form->addRow(label_);
  form->addRow(tr("Keep first"), keep_);

  connect(open_, &QPushButton::clicked, this, [this] {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Open a clip to continue"), folder_, fileFilter());
    if (!path.isEmpty()) openFile(path);
  });
  connect(clear_, &QPushButton::clicked, this, [this] {
    clip_.clear();
    clipName_.clear();
    refresh();
  });
  connect(keep_, &QDoubleSpinBox::valueChanged, this, [this](double seconds) {
    wantedKeepSeconds_ = seconds;
    refresh();
  });
  connect(loader_, &ClipLoader::loaded, this, &PromptClipBox::clipLoaded);
  connect(loader_, &ClipLoader::warned, this, &PromptClipBox::warned);
  connect(loader_, &ClipLoader::failed, this, [this](const QString&, const QString& message) {
    refresh();
    emit failed(message);
  });
  refresh();
}

QString PromptClipBox::fileFilter() {
  return tr("Audio clips (*.wav *.flac *.ogg *.oga *.aif *.aiff *.mp3);;All files (*)");
}

bool PromptClipBox::acceptsFile(const QString& path) {
  static const QStringList suffixes = {"wav", "flac", "ogg", "oga", "aif", "aiff", "mp3"};
  return suffixes.contains(QFileInfo(path).suffix().toLower());
}

void PromptClipBox::openFile(const QString& path) {
  if (!loader_->load(path)) {
    emit failed(tr("%1: another clip is still loading").arg(QFileInfo(path).fileName()));
    return;
  }
  refresh();
}

bool PromptClipBox::loading() const { return loader_->busy(); }

void PromptClipBox::clipLoaded(const QString& path, const Bytes& clip) {
  if (clip.empty()) {
    refresh();
    emit failed(tr("%1: the file holds no audio").arg(path));
    return;
  }
  clip_ = clip;
  clipName_ = QFileInfo(path).fileName();
  folder_ = QFileInfo(path).absolutePath();
  refresh();
  emit clipOpened(path);
}

QString PromptClipBox::promptText() const {
  if (prompt_.empty()) return QStringLiteral("unconditional");
  // Locale-independent: it goes into the file's metadata.
  return QStringLiteral("clip %1, first %2 s")
      .arg(clipName_, QString::number(static_cast<double>(prompt_.size()) / kRate, 'g', 6));
}

void PromptClipBox::setContext(qint64 context) {
  context_ = context;
  refresh();
}

void PromptClipBox::setLocked(bool locked) {
  locked_ = locked;
  refresh();
}

void PromptClipBox::setKeepSeconds(double seconds) {
  wantedKeepSeconds_ = seconds;
  refresh();
}

void PromptClipBox::refresh() {
  qint64 keepable = static_cast<qint64>(clip_.size());
  if (context_ > 0) keepable = std::min<qint64>(keepable, context_ - 1);
  {
    const QSignalBlocker block(keep_);  // the range must not overwrite what the user asked for
    keep_->setRange(0.0, std::floor(static_cast<double>(keepable) / kRate * 1000.0) / 1000.0);
    keep_->setValue(wantedKeepSeconds_);
  }
  const qint64 keep = std::clamp<qint64>(std::llround(keep_->value() * kRate), 0, keepable);
  const Bytes before = prompt_;
  if (!locked_) prompt_.assign(clip_.begin(), clip_.begin() + keep);
  keep_->setEnabled(!clip_.empty() && !locked_);
  clear_->setEnabled(!clip_.empty() && !locked_);
  open_->setEnabled(!loading() && !locked_);
  if (loading()) {
    label_->setText(tr("Loading the clip..."));
  } else if (clip_.empty()) {
    label_->setText(tr("No clip: samples start from nothing (unconditional)."));
  } else {
    QString text =
        tr("<b>%1</b> · %2 s<br>Every sample starts with its first %3 s (%4 samples).")
            .arg(clipName_.toHtmlEscaped(), seconds_text(clip_.size()), seconds_text(prompt_.size()),
                 QLocale().toString(static_cast<qint64>(prompt_.size())));
    if (keepable < static_cast<qint64>(clip_.size()) && std::llround(wantedKeepSeconds_ * kRate) > keepable) {
      text +=
          QStringLiteral("<br>") + tr("At most %1 s fits the model's context.").arg(seconds_text(keepable));
    }
    label_->setText(text);
  }
  if (prompt_ != before) emit promptChanged();
}

}  // namespace stx::studio
