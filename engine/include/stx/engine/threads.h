// How many threads a job runs on: every core the process may use, unless the user chose fewer (`stx
// --threads`, the studio's Preferences, or STX_THREADS in the environment).
//
// Debian's LibTorch starts with one thread, and a new thread that touches LibTorch takes LibTorch's count
// into OpenMP's, which is per thread: so a job run on a worker thread (the studio's engine thread) ran
// LibTorch and our OpenMP kernels on one core until use_job_threads() was called on that thread.
#pragma once

namespace stx::engine {

// The cores this process may run on (its CPU affinity, which containers and `taskset` narrow), at least 1.
int usable_cores();

// The user's thread count for jobs from now on; 0 returns to the default. Any thread may call it; a job
// takes it when it calls use_job_threads(). std::invalid_argument below 0 or above kMaxThreads.
void set_thread_limit(int threads);
constexpr int kMaxThreads = 1024;

// The threads a job runs on: set_thread_limit's count, else STX_THREADS (a whole number from 1 to
// kMaxThreads; anything else is ignored), else usable_cores().
int job_threads();

// Makes job_threads() `threads` in the programs this process starts from now on (through STX_THREADS in the
// environment they inherit): a launcher shares the cores out between the processes of one run.
void set_thread_limit_of_started_programs(int threads);

// Sets LibTorch's and the calling thread's OpenMP thread counts to job_threads(). Call it on the thread
// that runs the job, before it starts. Parallel code may still use fewer (the decoder does on a busy
// machine), never more.
void use_job_threads();

}  // namespace stx::engine
