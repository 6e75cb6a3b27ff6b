#include "audio/playback_bar.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QStyle>
#include <algorithm>
#include <cmath>

#include "audio/audio_player.h"
#include "audio/waveform_view.h"
#include "stx/engine/data/audio_io.h"

namespace stx::studio {

namespace {

QString seconds_text(qint64 frames) {
  return QLocale().toString(static_cast<double>(frames) / stx::engine::kSampleRate, 'f', 3);
}

constexpr double kRateMargin = 1.15;  // the rate is taken this much lower than measured
constexpr qint64 kLeadFrames = stx::engine::kSampleRate / 4;

}  // namespace

qint64 frames_needed_to_play(qint64 from, qint64 total, double rate) {
  // Playback reaches frame f, (f - from) / 12,000 s after it starts; by then generation, which had G
  // frames, has G + rate * (f - from) / 12,000. G must cover f at every f up to total: when generation is
  // slower than playback the end is the tightest, else the start.
  const double safe_rate = rate / kRateMargin;
  const double real_time = stx::engine::kSampleRate;
  const double at_end = static_cast<double>(total) - safe_rate * static_cast<double>(total - from) / real_time;
  const auto needed = static_cast<qint64>(std::ceil(std::max(at_end, static_cast<double>(from)))) + kLeadFrames;
  return std::min(needed, total);
}

bool generation_outpaces_playback(double rate) { return rate / kRateMargin >= stx::engine::kSampleRate; }

PlaybackBar::PlaybackBar(WaveformView* view, QWidget* parent) : QWidget(parent), view_(view) {
  player_ = new AudioPlayer(this);
  // Media icons tell these apart from the job's Stop.
  play_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaPlay), tr("Play"));
  play_->setToolTip(tr("Play the selected sample from the cursor (also while it is being generated)"));
  stop_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaStop), tr("Stop"));
  stop_->setToolTip(tr("Stop playback"));
  live_ = new QCheckBox(tr("Live"));
  live_->setChecked(true);
  live_->setToolTip(
      tr("Play the selected sample as it is generated, when generation runs faster than real time (12,000 "
         "samples a second, a GPU); slower generation is played after the fact"));
  time_ = new QLabel;
  time_->setMinimumWidth(110);
  note_ = new QLabel;
  note_->setWordWrap(true);
  note_->setForegroundRole(QPalette::PlaceholderText);
  if (!player_->available()) {
    live_->setEnabled(false);
    play_->setToolTip(tr("Playback unavailable: %1").arg(player_->unavailableReason()));
    note_->setText(tr("No playback: %1").arg(player_->unavailableReason()));
  }
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(play_);
  row->addWidget(stop_);
  row->addWidget(live_);
  row->addWidget(time_);
  row->addWidget(note_, 1);

  connect(play_, &QPushButton::clicked, this, &PlaybackBar::play);
  connect(stop_, &QPushButton::clicked, this, &PlaybackBar::stop);
  connect(view_, &WaveformView::laneSelected, this, &PlaybackBar::stop);
  connect(player_, &AudioPlayer::positionChanged, this, [this](qint64 frame) {
    view_->setPlayhead(frame);
    showTime(frame);
  });
  // Queued: play() itself reports its first position, and starting again from in there would recurse.
  connect(player_, &AudioPlayer::positionChanged, this, &PlaybackBar::bufferAgainIfCaughtUp, Qt::QueuedConnection);
  connect(player_, &AudioPlayer::playingChanged, this, [this](bool playing) {
    if (!playing) view_->setPlayhead(-1);
    refresh();
  });
  connect(player_, &AudioPlayer::failed, this, &PlaybackBar::failed);
  refresh();
}

void PlaybackBar::play() {
  const int lane = view_->selectedLane();
  if (view_->laneBytes(lane).empty() || !player_->available()) return;
  lane_ = lane;
  const qint64 cursor = view_->cursor();
  bufferFrom_ = cursor >= 0 ? cursor : 0;
  atLeast_ = 0;
  if (generating_) {
    buffering_ = true;
    startWhenBuffered();
  } else {
    startPlaying(bufferFrom_);
  }
}

void PlaybackBar::startPlaying(qint64 from) {
  buffering_ = false;
  if (player_->available()) note_->clear();
  player_->setAudio(view_->laneBytes(lane_), !generating_);
  player_->play(from);
  refresh();
}

void PlaybackBar::bufferAgainIfCaughtUp() {
  // Caught up with a sample that is still growing: pause and buffer again rather than stutter. It resumes
  // from what was heard (stopping drops what the device still held), and only once more has arrived than
  // had then: the rate it was started on proved too hopeful.
  if (!generating_ || !player_->waitingForBytes()) return;
  const qint64 arrived = player_->frames();
  player_->stop();
  buffering_ = true;
  bufferFrom_ = player_->position();
  atLeast_ = arrived + kLeadFrames;
  startWhenBuffered();
}

void PlaybackBar::startWhenBuffered() {
  const auto have = static_cast<qint64>(view_->laneBytes(lane_).size());
  if (generating_ && (rate_ <= 0 || total_ <= 0)) {
    // Started on a guess, playback would catch up with generation and stop again.
    note_->setText(tr("Buffering: playback starts once generation's pace is known"));
    refresh();
    return;
  }
  const qint64 needed = std::min(total_, std::max(frames_needed_to_play(bufferFrom_, total_, rate_), atLeast_));
  if (!generating_ || have >= needed) {
    startPlaying(bufferFrom_);
    return;
  }
  const double wait = static_cast<double>(needed - have) / rate_;
  note_->setText(tr("Buffering: playback starts in about %1 s (generation runs at %2x real time)")
                     .arg(QLocale().toString(std::ceil(wait), 'f', 0),
                          QLocale().toString(rate_ / stx::engine::kSampleRate, 'f', 2)));
  refresh();
}

void PlaybackBar::stop() {
  liveTried_ = true;  // a Stop during a run is not undone by Live
  if (buffering_) {
    buffering_ = false;
    note_->clear();
  }
  player_->stop();
  refresh();
}

void PlaybackBar::setGenerating(bool generating) {
  generating_ = generating;
  if (generating) {
    stop();  // the lanes start over
    liveTried_ = false;
    rate_ = 0;
    total_ = 0;
  } else {
    player_->setComplete(true);
    if (buffering_) {
      startPlaying(bufferFrom_);  // everything is there now
    } else if (player_->available() && !player_->isPlaying()) {
      note_->clear();  // Live's note about the pace is over
    }
  }
  refresh();
}

void PlaybackBar::setGenerationRate(double framesPerSecond, qint64 totalFrames) {
  const bool firstRate = rate_ <= 0 && framesPerSecond > 0;
  rate_ = std::max(0.0, framesPerSecond);
  total_ = totalFrames;
  if (buffering_ && firstRate) startWhenBuffered();  // was waiting for a rate
  playLiveIfFastEnough();
}

void PlaybackBar::playLiveIfFastEnough() {
  if (!generating_ || liveTried_ || !live_->isChecked() || !player_->available() || buffering_ ||
      player_->isPlaying() || rate_ <= 0 || total_ <= 0) {
    return;
  }
  if (!generation_outpaces_playback(rate_)) {
    note_->setText(tr("Live playback needs generation faster than real time (now %1x): Play plays it once it "
                      "can play through")
                       .arg(QLocale().toString(rate_ / stx::engine::kSampleRate, 'f', 2)));
    return;
  }
  liveTried_ = true;
  lane_ = std::max(0, view_->selectedLane());
  bufferFrom_ = 0;
  atLeast_ = 0;
  buffering_ = true;
  startWhenBuffered();
}

void PlaybackBar::appendBytes(int lane, const std::string& bytes) {
  if (player_->isPlaying() && lane == lane_) {
    player_->append(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  if (buffering_ && lane == lane_) startWhenBuffered();
  if (!play_->isEnabled()) refresh();  // the first bytes make Play possible
}

void PlaybackBar::refresh() {
  const bool hasAudio = !view_->laneBytes(view_->selectedLane()).empty();
  play_->setEnabled(player_->available() && !player_->isPlaying() && !buffering_ && hasAudio);
  stop_->setEnabled(player_->isPlaying() || buffering_);
}

void PlaybackBar::showTime(qint64 frame) {
  const auto total = static_cast<qint64>(view_->laneBytes(lane_).size());
  time_->setText(tr("%1 / %2 s").arg(seconds_text(frame), seconds_text(total)));
}

}  // namespace stx::studio
