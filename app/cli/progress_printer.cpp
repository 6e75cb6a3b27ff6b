#include "progress_printer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>

namespace stx::cli {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  } else if (s >= 60) {
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%lds", s);
  }
  return text;
}

namespace {

// "=====>      ": 24 columns filled in proportion to fraction.
std::string progress_bar(double fraction) {
  constexpr int kWidth = 24;
  const int filled = std::clamp(static_cast<int>(fraction * kWidth), 0, kWidth);
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  return bar;
}

}  // namespace

ProgressPrinter::ProgressPrinter(bool quiet) : tty_(isatty(STDERR_FILENO) != 0), quiet_(quiet) {}

void ProgressPrinter::end_bar() {
  if (bar_open_) std::fputc('\n', stderr);
  bar_open_ = false;
}

void ProgressPrinter::draw(const stx::engine::TrainProgress& p) {
  const double fraction = p.total_steps > 0 ? static_cast<double>(p.step) / static_cast<double>(p.total_steps) : 0;
  char validation[32] = "";
  if (last_validation_ >= 0) std::snprintf(validation, sizeof validation, " val %.3f", last_validation_);
  char line[256];
  if (tty_) {
    const std::string bar = progress_bar(fraction);
    std::snprintf(line, sizeof line, "\rstep %lld/%lld [%s] %3.0f%% loss %.3f bpb%s  %.0f tok/s  ETA %s   ",
                  static_cast<long long>(p.step), static_cast<long long>(p.total_steps), bar.c_str(),
                  100.0 * fraction, p.loss_bits_per_byte, validation, p.tokens_per_second,
                  format_duration(p.eta_seconds).c_str());
    std::fputs(line, stderr);
    bar_open_ = true;
  } else {
    const auto now = std::chrono::steady_clock::now();
    if (p.step != p.total_steps && now - last_line_ < std::chrono::seconds(5) && p.step != 1) return;
    last_line_ = now;
    std::snprintf(line, sizeof line, "step %lld/%lld (%.0f%%) loss %.3f bpb%s, %.0f tok/s, ETA %s\n",
                  static_cast<long long>(p.step), static_cast<long long>(p.total_steps), 100.0 * fraction,
                  p.loss_bits_per_byte, validation, p.tokens_per_second, format_duration(p.eta_seconds).c_str());
    std::fputs(line, stderr);
  }
  std::fflush(stderr);
}

void ProgressPrinter::draw(const stx::engine::SampleProgress& p) {
  const double fraction = p.length > 0 ? static_cast<double>(p.position) / static_cast<double>(p.length) : 0;
  const char* what = p.position < prompt_bytes_ ? "prompt" : "byte";  // reading a prompt shows progress too
  char line[256];
  if (tty_) {
    const std::string bar = progress_bar(fraction);
    std::snprintf(line, sizeof line, "\r%s %lld/%lld [%s] %3.0f%%  %.0f tok/s  ETA %s   ", what,
                  static_cast<long long>(p.position), static_cast<long long>(p.length), bar.c_str(),
                  100.0 * fraction, p.tokens_per_second, format_duration(p.eta_seconds).c_str());
    std::fputs(line, stderr);
    bar_open_ = true;
  } else {
    const auto now = std::chrono::steady_clock::now();
    if (p.position != p.length && now - last_line_ < std::chrono::seconds(5)) return;
    last_line_ = now;
    std::snprintf(line, sizeof line, "%s %lld/%lld (%.0f%%), %.0f tok/s, ETA %s\n", what,
                  static_cast<long long>(p.position), static_cast<long long>(p.length), 100.0 * fraction,
                  p.tokens_per_second, format_duration(p.eta_seconds).c_str());
    std::fputs(line, stderr);
  }
  std::fflush(stderr);
}

void ProgressPrinter::operator()(const stx::engine::Event& event) {
  using namespace stx::engine;
  std::visit(
      [this](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, TrainProgress>) {
          if (!quiet_) draw(e);
        } else if constexpr (std::is_same_v<T, ValidationDone>) {
          last_validation_ = e.bits_per_byte;
          if (!quiet_) {
            end_bar();
            std::fprintf(stderr, "step %lld: validation %.4f bits/byte%s\n", static_cast<long long>(e.step),
                         e.bits_per_byte, e.is_best ? " (best)" : "");
          }
        } else if constexpr (std::is_same_v<T, CheckpointSaved>) {
          if (!quiet_) {
            end_bar();
            std::fprintf(stderr, "saved %s\n", e.folder.string().c_str());
          }
        } else if constexpr (std::is_same_v<T, LogLine>) {
          if (quiet_ && e.level == LogLine::Level::info) return;
          end_bar();
          const char* prefix = e.level == LogLine::Level::error ? "error: "
                               : e.level == LogLine::Level::warning ? "warning: " : "";
          std::fprintf(stderr, "%s%s\n", prefix, e.text.c_str());
        } else if constexpr (std::is_same_v<T, JobEnded>) {
          end_bar();
        } else if constexpr (std::is_same_v<T, SampleStarted>) {
          prompt_bytes_ = e.prompt_bytes;
          if (!quiet_) {
            std::fprintf(stderr, "seed %llu: %lld sample%s of %lld bytes (%lld given)\n",
                         static_cast<unsigned long long>(e.seed), static_cast<long long>(e.count),
                         e.count == 1 ? "" : "s", static_cast<long long>(e.length),
                         static_cast<long long>(e.prompt_bytes));
            if (!e.device_reason.empty()) {
              std::fprintf(stderr, "device: %s (%s)\n", e.device.c_str(), e.device_reason.c_str());
            }
          }
        } else if constexpr (std::is_same_v<T, SampleProgress>) {
          if (!quiet_) draw(e);
        }
        std::fflush(stderr);
      },
      event);
}

}  // namespace stx::cli
