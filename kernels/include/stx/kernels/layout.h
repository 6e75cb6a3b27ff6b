// Block layouts: a head's element pattern compiled to lists of B x B blocks.
//
// A head's attention is split into disjoint *parts*. Each part reads the sequence through a view and
// holds, for each query block of that view, the ascending list of key blocks it touches (and the
// transposed lists, for the backward pass). Blocks whose every element is attended carry no mask;
// partial blocks carry a bit mask, so causality is exact per element.
//
// Views:
//   natural  position = index. Dense, fixed, and the strided A1 band use it.
//   columns  lane r (0 <= r < l) reads positions r, r + l, r + 2l, ... The strided A2 set is "every
//            l-th position back", which in natural order would touch every other key block with one
//            useful element per row; read with step l it is plain causal attention over ceil(n/l)
//            positions, so its blocks are full.
// A strided merged head is {natural: A1} + {columns: A2 minus A1}; the kernels merge the parts
// exactly through their log-sum-exp.
//
// Usage:
//   auto layout = stx::kernels::cached_layout(8192, 64, stx::kernels::layer_patterns(
//       stx::kernels::Pattern::fixed, 128, 32, /*heads=*/4, stx::kernels::Combination::merged));
//   params.layout = layout.get();
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "stx/kernels/pattern.h"

namespace stx::kernels {

enum class View : int { natural = 0, columns = 1 };

// Which element pairs (i, j) a part holds: in(include) and not (exclude_a1 and in A1).
struct PartRule {
  HeadPattern pattern;
  Subset include = Subset::both;
  bool exclude_a1 = false;
  bool holds(int64_t i, int64_t j) const;
};

struct LayoutPart {
  View view = View::natural;
  PartRule rule;
  int64_t step = 1;        // distance between consecutive positions of a lane: 1 (natural) or l (columns)
  int64_t lanes = 1;       // 1 (natural) or min(l, n) (columns)
  int64_t length = 0;      // positions in the longest lane: n (natural) or ceil(n / l) (columns)
  int64_t block = 0;       // B
  int64_t num_blocks = 0;  // ceil(length / B), the same for query and key blocks

  // Row lists (CSR): query block qb touches key blocks row_key[row_begin[qb] .. row_begin[qb + 1]).
  std::vector<int64_t> row_begin;  // [num_blocks + 1]
  std::vector<int32_t> row_key;    // ascending within a row
  std::vector<int32_t> row_mask;   // -1 for a full block, else the index of its mask
  // Column lists, the transpose: key block kb is touched by query blocks col_query[col_begin[kb] ..).
  std::vector<int64_t> col_begin;  // [num_blocks + 1]
  std::vector<int32_t> col_query;  // ascending within a column
  std::vector<int32_t> col_mask;   // the same mask indices as the row lists
  // Masks of partial blocks: B rows of mask_words 64-bit words; bit c of row r is set when query r
  // of the block attends key c of the block. Padding rows and columns past the sequence end are 0.
  int64_t mask_words = 0;
  std::vector<uint64_t> masks;
  // The same masks transposed (bit r of row c: query r attends key c), for kernels that hold S^T.
  std::vector<uint64_t> masks_transposed;

  int64_t lane_length(int64_t lane, int64_t n) const { return (n - lane + step - 1) / step; }
  int64_t position(int64_t lane, int64_t index) const { return lane + index * step; }
  const uint64_t* mask(int32_t index) const;
  const uint64_t* mask_transposed(int32_t index) const;
};

struct HeadLayout {
  std::vector<LayoutPart> parts;
};

class Layout {
 public:
  int64_t n = 0;
  int block = 0;
  std::vector<HeadPattern> heads;  // one per head
  std::vector<int> head_to_unique; // heads with equal patterns share one HeadLayout
  std::vector<HeadLayout> unique;

  const HeadLayout& head(int64_t h) const { return unique[head_to_unique[h]]; }
  int num_heads() const { return static_cast<int>(heads.size()); }
  // Attended (query, key) pairs summed over heads: the useful work, 4 * head_dim FLOPs each forward.
  int64_t attended_pairs() const;
  // Blocks visited summed over heads and parts (a block costs the same whether full or partial).
  int64_t visited_blocks() const;

  // A device-side copy that the CUDA backend attaches on first use; opaque here.
  mutable std::mutex device_mutex;
  mutable std::shared_ptr<void> device_copy;
};

// Builds the layout of sequence length n with block size B in {16, 32, 64, 128} and one pattern per head.
// Throws Error for a bad block size, n < 1, no heads, or an invalid pattern.
std::shared_ptr<const Layout> build_layout(int64_t n, int block, const std::vector<HeadPattern>& heads);

// The same, cached on every argument (n, B and each head's full pattern). Thread-safe.
std::shared_ptr<const Layout> cached_layout(int64_t n, int block, const std::vector<HeadPattern>& heads);

}  // namespace stx::kernels
