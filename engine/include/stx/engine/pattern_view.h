// The connectivity of the paper's patterns for the front ends (the studio's Patterns tab and its live
// attention overlays), without the kernel headers. Positions are 0-based and causal.
//
//   stx::engine::PatternSpec spec{"strided", /*n=*/64, /*stride=*/8, /*summary=*/0};
//   auto a1 = stx::engine::attended_positions(spec, stx::engine::PatternPart::a1, 40);
//   auto reach = stx::engine::two_hop_reach(spec, 40);   // every j <= 40 for strided
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stx::engine {

struct PatternSpec {
  std::string pattern = "strided";  // "dense" | "strided" | "fixed"
  int64_t n = 64;                   // sequence length
  int64_t stride = 8;               // l (strided, fixed)
  int64_t summary = 1;              // c (fixed): 1 <= c <= l
  // Throws Error with a plain message for an unknown pattern or n, l, c out of range; its settings() name
  // the one at fault: "pattern", "n", "stride" or "summary".
  void validate() const;
};

// A layer's heads over one pattern, as the kernels build them: how the heads use A1 and A2 (the paper's
// eqs 6-8) and the block size B of the layout. `stx layout` and `stx check` describe their layer with it.
struct LayerPatternSpec : PatternSpec {
  std::string mode = "merged";  // "merged" | "interleaved" (A1 on even layers, A2 on odd) | "multihead"
  int layer = 0;
  int heads = 2;
  int block = 64;  // B: 16, 32, 64 or 128

  static constexpr int64_t kMaxStride = int64_t{1} << 20;
  static constexpr int kMaxHeads = 64;
  static constexpr int kMaxLayer = 1 << 20;

  // Throws Error like PatternSpec::validate, with the settings "mode", "heads", "layer" and "block" too.
  void validate() const;
  // e.g. "strided l=128, merged, layer 0", "fixed l=128 c=32, multihead, layer 0" or "dense".
  std::string describe() const;
};

// Throws Error naming the setting ("pattern" or "mode") for a name the kernels do not know; the message lists
// the ones they do: "unknown pattern 'banded': expected dense, strided or fixed".
void check_pattern_names(const std::string& pattern, const std::string& mode);

enum class PatternPart { a1, a2, both };

// The positions query `query` attends to: A1, A2 or A1 ∪ A2 (dense: every j <= query for all three).
std::vector<int64_t> attended_positions(const PatternSpec& spec, PatternPart part, int64_t query);

// Every position whose information reaches `query` through two layers of merged heads (A1 ∪ A2 in both):
// the union of A(k) over k in A(query). Ascending.
std::vector<int64_t> two_hop_reach(const PatternSpec& spec, int64_t query);

// |A(query)| for the pattern, against query + 1 for dense.
int64_t attended_count(const PatternSpec& spec, int64_t query);

}  // namespace stx::engine
