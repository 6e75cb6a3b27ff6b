#pragma once
// How long an idle OpenMP thread spins before it sleeps, for the programs (stx, stx-studio).
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

namespace stx::kernels {

void restart_with_short_openmp_spins(char** argv);

}  // namespace stx::kernels
