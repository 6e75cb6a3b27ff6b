#include "stx/engine/threads.h"

#include <ATen/Parallel.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace stx::engine {
namespace {

std::atomic<int> thread_limit{0};

// STX_THREADS when it is a whole number in range, else 0.
int threads_from_environment() {
  const char* text = std::getenv("STX_THREADS");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return *end == '\0' && value >= 1 && value <= kMaxThreads ? static_cast<int>(value) : 0;
}

}  // namespace

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 ? static_cast<int>(cores) : 1;
}

void set_thread_limit_of_started_programs(int threads) {
  setenv("STX_THREADS", std::to_string(std::clamp(threads, 1, kMaxThreads)).c_str(), 1);
}

void set_thread_limit(int threads) {
  if (threads < 0 || threads > kMaxThreads) {
    throw std::invalid_argument("threads must be from 0 (every core) to " + std::to_string(kMaxThreads) +
                                ", not " + std::to_string(threads));
  }
  thread_limit.store(threads, std::memory_order_relaxed);
}

int job_threads() {
  if (const int chosen = thread_limit.load(std::memory_order_relaxed); chosen > 0) return chosen;
  if (const int from_environment = threads_from_environment(); from_environment > 0) return from_environment;
  return usable_cores();
}

void use_job_threads() {
  const int threads = job_threads();
  if (at::get_num_threads() != threads) at::set_num_threads(threads);
  omp_set_num_threads(threads);  // whatever LibTorch did: a thread that ran LibTorch before took its count
}

}  // namespace stx::engine
