#include "stx/kernels/openmp_spin_policy.h"

#include <unistd.h>

#include <cstdlib>

namespace stx::kernels {

void restart_with_short_openmp_spins(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (argv == nullptr || argv[0] == nullptr) return;
  if (setenv("GOMP_SPINCOUNT", "3000", /*overwrite=*/1) != 0) return;
  // /proc/self/exe is this very file even when it was replaced on disk since the start.
  execv("/proc/self/exe", argv);
  unsetenv("GOMP_SPINCOUNT");  // not restarted: say so to child processes too, which would start with the defaults
}

}  // namespace stx::kernels
