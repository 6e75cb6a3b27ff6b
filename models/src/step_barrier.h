// Where the threads of one decoder step meet: a counting barrier that spins, then sleeps on a Linux futex.
// The decoder's one piece of platform code (cpu_decoder_shared_step.cpp uses it).
#pragma once

#include <linux/futex.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

namespace stx::models {

// Every thread adds one to the arrivals at each barrier and the count is reset before each step, so barrier
// k of a step of `parts` threads is passed once the count reaches parts * k (`everyone`). A thread that has
// to wait calls while_waiting() between looks until it returns false, spins, and then sleeps on a futex
// until the last to arrive wakes it, as libgomp's barrier does. It replaced an OpenMP barrier that came
// after the count (the count is needed to know when to stop asking for rows): one meeting instead of two,
// 20 times a step (docs/benchmarks.md, "One barrier where the threads meet"). Yielding the core instead of
// sleeping was faster beside one busy process but slowed tests with more threads than cores three times over.
class StepBarrier {
 public:
  // Before each step, with no thread inside.
  void reset() {
    arrivals_.store(0, std::memory_order_relaxed);
    sleepers_.store(0, std::memory_order_relaxed);
  }

  // How many times a waiting thread of `parts` looks before it sleeps: about as long as libgomp with the
  // GOMP_SPINCOUNT the programs start with (stx/engine/process/process_start.h). With more threads than
  // processors, as libgomp does, much less: the thread awaited may be waiting for this very core.
  static int spins_for(int parts) { return parts > omp_get_num_procs() ? 100 : 3000; }

  template <class WhileWaiting>
  void meet(int32_t everyone, int spins, WhileWaiting&& while_waiting) {
    static_assert(sizeof(std::atomic<int32_t>) == sizeof(int32_t), "a futex is one 32-bit word");
    auto* word = reinterpret_cast<int32_t*>(&arrivals_);
    // Sequentially consistent here and on `sleepers_`: either the last to arrive sees a sleeper and wakes
    // it, or the sleeper sees the last arrival before it sleeps.
    if (arrivals_.fetch_add(1) + 1 >= everyone) {
      if (sleepers_.load() > 0) syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
      return;
    }
    while (arrivals_.load(std::memory_order_acquire) < everyone && while_waiting()) {
    }
    for (int k = 0; k < spins; ++k) {
      if (arrivals_.load(std::memory_order_acquire) >= everyone) return;
      __builtin_ia32_pause();
    }
    sleepers_.fetch_add(1);
    // FUTEX_WAIT returns at once when the count is no longer `seen`, and may return early: look again.
    for (int32_t seen = arrivals_.load(); seen < everyone; seen = arrivals_.load()) {
      syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
    }
    sleepers_.fetch_sub(1);
  }

 private:
  std::atomic<int32_t> arrivals_{0}, sleepers_{0};
};

}  // namespace stx::models
