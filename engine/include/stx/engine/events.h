// What a running job tells whoever started it: plain value structs, no Qt, no torch.
//
// A job calls its EventSink from the thread it runs on. The CLI prints the events; the studio's worker
// forwards them to the GUI thread through queued signals. A sink must return quickly.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <variant>
#include <vector>

namespace stx::engine {

// Training made progress: after every optimiser step.
struct TrainProgress {
  int64_t step = 0;               // steps done
  int64_t total_steps = 0;
  double loss_bits_per_byte = 0;  // the training batch's mean loss, in bits per byte
  double learning_rate = 0;
  double tokens_per_second = 0;   // averaged over the last steps
  double elapsed_seconds = 0;     // this run, excluding earlier runs that were resumed
  double eta_seconds = 0;         // to total_steps at the current rate
};

// A validation pass finished.
struct ValidationDone {
  int64_t step = 0;
  double bits_per_byte = 0;
  bool is_best = false;
};

// A checkpoint was committed (renamed into place and recorded in latest.json).
struct CheckpointSaved {
  int64_t step = 0;
  std::filesystem::path folder;
};

// A line for the log panel or the terminal.
struct LogLine {
  enum class Level { info, warning, error } level = Level::info;
  std::string text;
};

// Sampling is about to start: the seed that will be used (also when none was asked for), so that a user
// sees and can reuse it before the first byte.
struct SampleStarted {
  uint64_t seed = 0;
  int64_t count = 0;          // samples decoded together
  int64_t prompt_bytes = 0;   // bytes every sample starts with
  int64_t length = 0;         // total bytes per sample, prompt included
  std::string device;         // where it runs, for people: "CPU", "CUDA: <device name>"
  std::string device_reason;  // why, when Automatic chose it (generation_device.h); else empty
};

// Sampling made progress (throttled: a few times a second at most).
struct SampleProgress {
  int64_t position = 0;             // positions done per sample, prompt included
  int64_t length = 0;
  // All samples together: prompt bytes read per second while the prompt is read (position <=
  // prompt_bytes), then bytes drawn per second since the first was drawn.
  double tokens_per_second = 0;
  double elapsed_seconds = 0;
  // From the steps after the first, which also starts the threads and touches the caches' first pages;
  // after a prompt, from the generated steps alone. Negative (unknown) after the first step alone, and
  // while a prompt is read (for one sample, many positions a call: its pace says nothing of generating's).
  double eta_seconds = 0;
};

// New bytes of one sample, starting at `position` (throttled: bytes are gathered between events, none lost).
struct SampleBytes {
  int64_t sample = 0;
  int64_t position = 0;
  std::string bytes;
};

// What one head attended when the latest position of a sample was generated: only sent when asked for.
struct AttentionProbe {
  int64_t sample = 0;
  int layer = 0, head = 0;
  int64_t position = 0;
  std::vector<int64_t> positions;  // the attended set A(position), ascending
  std::vector<float> weights;      // softmax weights, one per position
};

// The job ended. `message` is the plain-words reason when it failed.
struct JobEnded {
  enum class Outcome { completed, cancelled, failed } outcome = Outcome::completed;
  std::string message;
  std::filesystem::path checkpoint;  // the last checkpoint written, if any
  std::vector<std::string> settings;  // of a failure: the settings its message is about (Error::settings)
};

using Event = std::variant<TrainProgress, ValidationDone, CheckpointSaved, LogLine, JobEnded, SampleStarted,
                           SampleProgress, SampleBytes, AttentionProbe>;
using EventSink = std::function<void(const Event&)>;

}  // namespace stx::engine
