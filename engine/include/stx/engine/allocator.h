// Training allocates and frees the same large activation buffers (tens of MB each) at every step.
// glibc serves blocks above 32 MB with fresh mmap()s and unmaps them on free, so every step page-faults
// its whole working set again: about 20% of a step at context 12,288 went to the kernel's page-fault path.
#pragma once

namespace stx::engine {

// With `reuse` on, this process keeps freed memory for reuse: no mmap() for large blocks and no trimming
// of the heap below 2 GB of free space. Steps get faster, and peak memory grows: about 15% at context
// 12,288, but 2.3 GB -> 5.8 GB for a recomputed model at 65,536, where the heap fragments. So train()
// turns it on only for models without recomputation (recompute means memory matters most), and off
// (glibc's defaults) otherwise. The training benchmark does the same.
void reuse_freed_memory(bool reuse);

}  // namespace stx::engine
