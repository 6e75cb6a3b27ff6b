// A job on a worker thread (the studio's engine thread) gets every core, for LibTorch and for our OpenMP
// kernels alike: Debian's LibTorch starts with one thread and hands that count to each thread that uses it.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <sched.h>

#include <thread>

#include "stx/engine/threads.h"

namespace {

TEST(Threads, UsableCoresFollowTheAffinity) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(stx::engine::usable_cores(), CPU_COUNT(&set));
  EXPECT_GE(stx::engine::usable_cores(), 1);
}

TEST(Threads, AWorkerThreadThatRanLibTorchGetsEveryCore) {
  const int cores = stx::engine::usable_cores();
  int omp_threads = 0, torch_threads = 0, team = 0;
  std::thread worker([&] {
    at::set_num_threads(1);  // LibTorch's count as Debian's build starts it
    (void)at::randn({64, 64}).matmul(at::randn({64, 64})).sum().item<float>();
    stx::engine::use_all_cores();
    omp_threads = omp_get_max_threads();
    torch_threads = at::get_num_threads();
#pragma omp parallel
    {
#pragma omp single
      team = omp_get_num_threads();
    }
  });
  worker.join();
  EXPECT_EQ(omp_threads, cores);
  EXPECT_EQ(torch_threads, cores);
  EXPECT_EQ(team, cores) << "a parallel region on the worker thread runs on every core";
}

}  // namespace
