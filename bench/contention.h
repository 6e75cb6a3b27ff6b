// Other work on the machine, made on purpose: K programs that each keep one core busy, as a build, a
// browser or a second program would. A bench starts them beside the code it times and stops them when the
// row is done, so that the rate with and without them is measured in the same run.
//
// Separate processes, not threads of the bench: the scheduler shares cores between processes as it would
// on a desktop (`sh -c 'while :; do :; done'`, which is what each of them runs).
#pragma once

#include <sys/types.h>

#include <vector>

namespace stx::bench {

class BusyPrograms {
 public:
  // Starts `count` busy programs, each under `timeout` so that it ends after `max_seconds` even if the
  // bench dies. Throws std::runtime_error when one cannot be started.
  BusyPrograms(int count, double max_seconds);
  ~BusyPrograms();
  BusyPrograms(const BusyPrograms&) = delete;
  BusyPrograms& operator=(const BusyPrograms&) = delete;

  // Ends them and waits for them.
  void stop();

 private:
  std::vector<pid_t> pids_;
};

}  // namespace stx::bench
