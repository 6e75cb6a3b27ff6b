// A job's thread count (stx/engine/threads.h): every core by default, on a worker thread too (the studio's
// engine thread: Debian's LibTorch starts with one thread and hands that count to each thread that uses
// it), or what the user chose with --threads, the studio's Preferences or STX_THREADS.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <sched.h>

#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "stx/engine/threads.h"

namespace {

// What a job on a new worker thread that had run LibTorch gets: OpenMP's count, LibTorch's, and the size
// of a parallel region's team.
struct Counts {
  int omp = 0, torch = 0, team = 0;
};

Counts job_on_worker_thread() {
  Counts c;
  std::thread worker([&] {
    at::set_num_threads(1);  // LibTorch's count as Debian's build starts it
    (void)at::randn({64, 64}).matmul(at::randn({64, 64})).sum().item<float>();
    stx::engine::use_job_threads();
    c.omp = omp_get_max_threads();
    c.torch = at::get_num_threads();
#pragma omp parallel
    {
#pragma omp single
      c.team = omp_get_num_threads();
    }
  });
  worker.join();
  return c;
}

TEST(Threads, UsableCoresFollowTheAffinity) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(stx::engine::usable_cores(), CPU_COUNT(&set));
  EXPECT_GE(stx::engine::usable_cores(), 1);
}

TEST(Threads, AWorkerThreadThatRanLibTorchGetsEveryCore) {
  unsetenv("STX_THREADS");
  stx::engine::set_thread_limit(0);
  const int cores = stx::engine::usable_cores();
  const Counts c = job_on_worker_thread();
  EXPECT_EQ(c.omp, cores);
  EXPECT_EQ(c.torch, cores);
  EXPECT_EQ(c.team, cores) << "a parallel region on the worker thread runs on every core";
}

TEST(Threads, TheUsersCountIsWhatEveryParallelRegionGets) {
  unsetenv("STX_THREADS");
  for (const int chosen : {1, 3}) {
    stx::engine::set_thread_limit(chosen);
    EXPECT_EQ(stx::engine::job_threads(), chosen);
    const Counts c = job_on_worker_thread();
    EXPECT_EQ(c.omp, chosen);
    EXPECT_EQ(c.torch, chosen);
    EXPECT_EQ(c.team, chosen);
  }
  stx::engine::set_thread_limit(0);
  EXPECT_EQ(stx::engine::job_threads(), stx::engine::usable_cores());
}

TEST(Threads, TheEnvironmentCountsUnlessTheUserChose) {
  stx::engine::set_thread_limit(0);
  setenv("STX_THREADS", "5", 1);
  EXPECT_EQ(stx::engine::job_threads(), 5);
  stx::engine::set_thread_limit(2);
  EXPECT_EQ(stx::engine::job_threads(), 2) << "--threads or the Preferences win over the environment";
  stx::engine::set_thread_limit(0);
  for (const char* nonsense : {"", "0", "-2", "3x", "99999"}) {
    setenv("STX_THREADS", nonsense, 1);
    EXPECT_EQ(stx::engine::job_threads(), stx::engine::usable_cores()) << "STX_THREADS=" << nonsense;
  }
  unsetenv("STX_THREADS");
}

TEST(Threads, ALimitOutOfRangeIsRefused) {
  EXPECT_THROW(stx::engine::set_thread_limit(-1), std::invalid_argument);
  EXPECT_THROW(stx::engine::set_thread_limit(stx::engine::kMaxThreads + 1), std::invalid_argument);
}

}  // namespace
