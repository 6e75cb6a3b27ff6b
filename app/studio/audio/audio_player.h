// Plays one clip of 12 kHz mu-law bytes through PortAudio's default output device. The clip may still be
// growing (generation running): playback plays what has arrived, waits at the end for more, and stops at
// the end once setComplete(true) says no more will come.
//
// The audio callback never touches Qt: it reads the decoded samples under a mutex it only try-locks, and
// publishes how far it got in an atomic frame counter that a QTimer on the GUI thread polls.
//
//   AudioPlayer player;
//   if (!player.available()) label->setText(player.unavailableReason());
//   player.setAudio(bytes, /*complete=*/false);
//   player.play();
//   player.append(moreBytes.data(), moreBytes.size());
//   player.setComplete(true);
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>  // before engine_types.h, which uses it without including it
#include <QTimer>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/engine_types.h"

namespace stx::studio {

class AudioPlayer : public QObject {
  Q_OBJECT

 public:
  explicit AudioPlayer(QObject* parent = nullptr);
  ~AudioPlayer() override;

  // False when PortAudio did not start or there is no default output device (headless machines, CI), or
  // STX_STUDIO_NO_AUDIO is set; everything else in the studio works without it.
  bool available() const { return reason_.isEmpty(); }
  QString unavailableReason() const { return reason_; }

  // Replaces the clip (stops playback first). complete: no bytes will be appended.
  void setAudio(const Bytes& mulaw, bool complete);
  // More bytes at the end of the clip, while it plays.
  void append(const uint8_t* mulaw, size_t count);
  void setComplete(bool complete) { complete_.store(complete); }

  // Starts at `fromFrame` (12 kHz frames). Returns false and emits failed() when the stream cannot open.
  bool play(qint64 fromFrame = 0);
  void stop();
  bool isPlaying() const { return stream_ != nullptr; }
  // The frame being heard now (the frames in the device's buffer are not counted yet); once stopped, where
  // playback stopped.
  qint64 position() const;
  qint64 frames() const;
  // Playing a clip that is still growing, and every frame that has arrived was handed to the device.
  bool waitingForBytes() const { return isPlaying() && !complete_.load() && consumed_.load() >= frames(); }

 signals:
  void positionChanged(qint64 frame);
  void playingChanged(bool playing);
  void failed(const QString& message);

 private:
  friend struct AudioCallback;  // PortAudio's callback, in the .cpp: calls fill()
  // On the audio thread: writes frameCount output frames; returns paContinue or paComplete.
  int fill(float* out, unsigned long frameCount);
  void poll();

  QString reason_;
  void* stream_ = nullptr;    // PaStream*, only touched on the GUI thread
  double deviceRate_ = 0;     // the stream's rate; 12 kHz when the device takes it
  double latencyFrames_ = 0;  // the device's output latency, in 12 kHz frames
  QTimer poll_;

  mutable std::mutex mutex_;    // guards samples_ between the GUI thread and the callback
  std::vector<float> samples_;  // decoded clip, 12 kHz
  std::atomic<bool> complete_{true};
  std::atomic<bool> ended_{false};    // the callback reached the end of a complete clip
  std::atomic<int64_t> consumed_{0};  // frames the callback has handed to the device
  // Silence handed to the device since the last real frame (waiting for bytes), in 12 kHz frames: it
  // pushes the clip's frames out of the device's buffer, so the latency no longer hides them.
  std::atomic<int64_t> silence_{0};
  double sourcePosition_ = 0;  // the callback's read position in frames (fractional when resampling)
  qint64 startFrame_ = 0;
  qint64 stoppedAt_ = 0;  // the position once stopped
};

}  // namespace stx::studio
