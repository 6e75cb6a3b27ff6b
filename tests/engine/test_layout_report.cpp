// The engine's report on a layer's pattern (what `stx layout` prints): attended sets checked against the
// paper's definitions enumerated by brute force, block-layout figures, the connectivity rows the PNG draws,
// and settings named in the errors. Sizes are awkward on purpose (n = 300, l = 17).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stx/engine/error.h"
#include "stx/engine/layout_report.h"
#include "stx/engine/pattern_view.h"

namespace {

using namespace stx::engine;

LayerPatternSpec layer(const std::string& pattern, int64_t n, int64_t l, int64_t c, const std::string& mode,
                       int heads, int block = 64) {
  return LayerPatternSpec{{pattern, n, l, c}, mode, /*layer=*/0, heads, block};
}

// The paper's sets (shared/docs/paper-notes.md), written out here rather than taken from the kernels.
bool strided_a1(int64_t l, int64_t i, int64_t j) { return j <= i && i - j <= l; }
bool strided_a2(int64_t l, int64_t i, int64_t j) { return j <= i && (i - j) % l == 0; }
bool fixed_a1(int64_t l, int64_t i, int64_t j) { return j <= i && j / l == i / l; }
bool fixed_a2(int64_t l, int64_t c, int64_t offset, int64_t i, int64_t j) {
  return j <= i && j % l >= l - c - offset && j % l < l - offset;
}

template <typename InSet>
std::vector<int64_t> brute_force(int64_t i, InSet in_set) {
  std::vector<int64_t> out;
  for (int64_t j = 0; j <= i; ++j) {
    if (in_set(j)) out.push_back(j);
  }
  return out;
}

std::vector<int64_t> positions(const std::vector<PositionRange>& ranges) {
  std::vector<int64_t> out;
  for (const PositionRange& r : ranges) {
    for (int64_t j = r.first; j <= r.last; ++j) out.push_back(j);
  }
  return out;
}

std::vector<int64_t> ones(const std::vector<uint8_t>& row) {
  std::vector<int64_t> out;
  for (size_t j = 0; j < row.size(); ++j) {
    if (row[j] != 0) out.push_back(static_cast<int64_t>(j));
  }
  return out;
}

Error error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no Error";
  return Error("");
}

TEST(LayoutReport, StridedAttendedSetIsThePapersA1UnionA2) {
  const int64_t l = 17;
  const LayerPatternSpec spec = layer("strided", 300, l, 1, "merged", 2);
  for (const int64_t i : {int64_t{0}, int64_t{16}, int64_t{17}, int64_t{150}, int64_t{299}}) {
    const LayoutReport report = layout_report(spec, i);
    ASSERT_EQ(report.groups.size(), 1u) << "merged heads share one pattern";
    EXPECT_EQ(report.groups[0].heads, (std::vector<int>{0, 1}));
    const AttendedSetReport& set = report.groups[0].attended;
    const auto a1 = brute_force(i, [&](int64_t j) { return strided_a1(l, i, j); });
    const auto a2 = brute_force(i, [&](int64_t j) { return strided_a2(l, i, j); });
    const auto both = brute_force(i, [&](int64_t j) { return strided_a1(l, i, j) || strided_a2(l, i, j); });
    EXPECT_EQ(positions(set.ranges), both) << "query " << i;
    EXPECT_EQ(set.count, static_cast<int64_t>(both.size()));
    EXPECT_EQ(set.in_a1, static_cast<int64_t>(a1.size()));
    EXPECT_EQ(set.in_a2, static_cast<int64_t>(a2.size()));
  }
  // What `stx layout --pattern strided --n 300 --stride 17 --query 150` prints.
  const LayoutReport report = layout_report(spec, 150);
  EXPECT_EQ(report.groups[0].attended.count, 25);
  EXPECT_EQ(report.groups[0].attended.in_a1, 18);  // 133..150: l + 1 positions
  EXPECT_EQ(report.groups[0].attended.in_a2, 9);   // 14, 31, ..., 150
  EXPECT_EQ(report.groups[0].attended.ranges.size(), 8u);
  EXPECT_EQ(report.groups[0].pattern.description, "strided l=17 A1+A2");
}

TEST(LayoutReport, FixedMultiheadGivesEachHeadItsOwnSummaryCells) {
  const int64_t l = 30, c = 5, i = 263;
  const LayoutReport report = layout_report(layer("fixed", 300, l, c, "multihead", 4), i);
  ASSERT_EQ(report.groups.size(), 4u);
  EXPECT_EQ(report.group_of_head, (std::vector<int>{0, 1, 2, 3}));
  for (int h = 0; h < 4; ++h) {
    const HeadGroupReport& group = report.groups[static_cast<size_t>(h)];
    const int64_t offset = h * c;
    EXPECT_EQ(group.pattern.summary_offset, offset);
    EXPECT_EQ(group.pattern.description, "fixed l=30 c=5 offset=" + std::to_string(offset) + " A1+A2");
    const auto a1 = brute_force(i, [&](int64_t j) { return fixed_a1(l, i, j); });
    const auto a2 = brute_force(i, [&](int64_t j) { return fixed_a2(l, c, offset, i, j); });
    const auto both =
        brute_force(i, [&](int64_t j) { return fixed_a1(l, i, j) || fixed_a2(l, c, offset, i, j); });
    EXPECT_EQ(positions(group.attended.ranges), both) << "head " << h;
    EXPECT_EQ(group.attended.in_a1, static_cast<int64_t>(a1.size()));
    EXPECT_EQ(group.attended.in_a2, static_cast<int64_t>(a2.size()));
  }
}

TEST(LayoutReport, HeadsWithEqualPatternsAreReportedOnce) {
  const LayoutReport report = layout_report(layer("strided", 1000, 64, 1, "multihead", 5, 16), 999);
  ASSERT_EQ(report.groups.size(), 2u);
  EXPECT_EQ(report.groups[0].heads, (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(report.groups[1].heads, (std::vector<int>{1, 3}));
  EXPECT_EQ(report.group_of_head, (std::vector<int>{0, 1, 0, 1, 0}));
  EXPECT_EQ(report.groups[0].pattern.subset, "A1");
  EXPECT_EQ(report.groups[1].pattern.subset, "A2");
  // Every l-th position back, read with step l, is plain causal attention over the columns.
  ASSERT_EQ(report.groups[1].parts.size(), 1u);
  const LayoutPartReport& columns = report.groups[1].parts[0];
  EXPECT_EQ(columns.view, "columns");
  EXPECT_EQ(columns.step, 64);
  EXPECT_EQ(columns.lanes, 64);
  EXPECT_EQ(columns.query_blocks, 1);  // ceil(ceil(1000 / 64) / 16)
}

TEST(LayoutReport, BlockFiguresOfDenseAndStridedLayers) {
  const LayoutReport dense = layout_report(layer("dense", 1000, 0, 0, "merged", 3, 32), 500);
  EXPECT_EQ(dense.dense_causal_blocks, 32 * 33 / 2);  // ceil(1000 / 32) = 32 query blocks
  EXPECT_EQ(dense.dense_causal_pairs, 1000 * 1001 / 2);
  ASSERT_EQ(dense.groups.size(), 1u);
  EXPECT_EQ(dense.groups[0].blocks, dense.dense_causal_blocks);
  EXPECT_EQ(dense.groups[0].attended_pairs, dense.dense_causal_pairs);
  // The 32 diagonal blocks are masked, and so is the last row of blocks, which runs past n = 1000.
  EXPECT_EQ(dense.groups[0].full_blocks, 465);
  EXPECT_EQ(dense.groups[0].attended.count, 501);

  const int64_t l = 17, n = 300;
  const LayoutReport strided = layout_report(layer("strided", n, l, 1, "merged", 2), 150);
  const HeadGroupReport& group = strided.groups[0];
  int64_t pairs = 0;
  for (int64_t i = 0; i < n; ++i) {
    pairs += static_cast<int64_t>(
        brute_force(i, [&](int64_t j) { return strided_a1(l, i, j) || strided_a2(l, i, j); }).size());
  }
  EXPECT_EQ(group.attended_pairs, pairs);
  ASSERT_EQ(group.parts.size(), 2u);
  EXPECT_EQ(group.parts[0].subset, "A1");
  EXPECT_FALSE(group.parts[0].minus_a1);
  EXPECT_EQ(group.parts[0].view, "natural");
  EXPECT_EQ(group.parts[1].subset, "A2");
  EXPECT_TRUE(group.parts[1].minus_a1);
  EXPECT_EQ(group.parts[1].lanes, l);
  EXPECT_EQ(group.blocks, group.parts[0].blocks + group.parts[1].blocks);
  EXPECT_EQ(group.full_blocks, group.parts[0].full_blocks + group.parts[1].full_blocks);
}

TEST(LayoutReport, ConnectivityRowIsTheAttendedSet) {
  const LayerPatternSpec spec = layer("strided", 300, 17, 1, "multihead", 2);  // head 0: A1, head 1: A2
  const PatternSpec& element = spec;
  for (const int64_t i : {int64_t{0}, int64_t{1}, int64_t{17}, int64_t{150}, int64_t{299}}) {
    EXPECT_EQ(connectivity_row(spec, -1, i).size(), static_cast<size_t>(i + 1));
    EXPECT_EQ(ones(connectivity_row(spec, 0, i)), attended_positions(element, PatternPart::a1, i));
    EXPECT_EQ(ones(connectivity_row(spec, 1, i)), attended_positions(element, PatternPart::a2, i));
    EXPECT_EQ(ones(connectivity_row(spec, -1, i)), attended_positions(element, PatternPart::both, i));
  }
  // The union over fixed heads with different summary cells, against the report's ranges per head.
  const LayerPatternSpec fixed = layer("fixed", 300, 30, 5, "multihead", 4);
  const int64_t i = 263;
  const LayoutReport report = layout_report(fixed, i);
  std::vector<uint8_t> expected(static_cast<size_t>(i + 1), 0);
  for (const HeadGroupReport& group : report.groups) {
    for (const int64_t j : positions(group.attended.ranges)) expected[static_cast<size_t>(j)] = 1;
  }
  EXPECT_EQ(connectivity_row(fixed, -1, i), expected);
}

TEST(LayoutReport, BadSettingsAreErrorsNamingTheSetting) {
  const Error banded = error_of([] { layout_report(layer("banded", 300, 17, 1, "merged", 2), 0); });
  EXPECT_NE(std::string(banded.what()).find("banded"), std::string::npos) << banded.what();
  EXPECT_EQ(banded.settings(), (std::vector<std::string>{"pattern"}));
  EXPECT_EQ(error_of([] { layout_report(layer("strided", 300, 17, 1, "spiral", 2), 0); }).settings(),
            (std::vector<std::string>{"mode"}));
  EXPECT_EQ(error_of([] { layout_report(layer("fixed", 300, 128, 500, "merged", 2), 0); }).settings(),
            (std::vector<std::string>{"summary"}));
  EXPECT_EQ(error_of([] { layout_report(layer("strided", 300, 17, 1, "merged", 2, 48), 0); }).settings(),
            (std::vector<std::string>{"block"}));
  EXPECT_EQ(error_of([] { layout_report(layer("strided", 300, 17, 1, "merged", 0), 0); }).settings(),
            (std::vector<std::string>{"heads"}));
  EXPECT_EQ(error_of([] {
              layout_report(layer("dense", kMaxLayoutReportLength + 1, 0, 0, "merged", 1), 0);
            }).settings(),
            (std::vector<std::string>{"n"}));
  EXPECT_EQ(error_of([] { layout_report(layer("strided", 300, 17, 1, "merged", 2), 300); }).settings(),
            (std::vector<std::string>{"query"}));
  EXPECT_EQ(error_of([] { connectivity_row(layer("strided", 300, 17, 1, "merged", 2), 2, 10); }).settings(),
            (std::vector<std::string>{"head"}));
}

TEST(LayoutReport, LayerDescriptionNamesPatternModeAndLayer) {
  LayerPatternSpec spec = layer("fixed", 4096, 128, 32, "multi-head", 4);
  spec.layer = 3;
  EXPECT_EQ(spec.describe(), "fixed l=128 c=32, multihead, layer 3");
  EXPECT_EQ(layer("dense", 10, 0, 0, "merged", 1).describe(), "dense");
}

}  // namespace
