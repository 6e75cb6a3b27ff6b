#include "contention.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

extern char** environ;

namespace stx::bench {

BusyPrograms::BusyPrograms(int count, double max_seconds) {
  const std::string seconds = std::to_string(static_cast<long long>(std::ceil(max_seconds)));
  for (int k = 0; k < count; ++k) {
    const char* argv[] = {"timeout", seconds.c_str(), "sh", "-c", "while :; do :; done", nullptr};
    pid_t pid = 0;
    const int failed = posix_spawnp(&pid, "timeout", nullptr, nullptr, const_cast<char**>(argv), environ);
    if (failed != 0) {
      stop();
      throw std::runtime_error(std::string("stx-bench: cannot start a busy program (timeout sh -c ...): ") +
                               std::strerror(failed));
    }
    pids_.push_back(pid);
  }
}

BusyPrograms::~BusyPrograms() { stop(); }

void BusyPrograms::stop() {
  for (const pid_t pid : pids_) kill(pid, SIGTERM);  // timeout passes it on to its shell
  for (const pid_t pid : pids_) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pids_.clear();
}

}  // namespace stx::bench
