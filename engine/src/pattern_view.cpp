#include "stx/engine/pattern_view.h"

#include <algorithm>

#include "layer_head_patterns.h"
#include "stx/engine/error.h"
#include "stx/kernels/error.h"
#include "stx/kernels/pattern.h"

namespace stx::engine {

namespace {

constexpr int64_t kMaxPatternLength = 1 << 20;

kernels::HeadPattern head_pattern(const PatternSpec& spec, PatternPart part) {
  const kernels::Subset subset = part == PatternPart::a1   ? kernels::Subset::a1
                                 : part == PatternPart::a2 ? kernels::Subset::a2
                                                           : kernels::Subset::both;
  if (spec.pattern == "dense") return kernels::HeadPattern::dense_causal();
  if (spec.pattern == "strided") return kernels::HeadPattern::strided(spec.stride, subset);
  return kernels::HeadPattern::fixed(spec.stride, spec.summary, subset);
}

// The kernels own the names; their message already lists the known ones.
void check_pattern_name(const std::string& pattern) {
  try {
    kernels::parse_pattern(pattern);
  } catch (const kernels::Error& e) {
    throw Error(e.what(), {"pattern"});
  }
}

void check_query(const PatternSpec& spec, int64_t query) {
  spec.validate();
  if (query < 0 || query >= spec.n) {
    throw Error("query position " + std::to_string(query) + " is outside 0.." + std::to_string(spec.n - 1),
                {"query"});
  }
}

}  // namespace

void PatternSpec::validate() const {
  check_pattern_name(pattern);
  if (n < 1 || n > kMaxPatternLength) {
    throw Error("n must be between 1 and " + std::to_string(kMaxPatternLength) + ", not " + std::to_string(n),
                {"n"});
  }
  if (pattern == "dense") return;
  if (stride < 1) throw Error("the stride l must be at least 1, not " + std::to_string(stride), {"stride"});
  if (pattern == "fixed" && (summary < 1 || summary > stride)) {
    throw Error("the summary width c must be between 1 and l = " + std::to_string(stride) + ", not " +
                    std::to_string(summary),
                {"summary"});
  }
}

void check_pattern_names(const std::string& pattern, const std::string& mode) {
  check_pattern_name(pattern);
  try {
    kernels::parse_combination(mode);
  } catch (const kernels::Error& e) {
    throw Error(e.what(), {"mode"});
  }
}

void LayerPatternSpec::validate() const {
  check_pattern_names(pattern, mode);
  PatternSpec::validate();
  if (pattern != "dense" && stride > kMaxStride) {
    throw Error(
        "the stride l must be at most " + std::to_string(kMaxStride) + ", not " + std::to_string(stride),
        {"stride"});
  }
  if (heads < 1 || heads > kMaxHeads) {
    throw Error("the number of heads must be between 1 and " + std::to_string(kMaxHeads) + ", not " +
                    std::to_string(heads),
                {"heads"});
  }
  if (layer < 0 || layer > kMaxLayer) {
    throw Error("the layer index must be between 0 and " + std::to_string(kMaxLayer) + ", not " +
                    std::to_string(layer),
                {"layer"});
  }
  if (block != 16 && block != 32 && block != 64 && block != 128) {
    throw Error("the block size must be 16, 32, 64 or 128, not " + std::to_string(block), {"block"});
  }
}

std::string LayerPatternSpec::describe() const {
  if (pattern == "dense") return pattern;
  std::string s = pattern + " l=" + std::to_string(stride);
  if (pattern == "fixed") s += " c=" + std::to_string(summary);
  return s + ", " + kernels::to_string(kernels::parse_combination(mode)) + ", layer " + std::to_string(layer);
}

std::vector<kernels::HeadPattern> layer_head_patterns(const LayerPatternSpec& spec) {
  spec.validate();
  return kernels::layer_patterns(kernels::parse_pattern(spec.pattern), spec.stride, spec.summary, spec.heads,
                                 kernels::parse_combination(spec.mode), spec.layer);
}

std::vector<int64_t> attended_positions(const PatternSpec& spec, PatternPart part, int64_t query) {
  check_query(spec, query);
  return kernels::attended_set(head_pattern(spec, part), query);
}

std::vector<int64_t> two_hop_reach(const PatternSpec& spec, int64_t query) {
  check_query(spec, query);
  const kernels::HeadPattern merged = head_pattern(spec, PatternPart::both);
  std::vector<char> reached(static_cast<size_t>(query + 1), 0);
  for (const int64_t k : kernels::attended_set(merged, query)) {
    for (const int64_t j : kernels::attended_set(merged, k)) reached[static_cast<size_t>(j)] = 1;
  }
  std::vector<int64_t> out;
  for (int64_t j = 0; j <= query; ++j) {
    if (reached[static_cast<size_t>(j)]) out.push_back(j);
  }
  return out;
}

int64_t attended_count(const PatternSpec& spec, int64_t query) {
  check_query(spec, query);
  return kernels::attended_count(head_pattern(spec, PatternPart::both), query);
}

}  // namespace stx::engine
