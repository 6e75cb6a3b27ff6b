#include "check_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <string>

#include "option_checks.h"
#include "stx/engine/kernel_check.h"

namespace stx::cli {
namespace {

std::string format(const char* spec, double value) {
  char text[64];
  std::snprintf(text, sizeof text, spec, value);
  return text;
}

std::string speed_text(double sparse_seconds, double dense_seconds) {
  if (sparse_seconds <= dense_seconds) return format("%.2fx faster", dense_seconds / sparse_seconds);
  return format("%.2fx slower", sparse_seconds / dense_seconds);
}

void print_comparison(const std::string& what, const engine::KernelComparison& c) {
  std::cout << "  " << what << ": max abs err " << format("%.3g", c.max_abs) << ", nmse "
            << format("%.3g", c.nmse) << ", lse max abs err " << format("%.3g", c.lse_max_abs)
            << (c.finite ? "" : ", NON-FINITE values") << (c.passed ? "  ok" : "  FAIL") << "\n";
}

}  // namespace

CLI::App* add_check_command(CLI::App& app, CheckOptions& options) {
  CLI::App* command = app.add_subcommand(
      "check", "Check the CPU kernels on random inputs: forward vs decode, portable vs vectorised path");
  using Request = engine::KernelCheckRequest;
  command->add_option("--n", options.n, "sequence length, 1.." + std::to_string(Request::kMaxLength))
      ->capture_default_str();
  command->add_option("--batch", options.batch, "batch size, 1.." + std::to_string(Request::kMaxBatch))
      ->capture_default_str();
  command->add_option("--dim", options.dim, "head dimension, 1.." + std::to_string(Request::kMaxHeadDim))
      ->capture_default_str();
  command->add_option("--seed", options.seed, "seed of the random q, k, v")->capture_default_str();
  options.pattern.add_to(*command, 64);  // l near sqrt(n) for the default n
  command->footer("Exit status: 0 PASS, 1 FAIL, 2 bad option. The CPU kernels run on all cores.");
  return command;
}

int run_check_command(const CheckOptions& options) {
  using Request = engine::KernelCheckRequest;
  require_between("--n", options.n, 1, Request::kMaxLength);
  require_between("--batch", options.batch, 1, Request::kMaxBatch);
  require_between("--dim", options.dim, 1, Request::kMaxHeadDim);
  options.pattern.validate();
  const int64_t elements = options.batch * options.pattern.heads * options.n * options.dim;
  if (elements > Request::kMaxElements)
    throw UsageError("--batch x --heads x --n x --dim must be at most " +
                     std::to_string(Request::kMaxElements) + ", got " + std::to_string(elements));

  Request request;
  request.layer = options.pattern.layer_spec(options.n);
  request.batch = options.batch;
  request.head_dim = options.dim;
  request.seed = options.seed;
  // Printed before the check's seconds of work, so that a slow machine shows what it is doing.
  const engine::KernelMachine machine = engine::kernel_machine();
  std::cout << "stx check: " << request.layer.describe() << "; batch " << options.batch << ", "
            << options.pattern.heads << " heads, n = " << options.n << ", head_dim " << options.dim
            << ", block " << options.pattern.block << ", seed " << options.seed << "\n";
  std::cout << "CPU path: " << machine.cpu_path << ", " << machine.threads
            << " OpenMP threads; CUDA kernels: "
            << (machine.cuda_built ? (machine.cuda_device ? "built, device present" : "built, no device")
                                   : "not built")
            << " (the check runs on the CPU)\n";

  const engine::KernelCheckReport report = engine::run_kernel_check(request);
  print_comparison("decode at all " + std::to_string(options.n) + " positions vs forward",
                   report.decode_vs_forward);
  if (report.portable_vs_vectorised)
    print_comparison("portable vs " + machine.cpu_path + " forward", *report.portable_vs_vectorised);
  else
    std::cout << "  portable vs vectorised forward: skipped, this processor has only the portable path\n";

  const std::string& pattern_name = options.pattern.pattern;
  std::cout << "forward time (" << machine.cpu_path << "): " << pattern_name << " "
            << format("%.3f", report.sparse_seconds * 1e3) << " ms, dense "
            << format("%.3f", report.dense_seconds * 1e3) << " ms; " << pattern_name
            << " / dense = " << format("%.3f", report.sparse_seconds / report.dense_seconds) << " ("
            << speed_text(report.sparse_seconds, report.dense_seconds) << ")\n";
  std::cout << (report.passed() ? "PASS" : "FAIL") << "\n";
  return report.passed() ? 0 : 1;
}

}  // namespace stx::cli
