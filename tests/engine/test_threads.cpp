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

#include "stx/engine/distributed_settings.h"
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

// What a launcher hands the processes it starts (the CLI's --nproc): their share of the cores and their place in
// the run, read back as each of them reads them.
TEST(Threads, StartedProgramsInheritTheirThreadsAndTheirPlaceInTheRun) {
  stx::engine::set_thread_limit(0);
  stx::engine::set_thread_limit_of_started_programs(3);
  EXPECT_EQ(stx::engine::job_threads(), 3);  // what the started program's job_threads() gives
  unsetenv("STX_THREADS");

  EXPECT_FALSE(stx::engine::DistributedSettings::started_as_worker());
  stx::engine::DistributedSettings worker;
  worker.rank = 1;
  worker.world_size = 2;
  worker.master_port = 41234;
  worker.to_environment();
  EXPECT_TRUE(stx::engine::DistributedSettings::started_as_worker());
  const stx::engine::DistributedSettings read = stx::engine::DistributedSettings::from_environment();
  EXPECT_EQ(read.rank, 1);
  EXPECT_EQ(read.world_size, 2);
  EXPECT_EQ(read.master_addr, "127.0.0.1");
  EXPECT_EQ(read.master_port, 41234);
  for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) unsetenv(name);
}

TEST(Threads, ALimitOutOfRangeIsRefused) {
  EXPECT_THROW(stx::engine::set_thread_limit(-1), std::invalid_argument);
  EXPECT_THROW(stx::engine::set_thread_limit(stx::engine::kMaxThreads + 1), std::invalid_argument);
}

}  // namespace
