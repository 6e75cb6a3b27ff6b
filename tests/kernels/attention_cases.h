// The attention cases, written once: each runs on every backend (backend.h) against the double-precision
// reference. attention_cases() feed the forward, the backward and decoding at a few positions;
// decode_cases() are decoded at every position.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "stx/kernels/pattern.h"
#include "test_util.h"

namespace stx::test {

struct AttentionCase {
  int64_t batch = 1, heads = 1, seq_len = 1, head_dim = 32;
  stx::kernels::Pattern pattern = stx::kernels::Pattern::dense;
  int64_t l = 0, c = 0;
  stx::kernels::Combination mode = stx::kernels::Combination::merged;
  int layer = 0;
  int block = 64;
  Storage storage = Storage::contiguous;
  float scale = 0.0f;  // 0: the kernels' default 1/sqrt(head_dim)

  std::vector<stx::kernels::HeadPattern> patterns() const {
    return stx::kernels::layer_patterns(pattern, l, c, static_cast<int>(heads), mode, layer);
  }
  // A test name: letters, digits and underscores only. It also seeds the inputs, so a case keeps its
  // numbers when cases are added around it.
  std::string name() const {
    std::ostringstream s;
    s << stx::kernels::to_string(pattern);
    if (pattern != stx::kernels::Pattern::dense) {
      s << "_l" << l;
      if (pattern == stx::kernels::Pattern::fixed) s << "_c" << c;
      s << "_" << stx::kernels::to_string(mode);
      if (mode == stx::kernels::Combination::interleaved) s << layer;
    }
    s << "_n" << seq_len << "_d" << head_dim << "_b" << batch << "h" << heads << "_B" << block;
    if (storage == Storage::seq_major) s << "_strided_bthd";
    if (storage == Storage::seq_major_unpadded) s << "_bthd";
    if (scale > 0.0f) s << "_scale" << static_cast<int>(scale * 100);
    return s.str();
  }
};

// gtest prints a case by its name in failure messages.
inline void PrintTo(const AttentionCase& k, std::ostream* os) { *os << k.name(); }

inline AttentionCase make_case(int64_t n, int64_t head_dim, int64_t batch, int64_t heads,
                               stx::kernels::Pattern pattern, int64_t l, int64_t c,
                               stx::kernels::Combination mode, int layer, int block,
                               Storage storage = Storage::contiguous, float scale = 0.0f) {
  AttentionCase k;
  k.seq_len = n;
  k.head_dim = head_dim;
  k.batch = batch;
  k.heads = heads;
  k.pattern = pattern;
  k.l = l;
  k.c = c;
  k.mode = mode;
  k.layer = layer;
  k.block = block;
  k.storage = storage;
  k.scale = scale;
  return k;
}

// Both factorised patterns in every mode at one size: merged and interleaved (an even and an odd layer)
// with the shape of `base`, and multihead with its own head size and more heads (the fixed pattern gives
// each head its own summary offset, so more heads means more distinct heads).
inline void add_every_mode(std::vector<AttentionCase>& cases, AttentionCase base, int64_t c,
                           int64_t multihead_dim, int64_t multihead_heads) {
  using stx::kernels::Combination;
  for (stx::kernels::Pattern pattern : {stx::kernels::Pattern::strided, stx::kernels::Pattern::fixed}) {
    AttentionCase k = base;
    k.pattern = pattern;
    k.c = pattern == stx::kernels::Pattern::fixed ? c : 0;
    for (int layer : {-1, 0, 1}) {  // -1: merged
      k.mode = layer < 0 ? Combination::merged : Combination::interleaved;
      k.layer = layer < 0 ? 0 : layer;
      cases.push_back(k);
    }
    k.mode = Combination::multihead;
    k.layer = 0;
    k.head_dim = multihead_dim;
    k.heads = multihead_heads;
    cases.push_back(k);
  }
}

// The forward and backward cases: every pattern in every mode, awkward sizes (n = 1, 7, 113, 1000, 4097;
// head_dim 32 to 256), l and c that are not multiples of B (and one l that is), several heads, batch > 1,
// tensors read through strides and an explicit scale.
// Cost: the double reference is O(n^2) mask tests plus O(attended pairs * D), so n = 4097 runs with few heads.
inline std::vector<AttentionCase> attention_cases() {
  using stx::kernels::Combination;
  using stx::kernels::Pattern;
  const Combination merged = Combination::merged, inter = Combination::interleaved,
                    multi = Combination::multihead;
  std::vector<AttentionCase> cases = {
      // tiny sequences: one row, and fewer rows than a block
      make_case(1, 32, 2, 3, Pattern::strided, 37, 0, merged, 0, 16),
      make_case(1, 64, 1, 2, Pattern::fixed, 37, 5, multi, 0, 16),
      make_case(1, 64, 2, 2, Pattern::dense, 0, 0, merged, 0, 64),
      make_case(7, 64, 2, 2, Pattern::fixed, 6, 2, merged, 0, 16),
      make_case(7, 128, 2, 2, Pattern::dense, 0, 0, merged, 0, 128),
      make_case(7, 32, 1, 2, Pattern::strided, 3, 0, multi, 0, 32),
      make_case(7, 32, 2, 3, Pattern::dense, 0, 0, merged, 0, 16),
      make_case(7, 32, 2, 3, Pattern::dense, 0, 0, merged, 0, 16, Storage::seq_major_unpadded),
      // fixed A2 alone before the first summary cell (cells 12..15 of each 16): no row attends anything, so
      // the heads have no layout parts at all; out = 0, lse = -inf, zero gradients
      make_case(7, 64, 2, 2, Pattern::fixed, 16, 4, inter, 1, 16),
  };
  // n = 113, l = 37, c = 5, B = 16: every mode of both patterns
  add_every_mode(cases, make_case(113, 32, 2, 3, Pattern::strided, 37, 0, merged, 0, 16), 5, 64, 4);
  const std::vector<AttentionCase> more = {
      // n = 113: dense, other l, c and B, and head sizes up to 256
      make_case(113, 64, 2, 2, Pattern::dense, 0, 0, merged, 0, 32),
      make_case(113, 64, 2, 3, Pattern::strided, 10, 0, merged, 0, 16),
      make_case(113, 128, 2, 2, Pattern::strided, 11, 0, inter, 0, 32),
      make_case(113, 256, 2, 2, Pattern::strided, 12, 0, merged, 0, 32),
      make_case(113, 64, 2, 2, Pattern::fixed, 20, 6, inter, 0, 16),
      make_case(113, 64, 2, 2, Pattern::fixed, 20, 6, inter, 1, 16),
      // non-contiguous: a [B, T, H, D + 8] tensor read through strides; one with an explicit scale
      make_case(113, 64, 2, 3, Pattern::fixed, 37, 5, multi, 0, 16, Storage::seq_major),
      make_case(113, 32, 2, 2, Pattern::strided, 37, 0, merged, 0, 32, Storage::seq_major, 0.3f),
      // n = 1000, l = 100, c = 12, B = 32, head_dim 128
      make_case(1000, 128, 2, 2, Pattern::strided, 100, 0, merged, 0, 32),
      make_case(1000, 128, 2, 2, Pattern::strided, 100, 0, inter, 1, 32),
      make_case(1000, 128, 2, 2, Pattern::fixed, 100, 12, merged, 0, 32),
      make_case(1000, 128, 2, 2, Pattern::fixed, 100, 12, inter, 1, 32),
      make_case(1000, 64, 1, 4, Pattern::fixed, 100, 12, multi, 0, 64),
      make_case(1000, 64, 1, 2, Pattern::strided, 31, 0, multi, 0, 64, Storage::seq_major),
      make_case(1000, 32, 1, 2, Pattern::dense, 0, 0, merged, 0, 64),
      // n = 1000 with other l, c and B; heads inner without padding
      make_case(1000, 128, 2, 2, Pattern::dense, 0, 0, merged, 0, 64),
      make_case(1000, 32, 2, 2, Pattern::strided, 30, 0, merged, 0, 32, Storage::seq_major_unpadded),
      make_case(1000, 64, 2, 2, Pattern::strided, 33, 0, inter, 1, 64),
      make_case(1000, 64, 2, 4, Pattern::strided, 30, 0, multi, 0, 16),
      make_case(1000, 128, 2, 2, Pattern::fixed, 40, 7, merged, 0, 32),
      make_case(1000, 32, 2, 4, Pattern::fixed, 48, 12, multi, 0, 16, Storage::seq_major_unpadded),
      // n = 4097: one past a power of two, l near sqrt(n) and not a multiple of B; and l = B
      make_case(4097, 64, 1, 1, Pattern::dense, 0, 0, merged, 0, 64),
      make_case(4097, 128, 1, 2, Pattern::strided, 65, 0, merged, 0, 64),
      make_case(4097, 64, 2, 1, Pattern::strided, 65, 0, inter, 0, 128),
      make_case(4097, 64, 2, 2, Pattern::strided, 64, 0, merged, 0, 64),
      make_case(4097, 64, 1, 2, Pattern::fixed, 100, 20, multi, 0, 64),
      make_case(4097, 32, 1, 2, Pattern::fixed, 128, 32, inter, 1, 128),
      make_case(4097, 32, 2, 2, Pattern::fixed, 128, 32, merged, 0, 128),
  };
  cases.insert(cases.end(), more.begin(), more.end());
  return cases;
}

// The decode cases, decoded at every position with the cache filled one position at a time.
inline std::vector<AttentionCase> decode_cases() {
  using stx::kernels::Combination;
  using stx::kernels::Pattern;
  const Combination merged = Combination::merged;
  std::vector<AttentionCase> cases = {make_case(150, 64, 2, 3, Pattern::dense, 0, 0, merged, 0, 16)};
  add_every_mode(cases, make_case(150, 64, 2, 3, Pattern::strided, 37, 0, merged, 0, 16), 5, 32, 4);
  const std::vector<AttentionCase> more = {
      // the audio models' head size: 6 vectors kept in registers with AVX2, 3 with AVX-512, 12 (the general
      // path) with the portable build; and 5 vectors with AVX2, not whole vectors with AVX-512
      make_case(150, 48, 2, 3, Pattern::strided, 37, 0, merged, 0, 16),
      make_case(150, 40, 2, 3, Pattern::fixed, 37, 5, merged, 0, 16),
      // the cache stored [B, capacity, H, D + 8], read through strides
      make_case(300, 128, 1, 2, Pattern::fixed, 100, 12, merged, 0, 32, Storage::seq_major),
      make_case(300, 32, 2, 2, Pattern::strided, 17, 0, Combination::multihead, 0, 64, Storage::seq_major),
      // fewer positions than a block, A2 alone: the first four attend nothing (out = 0, lse = -inf)
      make_case(5, 128, 1, 2, Pattern::fixed, 6, 2, Combination::interleaved, 1, 16),
  };
  cases.insert(cases.end(), more.begin(), more.end());
  return cases;
}

// Seeds differ per case so the cases do not all share one set of inputs; every backend gets the same.
inline std::mt19937 case_rng(const AttentionCase& k, uint32_t salt) {
  return std::mt19937(static_cast<uint32_t>(std::hash<std::string>{}(k.name())) ^ salt);
}

}  // namespace stx::test
