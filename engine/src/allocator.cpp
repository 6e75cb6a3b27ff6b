#include "stx/engine/allocator.h"

#include <malloc.h>

#include <climits>

namespace stx::engine {

void reuse_freed_memory() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

}  // namespace stx::engine
