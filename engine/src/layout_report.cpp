#include "stx/engine/layout_report.h"

#include <algorithm>

#include "layer_head_patterns.h"
#include "stx/engine/error.h"
#include "stx/kernels/layout.h"
#include "stx/kernels/pattern.h"

namespace stx::engine {
namespace {

void check_between(const char* setting, const std::string& what, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) {
    throw Error(what + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", not " +
                    std::to_string(value),
                {setting});
  }
}

AttendedSetReport attended(const kernels::HeadPattern& p, int64_t query) {
  AttendedSetReport set;
  std::vector<kernels::KeyRange> ranges;
  kernels::attended_ranges(p, query, ranges);
  for (const kernels::KeyRange& r : ranges) {
    set.ranges.push_back({r.first, r.last});
    for (int64_t j = r.first; j <= r.last; ++j) {
      set.count++;
      set.in_a1 += kernels::in_a1(p, query, j) ? 1 : 0;
      set.in_a2 += kernels::in_a2(p, query, j) ? 1 : 0;
    }
  }
  return set;
}

HeadPatternReport pattern_report(const kernels::HeadPattern& p) {
  return {kernels::to_string(p.pattern), kernels::to_string(p.subset), p.stride, p.summary, p.summary_offset,
          kernels::describe(p)};
}

LayoutPartReport part_report(const kernels::LayoutPart& part) {
  LayoutPartReport r;
  r.subset = kernels::to_string(part.rule.include);
  r.minus_a1 = part.rule.exclude_a1;
  r.view = part.view == kernels::View::natural ? "natural" : "columns";
  r.step = part.step;
  r.lanes = part.lanes;
  r.query_blocks = part.num_blocks;
  // A columns part is one list shared by all lanes; each lane visits it.
  r.blocks = static_cast<int64_t>(part.row_key.size()) * part.lanes;
  r.full_blocks = std::count(part.row_mask.begin(), part.row_mask.end(), -1) * part.lanes;
  return r;
}

HeadGroupReport group_report(const kernels::Layout& layout, int first_head, int64_t query) {
  const kernels::HeadPattern& p = layout.heads[first_head];
  HeadGroupReport group;
  group.pattern = pattern_report(p);
  group.attended = attended(p, query);
  for (const kernels::LayoutPart& part : layout.head(first_head).parts) {
    group.parts.push_back(part_report(part));
    group.blocks += group.parts.back().blocks;
    group.full_blocks += group.parts.back().full_blocks;
  }
  for (int64_t i = 0; i < layout.n; ++i) group.attended_pairs += kernels::attended_count(p, i);
  return group;
}

}  // namespace

LayoutReport layout_report(const LayerPatternSpec& spec, int64_t query) {
  spec.validate();
  check_between("n", "the sequence length n", spec.n, 1, kMaxLayoutReportLength);
  check_between("query", "the query position", query, 0, spec.n - 1);
  const auto layout = kernels::build_layout(spec.n, spec.block, layer_head_patterns(spec));

  LayoutReport report;
  report.n = spec.n;
  report.block = spec.block;
  report.heads = layout->num_heads();
  report.query = query;
  const int64_t query_blocks = (spec.n + spec.block - 1) / spec.block;
  report.dense_causal_blocks = query_blocks * (query_blocks + 1) / 2;
  report.dense_causal_pairs = spec.n * (spec.n + 1) / 2;
  // The layout shares one HeadLayout between equal patterns; its numbering orders the groups.
  report.group_of_head = layout->head_to_unique;
  report.groups.resize(layout->unique.size());
  for (int h = 0; h < layout->num_heads(); ++h) {
    HeadGroupReport& group = report.groups[static_cast<size_t>(layout->head_to_unique[h])];
    if (group.heads.empty()) group = group_report(*layout, h, query);
    group.heads.push_back(h);
  }
  return report;
}

std::vector<uint8_t> connectivity_row(const LayerPatternSpec& spec, int head, int64_t query) {
  const std::vector<kernels::HeadPattern> heads = layer_head_patterns(spec);
  if (head < -1 || head >= spec.heads) {
    throw Error("the head must be between 0 and " + std::to_string(spec.heads - 1) +
                    ", or -1 for every head, not " + std::to_string(head),
                {"head"});
  }
  check_between("query", "the query position", query, 0, spec.n - 1);
  // Union over heads: a position attended by several counts once.
  std::vector<uint8_t> row(static_cast<size_t>(query + 1), 0);
  std::vector<kernels::KeyRange> ranges;
  for (size_t h = 0; h < heads.size(); ++h) {
    if (head >= 0 && static_cast<int>(h) != head) continue;
    kernels::attended_ranges(heads[h], query, ranges);
    for (const kernels::KeyRange& r : ranges) std::fill(row.begin() + r.first, row.begin() + r.last + 1, 1);
  }
  return row;
}

}  // namespace stx::engine
