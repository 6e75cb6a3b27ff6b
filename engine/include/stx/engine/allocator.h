// Training allocates and frees the same large activation buffers (tens of MB each) at every step.
// glibc serves blocks above 32 MB with fresh mmap()s and unmaps them on free, so every step page-faults
// its whole working set again: about 20% of a step at context 12,288 went to the kernel's page-fault path.
#pragma once

namespace stx::engine {

// Makes this process keep freed memory for reuse: no mmap() for large blocks and no trimming of the
// heap below 2 GB of free space. Peak resident memory grows a little (about 15% at context 12,288),
// steps get faster. Called by train() and the training benchmark; harmless to call twice.
void reuse_freed_memory();

}  // namespace stx::engine
