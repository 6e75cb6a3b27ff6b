#include "audio/audio_player.h"

#include <portaudio.h>

#include <algorithm>
#include <array>

#include "stx/engine/mulaw.h"
#include "stx/engine/data/audio_io.h"

namespace stx::studio {

namespace {

constexpr int kPollMs = 30;
constexpr double kSampleRate = stx::engine::kSampleRate;

// PortAudio is started once per process and stopped at exit, after every player is gone.
struct PortAudioSession {
  PaError error;
  PortAudioSession() : error(Pa_Initialize()) {}
  ~PortAudioSession() {
    if (error == paNoError) Pa_Terminate();
  }
};

const PortAudioSession& portaudio() {
  static PortAudioSession session;
  return session;
}


}  // namespace

struct AudioCallback {
  static int run(const void*, void* output, unsigned long frameCount, const PaStreamCallbackTimeInfo*,
                 PaStreamCallbackFlags, void* self) {
    return static_cast<AudioPlayer*>(self)->fill(static_cast<float*>(output), frameCount);
  }
};

AudioPlayer::AudioPlayer(QObject* parent) : QObject(parent) {
  poll_.setInterval(kPollMs);
  connect(&poll_, &QTimer::timeout, this, &AudioPlayer::poll);
  if (!qEnvironmentVariableIsEmpty("STX_STUDIO_NO_AUDIO")) {
    reason_ = tr("turned off by STX_STUDIO_NO_AUDIO");
  } else if (portaudio().error != paNoError) {
    reason_ =
        tr("the audio system did not start (%1)").arg(QString::fromUtf8(Pa_GetErrorText(portaudio().error)));
  } else if (Pa_GetDefaultOutputDevice() == paNoDevice) {
    reason_ = tr("no audio output device was found");
  }
}

AudioPlayer::~AudioPlayer() { stop(); }

void AudioPlayer::setAudio(const Bytes& mulaw, bool complete) {
  stop();
  stoppedAt_ = 0;
  const std::array<float, 256>& table = stx::engine::mulaw_amplitude_table();
  std::lock_guard<std::mutex> lock(mutex_);
  samples_.resize(mulaw.size());
  std::transform(mulaw.begin(), mulaw.end(), samples_.begin(), [&](uint8_t b) { return table[b]; });
  complete_.store(complete);
}

void AudioPlayer::append(const uint8_t* mulaw, size_t count) {
  const std::array<float, 256>& table = stx::engine::mulaw_amplitude_table();
  std::vector<float> decoded(count);
  std::transform(mulaw, mulaw + count, decoded.begin(), [&](uint8_t b) { return table[b]; });
  std::lock_guard<std::mutex> lock(mutex_);
  samples_.insert(samples_.end(), decoded.begin(), decoded.end());
}

qint64 AudioPlayer::frames() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<qint64>(samples_.size());
}

qint64 AudioPlayer::position() const {
  if (!isPlaying()) return stoppedAt_;
  // The callback runs ahead of the speaker by the device's latency, less the silence queued after the clip.
  const double buffered = std::max(0.0, latencyFrames_ - static_cast<double>(silence_.load()));
  const double heard = static_cast<double>(consumed_.load()) - buffered;
  return std::clamp(static_cast<qint64>(heard), startFrame_, std::max(startFrame_, frames()));
}

bool AudioPlayer::play(qint64 fromFrame) {
  if (!available()) {
    emit failed(reason_);
    return false;
  }
  stop();
  const qint64 size = frames();
  if (fromFrame < 0 || (fromFrame >= size && complete_.load())) fromFrame = 0;
  sourcePosition_ = static_cast<double>(fromFrame);
  startFrame_ = fromFrame;
  stoppedAt_ = fromFrame;
  consumed_.store(fromFrame);
  silence_.store(0);
  ended_.store(false);

  PaStreamParameters params{};
  params.device = Pa_GetDefaultOutputDevice();
  const PaDeviceInfo* device = params.device == paNoDevice ? nullptr : Pa_GetDeviceInfo(params.device);
  if (!device) {
    emit failed(tr("no audio output device was found"));
    return false;
  }
  params.channelCount = 1;
  params.sampleFormat = paFloat32;
  params.suggestedLatency = device->defaultHighOutputLatency;  // steady playback matters more than latency
  // Devices that do not take 12 kHz get the default rate; fill() then interpolates.
  deviceRate_ = Pa_IsFormatSupported(nullptr, &params, kSampleRate) == paFormatIsSupported
                    ? kSampleRate
                    : device->defaultSampleRate;
  PaStream* stream = nullptr;
  PaError error = Pa_OpenStream(&stream, nullptr, &params, deviceRate_, paFramesPerBufferUnspecified,
                                paNoFlag, &AudioCallback::run, this);
  if (error == paNoError) {
    error = Pa_StartStream(stream);
    if (error != paNoError) Pa_CloseStream(stream);
  }
  if (error != paNoError) {
    emit failed(tr("playback could not start: %1").arg(QString::fromUtf8(Pa_GetErrorText(error))));
    return false;
  }
  stream_ = stream;
  const PaStreamInfo* info = Pa_GetStreamInfo(stream);
  latencyFrames_ = info ? info->outputLatency * kSampleRate : 0.0;
  poll_.start();
  emit playingChanged(true);
  emit positionChanged(fromFrame);
  return true;
}

void AudioPlayer::stop() {
  if (!stream_) return;
  poll_.stop();
  const qint64 at = ended_.load() ? frames() : position();
  auto* stream = static_cast<PaStream*>(stream_);
  Pa_AbortStream(stream);  // at once: Stop means stop, not "after the buffer"
  Pa_CloseStream(stream);
  stream_ = nullptr;
  stoppedAt_ = at;
  emit positionChanged(at);
  emit playingChanged(false);
}

void AudioPlayer::poll() {
  if (!stream_) return;
  emit positionChanged(position());
  if (ended_.load() && Pa_IsStreamActive(static_cast<PaStream*>(stream_)) != 1) stop();
}

int AudioPlayer::fill(float* out, unsigned long frameCount) {
  // Try-lock only: the GUI thread holds the lock just to append, and a buffer of silence is better than
  // blocking the audio thread.
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  unsigned long written = 0;
  int result = paContinue;
  if (lock.owns_lock()) {
    const double step = kSampleRate / deviceRate_;
    const size_t size = samples_.size();
    for (; written < frameCount; ++written) {
      const auto index = static_cast<size_t>(sourcePosition_);
      if (index >= size) {
        // Caught up with the clip: wait for more bytes, or end when none will come.
        if (complete_.load()) {
          ended_.store(true);
          result = paComplete;
        }
        break;
      }
      const float here = samples_[index];
      const float next = index + 1 < size ? samples_[index + 1] : here;
      const auto fraction = static_cast<float>(sourcePosition_ - static_cast<double>(index));
      out[written] = here + (next - here) * fraction;
      sourcePosition_ += step;
    }
    consumed_.store(static_cast<int64_t>(std::min(sourcePosition_, static_cast<double>(size))));
  }
  const auto silent =
      static_cast<int64_t>(static_cast<double>(frameCount - written) * kSampleRate / deviceRate_);
  silence_.store(written > 0 ? silent : silence_.load() + silent);
  std::fill(out + written, out + frameCount, 0.0f);
  return result;
}

}  // namespace stx::studio
