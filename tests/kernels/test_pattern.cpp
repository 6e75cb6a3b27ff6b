// Element-level patterns: the paper's worked examples, causality, the two-hop reach criterion,
// the O(sqrt n) row size, and the per-head patterns of a layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "stx/kernels/error.h"
#include "stx/kernels/pattern.h"
#include "test_util.h"

namespace {

using namespace stx::kernels;
using stx::test::error_message;
using stx::test::mentions;

std::vector<int64_t> range_of(int64_t first, int64_t last) {
  std::vector<int64_t> out(static_cast<size_t>(last - first + 1));
  std::iota(out.begin(), out.end(), first);
  return out;
}

// {j <= i : member(i, j)} by testing every j: the definition, independent of the set builders.
template <typename Member>
std::vector<int64_t> brute_force(int64_t i, Member member) {
  std::vector<int64_t> out;
  for (int64_t j = 0; j <= i; ++j)
    if (member(j)) out.push_back(j);
  return out;
}

std::vector<int64_t> expand(const std::vector<KeyRange>& ranges) {
  std::vector<int64_t> out;
  for (const KeyRange& r : ranges)
    for (int64_t j = r.first; j <= r.last; ++j) out.push_back(j);
  return out;
}

std::vector<int64_t> expand(const std::vector<KeyRun>& runs) {
  std::vector<int64_t> out;
  for (const KeyRun& r : runs)
    for (int64_t t = 0; t < r.count; ++t) out.push_back(r.first + t * r.step);
  return out;
}

// attended_set, attended_ranges and attended_count describe exactly {j : attends(p, i, j)}.
void expect_consistent_row(const HeadPattern& p, int64_t i) {
  SCOPED_TRACE(describe(p) + " i=" + std::to_string(i));
  const std::vector<int64_t> truth = brute_force(i, [&](int64_t j) { return attends(p, i, j); });
  EXPECT_EQ(attended_set(p, i), truth);
  EXPECT_EQ(attended_count(p, i), static_cast<int64_t>(truth.size()));
  std::vector<KeyRange> ranges;
  attended_ranges(p, i, ranges);
  EXPECT_EQ(expand(ranges), truth);
  for (size_t r = 0; r < ranges.size(); ++r) {
    EXPECT_LE(ranges[r].first, ranges[r].last);
    if (r > 0) {
      EXPECT_LT(ranges[r - 1].last, ranges[r].first) << "ranges must be disjoint and ascending";
    }
  }
  std::vector<KeyRun> runs;
  attended_runs(p, i, runs);
  EXPECT_EQ(expand(runs), truth);
  for (size_t r = 0; r < runs.size(); ++r) {
    EXPECT_GE(runs[r].count, 1);
    EXPECT_GE(runs[r].step, 1);
    if (r > 0) {
      const KeyRun& before = runs[r - 1];
      EXPECT_LT(before.first + (before.count - 1) * before.step, runs[r].first) << "runs must be ascending";
    }
  }
}

std::vector<HeadPattern> all_single_patterns() {
  std::vector<HeadPattern> out = {HeadPattern::dense_causal()};
  for (int64_t l : {1, 5, 16, 37})
    for (Subset s : {Subset::a1, Subset::a2, Subset::both}) out.push_back(HeadPattern::strided(l, s));
  const int64_t fixed_lc[][2] = {{6, 2}, {37, 5}, {16, 16}, {1, 1}, {100, 12}};
  for (const auto& lc : fixed_lc)
    for (Subset s : {Subset::a1, Subset::a2, Subset::both})
      for (int64_t offset : {int64_t{0}, lc[0] - lc[1]})
        out.push_back(HeadPattern::fixed(lc[0], lc[1], s, offset));
  return out;
}

TEST(Pattern, StridedWorkedExample) {
  // given the paper-notes example l = 5, i = 28
  const HeadPattern p = HeadPattern::strided(5);
  const std::vector<int64_t> a1 = range_of(23, 28);
  const std::vector<int64_t> a2 = {3, 8, 13, 18, 23, 28};
  // then
  EXPECT_EQ(brute_force(28, [&](int64_t j) { return in_a1(p, 28, j); }), a1);
  EXPECT_EQ(brute_force(28, [&](int64_t j) { return in_a2(p, 28, j); }), a2);
  EXPECT_EQ(attended_set(HeadPattern::strided(5, Subset::a1), 28), a1);
  EXPECT_EQ(attended_set(HeadPattern::strided(5, Subset::a2), 28), a2);
  std::vector<int64_t> merged = {3, 8, 13, 18, 23, 24, 25, 26, 27, 28};
  EXPECT_EQ(attended_set(p, 28), merged);
  EXPECT_EQ(attended_count(p, 28), 10);
  EXPECT_EQ(attended_count(HeadPattern::strided(5, Subset::a1), 28), 6);
  EXPECT_EQ(attended_count(HeadPattern::strided(5, Subset::a2), 28), 6);
  std::vector<KeyRange> ranges;
  attended_ranges(p, 28, ranges);
  EXPECT_EQ(expand(ranges), merged);
  // The columns before the band are one run of step l, whatever their number: a decode step far into a
  // long context walks them without a range per key.
  std::vector<KeyRun> runs;
  attended_runs(p, 28, runs);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].first, 3);
  EXPECT_EQ(runs[0].count, 4);
  EXPECT_EQ(runs[0].step, 5);
  EXPECT_EQ(runs[1].first, 23);
  EXPECT_EQ(runs[1].count, 6);
  EXPECT_EQ(runs[1].step, 1);
}

TEST(Pattern, FixedWorkedExample) {
  // given the paper-notes example l = 6, c = 2, i = 28
  const HeadPattern p = HeadPattern::fixed(6, 2);
  const std::vector<int64_t> a1 = range_of(24, 28);
  const std::vector<int64_t> a2 = {4, 5, 10, 11, 16, 17, 22, 23, 28};
  // then
  EXPECT_EQ(brute_force(28, [&](int64_t j) { return in_a1(p, 28, j); }), a1);
  EXPECT_EQ(brute_force(28, [&](int64_t j) { return in_a2(p, 28, j); }), a2);
  EXPECT_EQ(attended_set(HeadPattern::fixed(6, 2, Subset::a1), 28), a1);
  EXPECT_EQ(attended_set(HeadPattern::fixed(6, 2, Subset::a2), 28), a2);
  std::vector<int64_t> merged = {4, 5, 10, 11, 16, 17, 22, 23, 24, 25, 26, 27, 28};
  EXPECT_EQ(attended_set(p, 28), merged);
  EXPECT_EQ(attended_count(p, 28), 13);
  EXPECT_EQ(attended_count(HeadPattern::fixed(6, 2, Subset::a1), 28), 5);
  EXPECT_EQ(attended_count(HeadPattern::fixed(6, 2, Subset::a2), 28), 9);
  std::vector<KeyRange> ranges;
  attended_ranges(p, 28, ranges);
  EXPECT_EQ(expand(ranges), merged);
}

TEST(Pattern, SetsRangesAndCountsAgreeWithTheMask) {
  for (const HeadPattern& p : all_single_patterns())
    for (int64_t i = 0; i < 260; ++i) expect_consistent_row(p, i);
}

TEST(Pattern, IsCausalAndEveryRowAttendsItself) {
  for (const HeadPattern& p : all_single_patterns()) {
    SCOPED_TRACE(describe(p));
    for (int64_t i = 0; i < 200; ++i) {
      for (int64_t j = i + 1; j < i + 40; ++j) {
        ASSERT_FALSE(attends(p, i, j)) << "i=" << i << " j=" << j;
        ASSERT_FALSE(in_a1(p, i, j)) << "i=" << i << " j=" << j;
        ASSERT_FALSE(in_a2(p, i, j)) << "i=" << i << " j=" << j;
      }
      EXPECT_FALSE(attends(p, i, -1));
      // The fixed A2 set holds only summary cells (paper-notes definition), so on its own it holds i
      // exactly when i is a summary cell. Every other set holds i.
      if (p.pattern == Pattern::fixed && p.subset == Subset::a2) {
        const int64_t r = i % p.stride;
        const bool summary_cell =
            r >= p.stride - p.summary - p.summary_offset && r < p.stride - p.summary_offset;
        EXPECT_EQ(attends(p, i, i), summary_cell) << "i=" << i;
      } else {
        EXPECT_TRUE(attends(p, i, i)) << "i=" << i;
      }
    }
  }
}

TEST(Pattern, FixedSummaryOffsetMovesTheSummaryCells) {
  // l = 6, c = 2, offset 2: summary residues are {2, 3} instead of {4, 5}.
  const HeadPattern p = HeadPattern::fixed(6, 2, Subset::a2, 2);
  EXPECT_EQ(attended_set(p, 28), (std::vector<int64_t>{2, 3, 8, 9, 14, 15, 20, 21, 26, 27}));
  EXPECT_EQ(attended_count(p, 28), 10);
  EXPECT_EQ(attended_count(p, 25), 8);  // own block 24..25 holds no summary cell yet
}

// True when every j <= i is in A_first(i) or reachable as i -> s (s in A_first(i)) -> j (j in A_second(s)).
// Reading it as layers: layer 1 with A_second carries j into s, then layer 2 with A_first carries s into i.
::testing::AssertionResult reaches_everything_in_two_hops(int64_t n, const std::vector<HeadPattern>& first,
                                                          const std::vector<HeadPattern>& second) {
  std::vector<char> seen;
  for (int64_t i = 0; i < n; ++i) {
    seen.assign(static_cast<size_t>(i + 1), 0);
    for (const HeadPattern& p1 : first) {
      for (int64_t s : attended_set(p1, i)) {
        seen[s] = 1;
        for (const HeadPattern& p2 : second)
          for (int64_t j : attended_set(p2, s)) seen[j] = 1;
      }
    }
    for (int64_t j = 0; j <= i; ++j)
      if (!seen[j])
        return ::testing::AssertionFailure() << "n=" << n << ": position " << j << " does not reach " << i;
  }
  return ::testing::AssertionSuccess();
}

TEST(Pattern, StridedReachesEveryEarlierPositionInTwoHops) {
  const int64_t sizes[][2] = {{50, 7},    {97, 10}, {128, 11}, {300, 17},
                              {1000, 31}, {64, 8},  {40, 1},   {33, 40}};
  for (const auto& nl : sizes) {
    const int64_t n = nl[0], l = nl[1];
    SCOPED_TRACE("strided n=" + std::to_string(n) + " l=" + std::to_string(l));
    const std::vector<HeadPattern> a1 = {HeadPattern::strided(l, Subset::a1)};
    const std::vector<HeadPattern> a2 = {HeadPattern::strided(l, Subset::a2)};
    // Interleaved layers in either order: A2 after A1, and A1 after A2.
    EXPECT_TRUE(reaches_everything_in_two_hops(n, a2, a1));
    EXPECT_TRUE(reaches_everything_in_two_hops(n, a1, a2));
    // Multi-head: one A1 head and one A2 head in each layer.
    const auto heads = layer_patterns(Pattern::strided, l, 0, 2, Combination::multihead);
    EXPECT_TRUE(reaches_everything_in_two_hops(n, heads, heads));
  }
}

TEST(Pattern, FixedMergedReachesEveryEarlierPositionInTwoHops) {
  const int64_t sizes[][3] = {{50, 7, 1},    {97, 10, 2}, {128, 11, 3}, {300, 17, 5},
                              {1000, 31, 4}, {64, 8, 8},  {37, 6, 2}};
  for (const auto& nlc : sizes) {
    const int64_t n = nlc[0], l = nlc[1], c = nlc[2];
    SCOPED_TRACE("fixed n=" + std::to_string(n) + " l=" + std::to_string(l) + " c=" + std::to_string(c));
    const std::vector<HeadPattern> merged = {HeadPattern::fixed(l, c)};
    EXPECT_TRUE(reaches_everything_in_two_hops(n, merged, merged));
    // Heads with distinct summary offsets, taken together per layer, reach everything as well.
    const auto heads = layer_patterns(Pattern::fixed, l, c, 3, Combination::multihead);
    EXPECT_TRUE(reaches_everything_in_two_hops(n, heads, heads));
  }
}

TEST(Pattern, FixedA2AloneDoesNotReachWithinTheOwnBlock) {
  // Why the fixed pattern is used merged: with A2 then A1 the early cells of i's own block are lost.
  const std::vector<HeadPattern> a1 = {HeadPattern::fixed(6, 2, Subset::a1)};
  const std::vector<HeadPattern> a2 = {HeadPattern::fixed(6, 2, Subset::a2)};
  EXPECT_FALSE(reaches_everything_in_two_hops(30, a2, a1));
}

TEST(Pattern, RowSizeGrowsLikeSqrtN) {
  for (int64_t n : {1024, 4096, 10000, 16384}) {
    const int64_t l = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(n))));
    const double root = std::sqrt(static_cast<double>(n));
    const int64_t c = 4;
    int64_t strided_max = 0, fixed_max = 0;
    for (int64_t i = 0; i < n; ++i) {
      strided_max = std::max(strided_max, attended_count(HeadPattern::strided(l), i));
      fixed_max = std::max(fixed_max, attended_count(HeadPattern::fixed(l, c), i));
      ASSERT_EQ(attended_count(HeadPattern::dense_causal(), i), i + 1);
    }
    SCOPED_TRACE("n=" + std::to_string(n) + " l=" + std::to_string(l));
    // strided: at most l + 1 band cells plus i / l + 1 column cells, about 2 sqrt(n).
    EXPECT_LE(strided_max, 3.0 * root);
    // fixed: the own block (< l) plus c summary cells for each of about n / l earlier blocks.
    EXPECT_LE(fixed_max, (c + 2) * root);
    // The sets are exact, so the row sizes also stay near those bounds from below.
    EXPECT_GE(strided_max, 1.5 * root);
    EXPECT_GE(fixed_max, c * root * 0.9);
    EXPECT_EQ(attended_count(HeadPattern::dense_causal(), n - 1), n);
  }
}

TEST(Pattern, LayerPatternsForEachCombination) {
  // merged: every head A1 + A2
  for (const HeadPattern& p : layer_patterns(Pattern::strided, 37, 0, 3, Combination::merged))
    EXPECT_EQ(p, HeadPattern::strided(37));
  for (const HeadPattern& p : layer_patterns(Pattern::fixed, 37, 5, 3, Combination::merged))
    EXPECT_EQ(p, HeadPattern::fixed(37, 5));
  // interleaved: layer r uses A^(r mod 2)
  for (int layer = 0; layer < 4; ++layer) {
    const Subset want = layer % 2 == 0 ? Subset::a1 : Subset::a2;
    for (const HeadPattern& p : layer_patterns(Pattern::strided, 37, 0, 2, Combination::interleaved, layer))
      EXPECT_EQ(p, HeadPattern::strided(37, want)) << "layer " << layer;
    for (const HeadPattern& p : layer_patterns(Pattern::fixed, 37, 5, 2, Combination::interleaved, layer))
      EXPECT_EQ(p, HeadPattern::fixed(37, 5, want)) << "layer " << layer;
  }
  // multihead strided: heads alternate A1, A2
  const auto strided = layer_patterns(Pattern::strided, 37, 0, 4, Combination::multihead);
  ASSERT_EQ(strided.size(), 4u);
  for (int h = 0; h < 4; ++h)
    EXPECT_EQ(strided[h], HeadPattern::strided(37, h % 2 == 0 ? Subset::a1 : Subset::a2));
  // multihead fixed: merged heads, each with its own c-wide summary sub-block while l / c allows
  const auto fixed = layer_patterns(Pattern::fixed, 37, 5, 7, Combination::multihead);
  ASSERT_EQ(fixed.size(), 7u);
  std::vector<int64_t> offsets;
  for (const HeadPattern& p : fixed) {
    EXPECT_EQ(p.subset, Subset::both);
    EXPECT_NO_THROW(validate(p));
    offsets.push_back(p.summary_offset);
  }
  EXPECT_EQ(offsets[0], 0);
  std::sort(offsets.begin(), offsets.end());
  EXPECT_EQ(std::adjacent_find(offsets.begin(), offsets.end()), offsets.end()) << "summary offsets repeat";
  // dense: every head dense, whatever the combination
  for (Combination mode : {Combination::merged, Combination::interleaved, Combination::multihead})
    for (const HeadPattern& p : layer_patterns(Pattern::dense, 0, 0, 2, mode))
      EXPECT_EQ(p, HeadPattern::dense_causal());
}

TEST(Pattern, NamesRoundTrip) {
  for (Pattern p : {Pattern::dense, Pattern::strided, Pattern::fixed})
    EXPECT_EQ(parse_pattern(to_string(p)), p);
  for (Combination c : {Combination::interleaved, Combination::merged, Combination::multihead})
    EXPECT_EQ(parse_combination(to_string(c)), c);
  EXPECT_EQ(describe(HeadPattern::fixed(128, 32)), "fixed l=128 c=32 offset=0 A1+A2");
  EXPECT_THROW(parse_pattern("sparse"), Error);
  EXPECT_THROW(parse_combination("both"), Error);
}

TEST(Pattern, InvalidPatternsThrowNamingTheValue) {
  EXPECT_TRUE(mentions(error_message([] { validate(HeadPattern::strided(0)); }), {"l = 0"}));
  EXPECT_TRUE(mentions(error_message([] { validate(HeadPattern::fixed(0, 1)); }), {"l = 0"}));
  EXPECT_TRUE(mentions(error_message([] { validate(HeadPattern::fixed(6, 7)); }), {"c = 7"}));
  EXPECT_TRUE(mentions(error_message([] { validate(HeadPattern::fixed(6, 0)); }), {"c = 0"}));
  EXPECT_TRUE(
      mentions(error_message([] { validate(HeadPattern::fixed(6, 2, Subset::both, 5)); }), {"offset = 5"}));
  EXPECT_TRUE(mentions(error_message([] { layer_patterns(Pattern::strided, 8, 0, 0, Combination::merged); }),
                       {"got 0"}));
  EXPECT_TRUE(mentions(error_message([] { layer_patterns(Pattern::fixed, 8, 9, 2, Combination::merged); }),
                       {"c = 9"}));
}

}  // namespace
