// The reshape route (dense fused calls on reshaped views, merged by log-sum-exp) against our op: the same
// attention, forward and, on the exact math route, gradients; awkward lengths that pad the last row.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "stx/kernels/layout.h"
#include "stx/kernels/pattern.h"
#include "stx/models/reshape_attention.h"
#include "stx/models/sparse_attention.h"

namespace {

using stx::kernels::HeadPattern;
using stx::kernels::Subset;

struct RouteCase {
  const char* name;
  HeadPattern pattern;
  int64_t n;
};

void PrintTo(const RouteCase& c, std::ostream* os) { *os << c.name; }

class ReshapeRoute : public ::testing::TestWithParam<RouteCase> {};

TEST_P(ReshapeRoute, EqualsTheSparseKernelAndItsGradients) {
  const RouteCase tc = GetParam();
  at::manual_seed(11);
  const int64_t batch = 2, heads = 3, dim = 16;
  const std::vector<HeadPattern> patterns(heads, tc.pattern);
  const auto layout = stx::kernels::cached_layout(tc.n, 16, patterns);
  const at::Tensor qkv = at::randn({batch, tc.n, 3, heads, dim});
  const auto leaves = [&] {
    const at::Tensor leaf = qkv.clone().requires_grad_(true);
    return std::make_pair(leaf, std::vector<at::Tensor>{leaf.select(2, 0).transpose(1, 2),
                                                        leaf.select(2, 1).transpose(1, 2),
                                                        leaf.select(2, 2).transpose(1, 2)});
  };
  const auto [ours_leaf, ours] = leaves();
  const auto [route_leaf, route] = leaves();
  const at::Tensor expected = stx::sparse_attention(ours[0], ours[1], ours[2], layout);
  const at::Tensor got = stx::reshape_route_attention(route[0], route[1], route[2], tc.pattern);
  ASSERT_EQ(got.sizes(), expected.sizes());
  EXPECT_TRUE(at::allclose(got, expected, 1e-5, 1e-5))
      << "max |diff| " << (got - expected).abs().max().item<double>();

  if (stx::reshape_route_kernel(route[0]) != "math") {
    GTEST_SKIP() << "forward checked; the " << stx::reshape_route_kernel(route[0])
                 << " route's backward holds the merge weights fixed (reshape_attention.h), so its gradients "
                    "are not compared";
  }
  const at::Tensor weights = at::randn(expected.sizes());
  (expected * weights).sum().backward();
  (got * weights).sum().backward();
  EXPECT_TRUE(at::allclose(route_leaf.grad(), ours_leaf.grad(), 1e-4, 1e-4))
      << "max |diff| " << (route_leaf.grad() - ours_leaf.grad()).abs().max().item<double>();
}

INSTANTIATE_TEST_SUITE_P(
    Patterns, ReshapeRoute,
    ::testing::Values(RouteCase{"strided_padded", HeadPattern::strided(9), 113},
                      RouteCase{"strided_whole_rows", HeadPattern::strided(16), 64},
                      RouteCase{"strided_two_rows", HeadPattern::strided(8), 12},
                      RouteCase{"strided_shorter_than_l", HeadPattern::strided(16), 7},
                      RouteCase{"fixed_padded", HeadPattern::fixed(10, 3), 113},
                      RouteCase{"fixed_offset", HeadPattern::fixed(12, 3, Subset::both, 2), 77},
                      RouteCase{"fixed_whole_block_summary", HeadPattern::fixed(8, 8), 40},
                      RouteCase{"dense", HeadPattern::dense_causal(), 50}),
    [](const ::testing::TestParamInfo<RouteCase>& info) { return std::string(info.param.name); });

TEST(ReshapeRouteErrors, RefusesSubsetsItHasNoRouteForAndMismatchedShapes) {
  const at::Tensor q = at::randn({1, 2, 32, 8});
  EXPECT_THROW(stx::reshape_route_attention(q, q, q, HeadPattern::strided(8, Subset::a1)), std::invalid_argument);
  EXPECT_THROW(stx::reshape_route_attention(q, q, at::randn({1, 2, 31, 8}), HeadPattern::strided(8)),
               std::invalid_argument);
  EXPECT_THROW(stx::reshape_route_attention(q, q, q, HeadPattern::fixed(8, 9)), std::exception);  // c > l
}

}  // namespace
