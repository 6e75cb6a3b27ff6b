// Resident-set measurements of this process, read from /proc (Linux).
//
// Usage, per measured row:
//   stx::bench::release_free_memory();
//   bool scoped = stx::bench::reset_peak_rss();   // VmHWM := VmRSS
//   ... run ...
//   int64_t peak = stx::bench::peak_rss_bytes();  // the largest resident set since the reset
#pragma once

#include <cstdint>

namespace stx::bench {

// VmRSS: the resident set now, in bytes; -1 when /proc/self/status cannot be read.
int64_t current_rss_bytes();

// VmHWM: the largest resident set since the process started or since the last reset_peak_rss().
int64_t peak_rss_bytes();

// Resets VmHWM to the current resident set by writing "5" to /proc/self/clear_refs (Linux >= 4.0).
// Returns false when the kernel refuses it; then peak_rss_bytes() is the peak since the start.
bool reset_peak_rss();

// Gives freed heap memory back to the system (glibc malloc_trim), so that what an earlier row freed
// is not counted as resident in the next one.
void release_free_memory();

inline double to_mb(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace stx::bench
