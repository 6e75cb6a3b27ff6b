#include "stx/engine/process/process_start.h"

#include <unistd.h>

#include <cstdlib>

namespace stx::engine {

const char* openblas_coretype_for_this_cpu() {
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl");
  return avx512 ? "SkylakeX" : nullptr;
}

void restart_with_short_openmp_spins(char** argv) {
  if (argv == nullptr || argv[0] == nullptr) return;
  bool set_spins = false, set_coretype = false;
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr) {
    set_spins = setenv("GOMP_SPINCOUNT", "3000", /*overwrite=*/1) == 0;
  }
  const char* coretype = openblas_coretype_for_this_cpu();
  if (coretype != nullptr && std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    set_coretype = setenv("OPENBLAS_CORETYPE", coretype, /*overwrite=*/1) == 0;
  }
  if (!set_spins && !set_coretype) return;  // the second start finds every variable set: no loop
  // /proc/self/exe is this very file even when it was replaced on disk since the start.
  execv("/proc/self/exe", argv);
  // Not restarted: take back what was set, so that child processes start with the defaults too, as this one.
  if (set_spins) unsetenv("GOMP_SPINCOUNT");
  if (set_coretype) unsetenv("OPENBLAS_CORETYPE");
}

}  // namespace stx::engine
