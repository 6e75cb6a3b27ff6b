#include "report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>
#include <string>

namespace stx::bench {
namespace {

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// Milliseconds with three significant-ish digits: 0.123, 12.3, 1234.
std::string ms(double value) { return fixed(value, value < 10 ? 3 : value < 1000 ? 1 : 0); }

std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

[[noreturn]] void fail(const std::string& path, const std::string& reason) {
  throw std::runtime_error("cannot write " + path + ": " + reason);
}

nlohmann::ordered_json optional_number(const std::optional<double>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

}  // namespace

std::optional<double> Record::ratio() const {
  if (!dense_ms || sparse_ms <= 0.0) return std::nullopt;
  return *dense_ms / sparse_ms;
}

std::optional<double> Record::vs_reshape() const {
  if (!reshape_ms || sparse_ms <= 0.0) return std::nullopt;
  return *reshape_ms / sparse_ms;
}

void print_table_header(std::ostream& os) {
  char line[256];
  std::snprintf(line, sizeof line, "%7s  %-8s  %-6s  %5s  %10s  %-24s  %7s  %8s  %8s  %8s  %-24s  %10s", "n",
                "pattern", "pass", "block", "sparse_ms", "dense_ms", "ratio", "gflops", "roofline", "peak_mb",
                "reshape_ms", "vs_reshape");
  os << line << "\n";
}

void print_table_row(std::ostream& os, const Record& r) {
  const std::string dense = r.dense_ms ? ms(*r.dense_ms) : r.dense_skipped;
  const std::optional<double> ratio = r.ratio(), vs_reshape = r.vs_reshape();
  const std::string reshape = r.reshape_ms ? ms(*r.reshape_ms) : r.reshape_skipped;
  char line[512];
  std::snprintf(line, sizeof line, "%7lld  %-8s  %-6s  %5d  %10s  %-24s  %7s  %8.1f  %7.1f%%  %8.0f  %-24s  %10s",
                static_cast<long long>(r.n), r.pattern.c_str(), r.pass.c_str(), r.block,
                ms(r.sparse_ms).c_str(), dense.c_str(), ratio ? (fixed(*ratio, 1) + "x").c_str() : "-",
                r.gflops, 100.0 * r.roofline_fraction, r.peak_mb, reshape.c_str(),
                vs_reshape ? (fixed(*vs_reshape, 1) + "x").c_str() : "-");
  os << line << std::endl;  // flushed: a sweep takes minutes
}

void check_json_path(const std::string& path) {
  if (path.empty()) fail(path, "empty file name");
  const std::string folder = folder_of(path);
  if (::access(folder.c_str(), W_OK) != 0) fail(path, "folder " + folder + ": " + std::strerror(errno));
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0 && S_ISDIR(existing.st_mode)) fail(path, "it is a folder");
}

void write_json(const std::string& path, const RunInfo& info, const std::vector<Record>& records) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const Record& r : records) {
    rows.push_back({
        {"n", r.n},
        {"pattern", r.pattern},
        {"pattern_desc", r.pattern_desc},
        {"pass", r.pass},
        {"block", r.block},
        {"batch", r.batch},
        {"heads", r.heads},
        {"head_dim", r.head_dim},
        {"attended_pairs", r.attended_pairs},
        {"flops", r.flops},
        {"sparse_ms", r.sparse_ms},
        {"sparse_repeats", r.sparse_repeats},
        {"dense_ms", optional_number(r.dense_ms)},
        {"dense_repeats",
         r.dense_ms ? nlohmann::ordered_json(r.dense_repeats) : nlohmann::ordered_json(nullptr)},
        {"dense_skipped",
         r.dense_ms ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.dense_skipped)},
        {"dense_backward",
         r.pass == "fwdbwd" ? nlohmann::ordered_json(info.dense_backward) : nlohmann::ordered_json(nullptr)},
        {"ratio", optional_number(r.ratio())},
        {"gflops", r.gflops},
        {"roofline_fraction", r.roofline_fraction},
        {"peak_mb", r.peak_mb},
        {"rss_before_mb", r.rss_before_mb},
        {"dense_peak_mb", optional_number(r.dense_peak_mb)},
        {"dense_rss_before_mb", optional_number(r.dense_rss_before_mb)},
        {"reshape_ms", optional_number(r.reshape_ms)},
        {"reshape_skipped", r.reshape_ms ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.reshape_skipped)},
        {"reshape_kernel", r.reshape_kernel},
        {"vs_reshape", optional_number(r.vs_reshape())},
        {"sgemm_gflops", info.sgemm_gflops},
        {"cpu_path", info.cpu_path},
        {"torch_threads", info.torch_threads},
        {"openmp_threads", info.openmp_threads},
    });
  }
  write_text_atomically(path, rows.dump(2) + "\n");
}

void write_text_atomically(const std::string& path, const std::string& text) {
  // mkstemp in the target's folder, so that rename() replaces the file in one step.
  const std::string folder = folder_of(path);
  std::string temp = folder + "/.stx-bench-XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) fail(path, "cannot create a temporary file in " + folder + ": " + std::strerror(errno));
  auto give_up = [&](const std::string& step) {
    const std::string reason = step + ": " + std::strerror(errno);
    ::close(fd);
    ::unlink(temp.c_str());
    fail(path, reason);
  };
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      give_up("write");
    }
    written += static_cast<size_t>(n);
  }
  const mode_t umask_now = ::umask(0);
  ::umask(umask_now);
  if (::fchmod(fd, 0666 & ~umask_now) != 0) give_up("chmod");  // mkstemp creates 0600; match a plain open()
  if (::fsync(fd) != 0) give_up("fsync");
  if (::close(fd) != 0) {
    const std::string reason = std::string("close: ") + std::strerror(errno);
    ::unlink(temp.c_str());
    fail(path, reason);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::string("rename: ") + std::strerror(errno);
    ::unlink(temp.c_str());
    fail(path, reason);
  }
  // Make the rename itself durable; a failure here leaves a complete file, so it is not an error.
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace stx::bench
