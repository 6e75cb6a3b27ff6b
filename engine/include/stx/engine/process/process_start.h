#pragma once
// What a program (stx, stx-studio, stx-bench) sets up for its process before anything else: how long an
// idle OpenMP thread spins before it sleeps, and which OpenBLAS kernels LibTorch's products run. The run-time
// pieces of the same kind inside a job are the decoder's step barrier (models/src/step_barrier.h) and the
// job's thread count (stx/engine/threads.h).
//
// How long an idle OpenMP thread spins before it sleeps.
//
// A decode step is dozens of tiny parallel regions. libgomp's default lets a waiting thread spin for about
// 300,000 iterations, which is right on an idle machine. When other work holds the cores (a training beside
// the sampler, in the studio or in another process), a spinning thread burns the time slice its partner
// needs to reach the barrier, and each region can cost a scheduler tick. On 2 cores beside two trainings,
// image decoding (one sample) swung between about 600 and 6 tokens/s with the default; with
// GOMP_SPINCOUNT=3000 it stayed between about 300 and 1,000, and on an idle machine the rates are the same
// within noise (docs/benchmarks.md, "OpenMP spin-waiting").
//
// libgomp reads its environment once, in its own initialiser, before main(); a variable set later has no
// effect, and one set from the executable's .preinit_array is overwritten when libc initialises. So a
// program calls this first thing in main(): when the user chose neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT,
// it sets GOMP_SPINCOUNT=3000 and executes the same program again with the same arguments (once: the
// second start finds the variable). If that exec fails the program goes on with OpenMP's defaults.

//
// The same restart sets OPENBLAS_CORETYPE=SkylakeX when the user did not set it and the processor has
// AVX-512 (F, CD, BW, DQ, VL). LibTorch's matrix products go through OpenBLAS, which picks its kernels
// by processor model in its own initialiser, and Debian 12's OpenBLAS (0.3.21) does not know recent AMD
// processors: on a Zen 5 it chose its Haswell (AVX2) kernels, 211 against 347 GFLOP/s for a 2048^3
// sgemm, and a training step of the strided benchmark model at 12,288 took 1955 and 1801 ms against 1217
// and 1218 ms with SkylakeX, alternating (docs/benchmarks.md). For fp32 the SkylakeX kernels are what OpenBLAS runs on every AVX-512 processor
// it does know, so the choice is the same there. A build of OpenBLAS without run-time kernel selection
// ignores the variable.

namespace stx::engine {

// Call first thing in main(); returns only when nothing needed a restart or the restart failed.
void restart_with_short_openmp_spins(char** argv);

// The OpenBLAS kernel set the restart asks for on this processor: "SkylakeX" with AVX-512, else null
// (OpenBLAS's own choice stands). Exposed for tests.
const char* openblas_coretype_for_this_cpu();

}  // namespace stx::engine
