// The kernel self-check behind `stx check`, on a small awkward layer: it passes on a correct build, leaves the
// process's CPU path as it found it, and names the settings it refuses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stx/engine/error.h"
#include "stx/engine/kernel_check.h"
#include "stx/kernels/attention.h"

namespace {

using namespace stx::engine;

KernelCheckRequest small_fixed_request() {
  KernelCheckRequest request;
  request.layer.pattern = "fixed";
  request.layer.n = 67;
  request.layer.stride = 8;
  request.layer.summary = 3;
  request.layer.mode = "multihead";
  request.layer.heads = 3;
  request.layer.block = 16;
  request.batch = 2;
  request.head_dim = 5;
  request.seed = 11;
  return request;
}

std::vector<std::string> settings_refused(const KernelCheckRequest& request) {
  try {
    request.validate();
  } catch (const Error& e) {
    return e.settings();
  }
  return {};
}

TEST(KernelCheck, PassesAndLeavesTheCpuPathAsItWas) {
  namespace kernels = stx::kernels;
  // A program (or a test) that chose the portable path keeps it after the check forced the others.
  kernels::force_cpu_isa(kernels::CpuIsa::portable);
  const KernelCheckReport report = run_kernel_check(small_fixed_request());
  EXPECT_EQ(kernels::active_cpu_isa(), kernels::CpuIsa::portable);
  kernels::force_cpu_isa(kernels::best_cpu_isa());

  EXPECT_TRUE(report.passed());
  EXPECT_TRUE(report.decode_vs_forward.finite);
  EXPECT_LT(report.decode_vs_forward.nmse, 1e-9);  // two fp32 paths of one maths
  EXPECT_EQ(report.portable_vs_vectorised.has_value(), kernels::best_cpu_isa() != kernels::CpuIsa::portable);
  EXPECT_EQ(report.machine.cpu_path, kernels::to_string(kernels::best_cpu_isa()));
  EXPECT_GE(report.machine.threads, 1);
  EXPECT_GT(report.sparse_seconds, 0.0);
  EXPECT_GT(report.dense_seconds, 0.0);
}

TEST(KernelCheck, RefusedSettingsAreNamed) {
  KernelCheckRequest request = small_fixed_request();
  request.head_dim = 0;
  EXPECT_EQ(settings_refused(request), (std::vector<std::string>{"head_dim"}));
  request = small_fixed_request();
  request.layer.n = KernelCheckRequest::kMaxLength + 1;
  EXPECT_EQ(settings_refused(request), (std::vector<std::string>{"n"}));
  request = small_fixed_request();
  request.layer.summary = 9;  // c > l
  EXPECT_EQ(settings_refused(request), (std::vector<std::string>{"summary"}));
  // Each within its range, too large together.
  request = small_fixed_request();
  request.layer.n = KernelCheckRequest::kMaxLength;
  request.layer.heads = 64;
  request.batch = KernelCheckRequest::kMaxBatch;
  EXPECT_EQ(settings_refused(request), (std::vector<std::string>{"batch", "heads", "n", "head_dim"}));
}

}  // namespace
