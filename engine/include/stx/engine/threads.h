// Every job uses every core the process may run on.
//
// Debian's LibTorch starts with one thread, and a new thread that touches LibTorch takes LibTorch's count
// into OpenMP's, which is per thread: so a job run on a worker thread (the studio's engine thread) ran
// LibTorch and our OpenMP kernels on one core until this was called on that thread.
#pragma once

namespace stx::engine {

// The cores this process may run on (its CPU affinity, which containers and `taskset` narrow), at least 1.
int usable_cores();

// Sets LibTorch's and the calling thread's OpenMP thread counts to usable_cores(). Call it on the thread
// that runs the job.
void use_all_cores();

}  // namespace stx::engine
