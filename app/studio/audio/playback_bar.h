// Play and Stop for the waveform's selected sample, from its cursor, with the time played and, when there is
// no audio device, the reason Play is off. Playback may start while the sample is still being generated:
// the tab passes new bytes on with appendBytes() and says when generation has ended.
#pragma once

#include <QWidget>
#include <string>

class QLabel;
class QPushButton;

namespace stx::studio {

class AudioPlayer;
class WaveformView;

class PlaybackBar : public QWidget {
  Q_OBJECT

 public:
  explicit PlaybackBar(WaveformView* view, QWidget* parent = nullptr);

  void play();
  void stop();
  // While true, playback waits at the end of what has arrived instead of ending there.
  void setGenerating(bool generating);
  // New bytes at the end of lane `lane` (SampleBytes).
  void appendBytes(int lane, const std::string& bytes);
  // The view's lanes changed: Play may have become possible.
  void refresh();

  AudioPlayer* player() const { return player_; }
  QPushButton* playButton() const { return play_; }
  QPushButton* stopButton() const { return stop_; }
  QLabel* note() const { return note_; }

 signals:
  void failed(const QString& message);

 private:
  void showTime(qint64 frame);

  WaveformView* view_;
  AudioPlayer* player_;
  QPushButton* play_;
  QPushButton* stop_;
  QLabel* time_;
  QLabel* note_;
  bool generating_ = false;
  int lane_ = -1;  // the lane playing
};

}  // namespace stx::studio
