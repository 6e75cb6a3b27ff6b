#include "stx/engine/threads.h"

#include <ATen/Parallel.h>
#include <omp.h>
#include <sched.h>

#include <thread>

namespace stx::engine {

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 ? static_cast<int>(cores) : 1;
}

void use_all_cores() {
  const int cores = usable_cores();
  if (at::get_num_threads() != cores) at::set_num_threads(cores);
  omp_set_num_threads(cores);  // whatever LibTorch did: a thread that ran LibTorch before took its count
}

}  // namespace stx::engine
