// Ctrl-C for long jobs: the first press asks the job to stop (it then saves or writes what it has), a
// second one ends the process at once. Only the engine's cooperative cancel flag is touched in the handler.
#pragma once

#include <atomic>

namespace stx::cli {

class StopOnInterrupt {
 public:
  // Installs the SIGINT handler; `notice` (static storage) is written to stderr on the first Ctrl-C.
  explicit StopOnInterrupt(const char* notice);
  ~StopOnInterrupt();  // restores the default handler
  StopOnInterrupt(const StopOnInterrupt&) = delete;
  StopOnInterrupt& operator=(const StopOnInterrupt&) = delete;
  // The flag the engine job polls.
  const std::atomic<bool>& flag() const;
};

}  // namespace stx::cli
