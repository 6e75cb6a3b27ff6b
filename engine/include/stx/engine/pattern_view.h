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
  // Throws Error with a plain message for an unknown pattern or n, l, c out of range.
  void validate() const;
};

enum class PatternPart { a1, a2, both };

// The positions query `query` attends to: A1, A2 or A1 ∪ A2 (dense: every j <= query for all three).
std::vector<int64_t> attended_positions(const PatternSpec& spec, PatternPart part, int64_t query);

// Every position whose information reaches `query` through two layers of merged heads (A1 ∪ A2 in both):
// the union of A(k) over k in A(query). Ascending.
std::vector<int64_t> two_hop_reach(const PatternSpec& spec, int64_t query);

// |A(query)| for the pattern, against query + 1 for dense.
int64_t attended_count(const PatternSpec& spec, int64_t query);

}  // namespace stx::engine
