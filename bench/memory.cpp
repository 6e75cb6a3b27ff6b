#include "memory.h"

#include <malloc.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace stx::bench {
namespace {

// Reads one "Key:   1234 kB" line of /proc/self/status.
int64_t status_kib(const char* key) {
  std::ifstream status("/proc/self/status");
  const std::string prefix = std::string(key) + ":";
  std::string line;
  while (std::getline(status, line)) {
    if (line.compare(0, prefix.size(), prefix) == 0)
      return std::strtoll(line.c_str() + prefix.size(), nullptr, 10);
  }
  return -1;
}

int64_t kib_to_bytes(int64_t kib) { return kib < 0 ? -1 : kib * 1024; }

}  // namespace

int64_t current_rss_bytes() { return kib_to_bytes(status_kib("VmRSS")); }

int64_t peak_rss_bytes() { return kib_to_bytes(status_kib("VmHWM")); }

bool reset_peak_rss() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  if (!clear_refs) return false;
  clear_refs << "5";
  clear_refs.flush();
  if (!clear_refs) return false;
  // The kernel accepts the write but an old kernel ignores "5": check that the peak came down.
  const int64_t peak = status_kib("VmHWM");
  const int64_t now = status_kib("VmRSS");
  return peak >= 0 && now >= 0 && peak <= now + 1024;  // within 1 MiB: pages touched since the write
}

void release_free_memory() { malloc_trim(0); }

}  // namespace stx::bench
