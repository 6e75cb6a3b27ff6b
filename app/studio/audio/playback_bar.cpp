#include "audio/playback_bar.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QStyle>

#include "audio/audio_player.h"
#include "audio/waveform_view.h"
#include "stx/engine/audio_io.h"

namespace stx::studio {

namespace {

QString seconds_text(qint64 frames) {
  return QLocale().toString(static_cast<double>(frames) / stx::engine::kSampleRate, 'f', 3);
}

}  // namespace

PlaybackBar::PlaybackBar(WaveformView* view, QWidget* parent) : QWidget(parent), view_(view) {
  player_ = new AudioPlayer(this);
  // Media icons tell these apart from the job's Stop.
  play_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaPlay), tr("Play"));
  play_->setToolTip(tr("Play the selected sample from the cursor (also while it is being generated)"));
  stop_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaStop), tr("Stop"));
  stop_->setToolTip(tr("Stop playback"));
  time_ = new QLabel;
  time_->setMinimumWidth(110);
  note_ = new QLabel;
  note_->setWordWrap(true);
  note_->setForegroundRole(QPalette::PlaceholderText);
  if (!player_->available()) {
    play_->setToolTip(tr("Playback unavailable: %1").arg(player_->unavailableReason()));
    note_->setText(tr("No playback: %1").arg(player_->unavailableReason()));
  }
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(play_);
  row->addWidget(stop_);
  row->addWidget(time_);
  row->addWidget(note_, 1);

  connect(play_, &QPushButton::clicked, this, &PlaybackBar::play);
  connect(stop_, &QPushButton::clicked, this, &PlaybackBar::stop);
  connect(view_, &WaveformView::laneSelected, this, [this] {
    player_->stop();
    refresh();
  });
  connect(player_, &AudioPlayer::positionChanged, this, [this](qint64 frame) {
    view_->setPlayhead(frame);
    showTime(frame);
  });
  connect(player_, &AudioPlayer::playingChanged, this, [this](bool playing) {
    if (!playing) view_->setPlayhead(-1);
    refresh();
  });
  connect(player_, &AudioPlayer::failed, this, &PlaybackBar::failed);
  refresh();
}

void PlaybackBar::play() {
  const int lane = view_->selectedLane();
  const Bytes& bytes = view_->laneBytes(lane);
  if (bytes.empty() || !player_->available()) return;
  player_->setAudio(bytes, !generating_);
  lane_ = lane;
  const qint64 cursor = view_->cursor();
  player_->play(cursor >= 0 ? cursor : 0);
}

void PlaybackBar::stop() { player_->stop(); }

void PlaybackBar::setGenerating(bool generating) {
  generating_ = generating;
  if (generating) {
    player_->stop();  // the lanes start over
  } else {
    player_->setComplete(true);
  }
  refresh();
}

void PlaybackBar::appendBytes(int lane, const std::string& bytes) {
  if (player_->isPlaying() && lane == lane_) {
    player_->append(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  if (!play_->isEnabled()) refresh();  // the first bytes make Play possible
}

void PlaybackBar::refresh() {
  const bool hasAudio = !view_->laneBytes(view_->selectedLane()).empty();
  play_->setEnabled(player_->available() && !player_->isPlaying() && hasAudio);
  stop_->setEnabled(player_->isPlaying());
}

void PlaybackBar::showTime(qint64 frame) {
  const auto total = static_cast<qint64>(view_->laneBytes(lane_).size());
  time_->setText(tr("%1 / %2 s").arg(seconds_text(frame), seconds_text(total)));
}

}  // namespace stx::studio
