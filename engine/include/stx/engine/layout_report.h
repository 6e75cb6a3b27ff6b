// What a layer's attention looks like and what its block layout costs, as plain data for a front end to
// print (`stx layout`) or draw, without the kernel headers. Positions are 0-based and causal.
//
//   stx::engine::LayerPatternSpec spec;
//   spec.pattern = "fixed"; spec.n = 4096; spec.stride = 128; spec.summary = 32;
//   spec.mode = "multihead"; spec.heads = 4;
//   const stx::engine::LayoutReport report = stx::engine::layout_report(spec, /*query=*/1000);
//   report.groups[0].attended.count;  // |A(1000)| for head 0: 329
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stx/engine/pattern_view.h"

namespace stx::engine {

// A fixed layout holds O(n^2 / l) blocks and a dense one O(n^2 / B^2); past this they take seconds and
// hundreds of MB to build, which is not what a quick look at a pattern should cost.
constexpr int64_t kMaxLayoutReportLength = int64_t{1} << 16;

struct PositionRange {
  int64_t first = 0;
  int64_t last = 0;  // inclusive
};

// The attended set A(query) of one head. A1 and A2 overlap (j = query at least), so in_a1 + in_a2 can
// exceed count; dense heads count every position in both.
struct AttendedSetReport {
  std::vector<PositionRange> ranges;  // disjoint, ascending
  int64_t count = 0;
  int64_t in_a1 = 0;
  int64_t in_a2 = 0;
};

// One part of a head's block layout (stx/kernels/layout.h explains parts and views). A block costs the same
// whether full or masked, so blocks measure the work.
struct LayoutPartReport {
  std::string subset;     // the pairs the part holds: "A1", "A2" or "A1+A2" (all j <= i for dense)
  bool minus_a1 = false;  // ... less those in A1: the column part of a strided merged head
  std::string view;       // "natural" (position = index) or "columns" (lane r reads r, r + step, ...)
  int64_t step = 1;       // 1 (natural) or l (columns)
  int64_t lanes = 1;
  int64_t query_blocks = 0;  // per lane
  int64_t blocks = 0;        // visited, over all lanes
  int64_t full_blocks = 0;   // the others carry an element mask
};

// One head's pattern as the kernels built it for the layer.
struct HeadPatternReport {
  std::string pattern;         // "dense", "strided" or "fixed"
  std::string subset;          // "A1", "A2" or "A1+A2"
  int64_t stride = 0;          // l; 0 for dense
  int64_t summary = 0;         // c; fixed only
  int64_t summary_offset = 0;  // fixed multihead: each head's summary cells sit this far from a block's end
  std::string description;     // e.g. "fixed l=128 c=32 offset=0 A1+A2"
};

// Heads with equal patterns attend alike and share one layout, so they are reported once.
struct HeadGroupReport {
  std::vector<int> heads;  // ascending
  HeadPatternReport pattern;
  AttendedSetReport attended;  // A(query)
  std::vector<LayoutPartReport> parts;
  int64_t blocks = 0;  // of one head, over its parts
  int64_t full_blocks = 0;
  int64_t attended_pairs = 0;  // (i, j) pairs over every query i of one head: its useful work
};

struct LayoutReport {
  int64_t n = 0;
  int block = 0;
  int heads = 0;
  int64_t query = 0;
  // What one head of dense causal attention costs, to compare with.
  int64_t dense_causal_blocks = 0;      // ceil(n / B) (ceil(n / B) + 1) / 2
  int64_t dense_causal_pairs = 0;       // n (n + 1) / 2
  std::vector<HeadGroupReport> groups;  // ordered by their first head
  std::vector<int> group_of_head;       // head h is reported in groups[group_of_head[h]]
};

// Builds the layer's block layout (n up to kMaxLayoutReportLength) and reports on it and on A(query).
// Throws Error naming the setting: those of LayerPatternSpec::validate, "n" and "query".
LayoutReport layout_report(const LayerPatternSpec& spec, int64_t query);

// Row `query` of the layer's connectivity matrix (the paper's Figure 3): element j, 0 <= j <= query, is 1
// when `query` attends to j in head `head`, or in any head for head < 0. Throws Error naming the setting
// (those of LayerPatternSpec::validate, "query" and "head").
std::vector<uint8_t> connectivity_row(const LayerPatternSpec& spec, int head, int64_t query);

}  // namespace stx::engine
