// Play and Stop for the waveform's selected sample, from its cursor, with the time played and, when there is
// no audio device, the reason Play is off. Playback may start while the sample is still being generated:
// the tab passes new bytes on with appendBytes() and says when generation has ended.
//
// Generation on a CPU often runs slower than real time (a 2-core machine makes about 5,000 of the 12,000
// samples a second of audio needs). Played as it arrives, such a sample would stutter: a fraction of a
// second of sound, then silence while the player waits. So, like a streaming player, Play waits until
// enough has arrived to play through to the end without a gap at the measured rate ("Buffering..."), and
// if playback still catches up (the rate fell), it pauses and buffers again from where it was.
//
// With "Live" checked (the default), a generation that runs faster than real time (a GPU) is heard as it is
// made: once its pace is known, the selected sample starts playing from its beginning with a quarter second
// of lead, the waveform and the sound together. Slower generation is played after the fact, or by Play.
#pragma once

#include <QWidget>
#include <QtGlobal>
#include <string>

class QCheckBox;
class QLabel;
class QPushButton;

namespace stx::studio {

class AudioPlayer;
class WaveformView;

// Frames of a growing sample that must exist before playing it from frame `from`, so that playback at
// 12 kHz never catches up with generation, which adds `rate` frames a second until `total` frames exist.
// A margin covers a rate that dips: the rate is taken 15% lower, and a quarter second more is kept ahead.
qint64 frames_needed_to_play(qint64 from, qint64 total, double rate);

// Whether generation at `rate` frames a second, with the same margin, stays ahead of playback from the start:
// what Live playback waits for.
bool generation_outpaces_playback(double rate);

class PlaybackBar : public QWidget {
  Q_OBJECT

 public:
  explicit PlaybackBar(WaveformView* view, QWidget* parent = nullptr);

  void play();
  void stop();
  // While true, playback waits at the end of what has arrived instead of ending there.
  void setGenerating(bool generating);
  // How fast each sample grows (frames a second) and how long it will be. A rate of 0 is unknown (nothing
  // generated yet, or a prompt being read, whose pace says nothing of generating's): Play then waits for one.
  void setGenerationRate(double framesPerSecond, qint64 totalFrames);
  // Play was pressed and waits for enough of the sample to play it through.
  bool buffering() const { return buffering_; }
  // New bytes at the end of lane `lane` (SampleBytes).
  void appendBytes(int lane, const std::string& bytes);
  // The view's lanes changed: Play may have become possible.
  void refresh();

  AudioPlayer* player() const { return player_; }
  QPushButton* playButton() const { return play_; }
  QPushButton* stopButton() const { return stop_; }
  QLabel* note() const { return note_; }
  QCheckBox* liveBox() const { return live_; }

 signals:
  void failed(const QString& message);

 private:
  void showTime(qint64 frame);
  // Starts playing from bufferFrom_ once enough has arrived (or generation ended); else says how long.
  void startWhenBuffered();
  void startPlaying(qint64 from);
  void bufferAgainIfCaughtUp();
  // Live playback: starts the selected sample once generation's pace outruns playback, once a run.
  void playLiveIfFastEnough();

  WaveformView* view_;
  AudioPlayer* player_;
  QPushButton* play_;
  QPushButton* stop_;
  QLabel* time_;
  QLabel* note_;
  QCheckBox* live_;
  bool generating_ = false;
  bool liveTried_ = false;  // this run's live start was made (or stopped by the user)
  int lane_ = -1;  // the lane playing, or waiting to
  bool buffering_ = false;
  qint64 bufferFrom_ = 0;
  qint64 atLeast_ = 0;  // frames to wait for besides what the rate asks, after playback caught up
  double rate_ = 0;     // frames a second per sample, while generating; 0 while unknown
  qint64 total_ = 0;
};

}  // namespace stx::studio
