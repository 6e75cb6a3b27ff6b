// Prints engine events on a terminal: a progress bar redrawn in place on a TTY, a line every few seconds
// otherwise (logs, CI), and log lines as they come.
#pragma once

#include <chrono>

#include "stx/engine/events.h"

namespace stx::cli {

class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool quiet = false);
  void operator()(const stx::engine::Event& event);

 private:
  void draw(const stx::engine::TrainProgress& p);
  void draw(const stx::engine::SampleProgress& p);
  void end_bar();
  bool tty_;
  bool quiet_;
  bool bar_open_ = false;
  double last_validation_ = -1;
  int64_t prompt_bytes_ = 0;  // of the sampling under way: its progress reads "prompt" until they are read
  std::chrono::steady_clock::time_point last_line_{};
};

// "1h02m", "4m05s", "12s".
std::string format_duration(double seconds);

}  // namespace stx::cli
