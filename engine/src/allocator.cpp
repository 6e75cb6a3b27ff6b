#include "stx/engine/allocator.h"

#include <malloc.h>

#include <climits>

namespace stx::engine {

void reuse_freed_memory(bool reuse) {
  if (reuse) {
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
  } else {
    // glibc's documented defaults.
    mallopt(M_MMAP_MAX, 65536);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
  }
}

}  // namespace stx::engine
