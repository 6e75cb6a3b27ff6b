// Sparse Transformer connectivity patterns (Child et al. 2019), element level.
//
// Positions are 0-based and every pattern is causal (j <= i). The definitions are
// the ones in shared/docs/paper-notes.md:
//   strided  A1(i) = { j : max(0, i - l) <= j <= i }
//            A2(i) = { j <= i : (i - j) mod l == 0 }
//   fixed    A1(i) = { j <= i : j / l == i / l }
//            A2(i) = { j <= i : l - c - o <= j mod l < l - o }   (o = summary_offset, 0 in the paper)
//   dense    A(i)  = { j <= i }
//
// Usage:
//   stx::kernels::HeadPattern p = stx::kernels::HeadPattern::strided(128);
//   bool seen = stx::kernels::attends(p, /*i=*/300, /*j=*/44);   // (300 - 44) % 128 == 0 -> true
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stx::kernels {

enum class Pattern : int { dense = 0, strided = 1, fixed = 2 };

// Which of the two factorized subsets a head attends to. `both` is the merged head (A1 ∪ A2).
enum class Subset : int { a1 = 0, a2 = 1, both = 2 };

// How a layer's heads use the subsets (paper eqs 6-8).
enum class Combination : int {
  interleaved = 0,  // every head of layer r uses A^(r mod 2)
  merged = 1,       // every head uses A1 ∪ A2
  multihead = 2,    // heads differ: strided alternates A1 / A2, fixed gives each head its own summary offset
};

struct HeadPattern {
  Pattern pattern = Pattern::dense;
  int64_t stride = 0;          // l, > 0 for strided and fixed
  int64_t summary = 0;         // c, fixed only: 1 <= c <= l
  int64_t summary_offset = 0;  // o, fixed only: the summary cells are [l - c - o, l - o) of each block
  Subset subset = Subset::both;

  static HeadPattern dense_causal() { return HeadPattern{}; }
  static HeadPattern strided(int64_t l, Subset s = Subset::both) {
    return HeadPattern{Pattern::strided, l, 0, 0, s};
  }
  static HeadPattern fixed(int64_t l, int64_t c, Subset s = Subset::both, int64_t offset = 0) {
    return HeadPattern{Pattern::fixed, l, c, offset, s};
  }
  bool operator==(const HeadPattern& o) const {
    return pattern == o.pattern && stride == o.stride && summary == o.summary &&
           summary_offset == o.summary_offset && subset == o.subset;
  }
};

// Throws stx::kernels::Error with a plain message when l, c or the offset are out of range.
void validate(const HeadPattern& p);

// Element-level membership: does query i attend to key j? False for j > i or negative positions.
bool attends(const HeadPattern& p, int64_t i, int64_t j);
bool in_a1(const HeadPattern& p, int64_t i, int64_t j);
bool in_a2(const HeadPattern& p, int64_t i, int64_t j);

// The attended set of position i, sorted ascending. Cost O(|A(i)|), never O(i).
std::vector<int64_t> attended_set(const HeadPattern& p, int64_t i);

// |A(i)| in O(1): the useful work of one query row.
int64_t attended_count(const HeadPattern& p, int64_t i);

// The same set as disjoint, ascending, closed intervals [first, last]: the decode kernel walks these.
struct KeyRange {
  int64_t first;
  int64_t last;
};
void attended_ranges(const HeadPattern& p, int64_t i, std::vector<KeyRange>& out);

// The same set again as ascending runs of evenly spaced keys: first, first + step, ... (count keys). The
// strided pattern's columns before the band are one run of step l, where attended_ranges gives one range
// per key: a decode step far into a long context walks them without a loop per key.
struct KeyRun {
  int64_t first;
  int64_t count;
  int64_t step;
};
void attended_runs(const HeadPattern& p, int64_t i, std::vector<KeyRun>& out);

// The per-head patterns of one layer.
//   pattern, l, c: as above; heads: number of heads; layer: the layer index (interleaved uses A^(layer mod 2)).
std::vector<HeadPattern> layer_patterns(Pattern pattern, int64_t l, int64_t c, int heads, Combination mode,
                                        int layer = 0);

const char* to_string(Pattern p);
const char* to_string(Subset s);
const char* to_string(Combination c);
Pattern parse_pattern(const std::string& name);          // "dense" | "strided" | "fixed"
Combination parse_combination(const std::string& name);  // "interleaved" | "merged" | "multihead"
std::string describe(const HeadPattern& p);               // e.g. "fixed l=128 c=32 offset=0 A1+A2"

}  // namespace stx::kernels
