// Block layouts: expanding every listed block (full, or masked bit by bit) back to (query, key) positions
// must give exactly each head's element set, once. Also the list structure, the cache and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "stx/kernels/error.h"
#include "stx/kernels/layout.h"
#include "stx/kernels/pattern.h"
#include "test_util.h"

namespace {

using namespace stx::kernels;
using stx::test::error_message;
using stx::test::mentions;

bool mask_bit(const uint64_t* mask, int64_t words, int64_t row, int64_t col) {
  return (mask[row * words + col / 64] >> (col % 64)) & 1u;
}

// The CSR lists of one part are well formed: sizes, bounds, strictly ascending rows and columns, and
// the column lists are exactly the transpose of the row lists (same blocks, same mask indices).
void expect_lists_well_formed(const LayoutPart& part) {
  const int64_t nb = part.num_blocks;
  ASSERT_EQ(part.row_begin.size(), static_cast<size_t>(nb + 1));
  ASSERT_EQ(part.col_begin.size(), static_cast<size_t>(nb + 1));
  ASSERT_EQ(part.row_begin.front(), 0);
  ASSERT_EQ(part.col_begin.front(), 0);
  ASSERT_EQ(part.row_begin.back(), static_cast<int64_t>(part.row_key.size()));
  ASSERT_EQ(part.col_begin.back(), static_cast<int64_t>(part.col_query.size()));
  ASSERT_EQ(part.row_mask.size(), part.row_key.size());
  ASSERT_EQ(part.col_mask.size(), part.col_query.size());
  const int64_t mask_count = static_cast<int64_t>(part.masks.size()) / (part.block * part.mask_words);
  ASSERT_EQ(static_cast<int64_t>(part.masks.size()), mask_count * part.block * part.mask_words);

  using Entry = std::tuple<int32_t, int32_t, int32_t>;  // query block, key block, mask
  std::vector<Entry> from_rows, from_cols;
  for (int64_t qb = 0; qb < nb; ++qb) {
    ASSERT_LE(part.row_begin[qb], part.row_begin[qb + 1]);
    for (int64_t e = part.row_begin[qb]; e < part.row_begin[qb + 1]; ++e) {
      ASSERT_GE(part.row_key[e], 0);
      ASSERT_LT(part.row_key[e], nb);
      ASSERT_LE(part.row_key[e], qb) << "a causal part never lists a key block after its query block";
      if (e > part.row_begin[qb]) {
        ASSERT_LT(part.row_key[e - 1], part.row_key[e]) << "row list not ascending";
      }
      ASSERT_GE(part.row_mask[e], -1);
      ASSERT_LT(part.row_mask[e], mask_count);
      from_rows.emplace_back(static_cast<int32_t>(qb), part.row_key[e], part.row_mask[e]);
    }
  }
  for (int64_t kb = 0; kb < nb; ++kb) {
    ASSERT_LE(part.col_begin[kb], part.col_begin[kb + 1]);
    for (int64_t e = part.col_begin[kb]; e < part.col_begin[kb + 1]; ++e) {
      if (e > part.col_begin[kb]) {
        ASSERT_LT(part.col_query[e - 1], part.col_query[e]) << "column list not ascending";
      }
      from_cols.emplace_back(part.col_query[e], static_cast<int32_t>(kb), part.col_mask[e]);
    }
  }
  std::sort(from_cols.begin(), from_cols.end());  // from_rows is already in (qb, kb) order
  EXPECT_EQ(from_rows, from_cols) << "the column lists are not the transpose of the row lists";
}

// A mask is only for a partial block: it has at least one attended element and at least one cell of
// the B x B block that is not (unattended or past the end), and no bit past the end of the part.
void expect_masks_partial(const LayoutPart& part) {
  const int64_t B = part.block, words = part.mask_words;
  for (int64_t qb = 0; qb < part.num_blocks; ++qb) {
    for (int64_t e = part.row_begin[qb]; e < part.row_begin[qb + 1]; ++e) {
      if (part.row_mask[e] < 0) continue;
      const int64_t kb = part.row_key[e];
      const uint64_t* mask = part.mask(part.row_mask[e]);
      int64_t set = 0;
      for (int64_t r = 0; r < B; ++r) {
        for (int64_t w = 0; w < words; ++w) {
          for (int64_t bit = 0; bit < 64; ++bit) {
            if (!((mask[r * words + w] >> bit) & 1u)) continue;
            const int64_t c = w * 64 + bit;
            ++set;
            ASSERT_LT(c, B) << "mask bit past the block width";
            ASSERT_LT(qb * B + r, part.length) << "mask bit on a padding row";
            ASSERT_LT(kb * B + c, part.length) << "mask bit on a padding column";
          }
        }
      }
      EXPECT_GT(set, 0) << "a listed block attends nothing (qb " << qb << ", kb " << kb << ")";
      EXPECT_LT(set, B * B) << "a fully attended block carries a mask (qb " << qb << ", kb " << kb << ")";
    }
  }
}

// Expands every part of one head back to (i, j) pairs and checks they are exactly {(i, j) : attends},
// each pair held once across parts and each pair allowed by its part's rule.
void expect_head_matches_pattern(const Layout& layout, int64_t h) {
  const int64_t n = layout.n;
  const HeadPattern& pattern = layout.heads[h];
  SCOPED_TRACE("head " + std::to_string(h) + ": " + describe(pattern));
  std::vector<uint8_t> held(static_cast<size_t>(n * n), 0);
  for (const LayoutPart& part : layout.head(h).parts) {
    SCOPED_TRACE(std::string(part.view == View::natural ? "natural" : "columns") + " part");
    ASSERT_EQ(part.block, layout.block);
    ASSERT_EQ(part.step, part.view == View::natural ? 1 : pattern.stride);
    ASSERT_EQ(part.lanes, part.view == View::natural ? 1 : std::min(pattern.stride, n));
    ASSERT_EQ(part.length, (n + part.step - 1) / part.step);
    ASSERT_EQ(part.num_blocks, (part.length + part.block - 1) / part.block);
    expect_lists_well_formed(part);
    expect_masks_partial(part);
    const int64_t B = part.block;
    for (int64_t lane = 0; lane < part.lanes; ++lane) {
      const int64_t lane_length = part.lane_length(lane, n);
      for (int64_t qb = 0; qb < part.num_blocks; ++qb) {
        for (int64_t e = part.row_begin[qb]; e < part.row_begin[qb + 1]; ++e) {
          const int64_t kb = part.row_key[e];
          const uint64_t* mask = part.row_mask[e] < 0 ? nullptr : part.mask(part.row_mask[e]);
          for (int64_t r = 0; r < B && qb * B + r < lane_length; ++r) {
            for (int64_t c = 0; c < B && kb * B + c < lane_length; ++c) {
              if (mask != nullptr && !mask_bit(mask, part.mask_words, r, c)) continue;
              const int64_t i = part.position(lane, qb * B + r), j = part.position(lane, kb * B + c);
              ASSERT_LT(i, n);
              ASSERT_LT(j, n);
              ASSERT_TRUE(part.rule.holds(i, j)) << "pair (" << i << ", " << j << ") outside its part's rule"
                                                 << (mask ? "" : " in a full block");
              ASSERT_EQ(held[i * n + j]++, 0) << "pair (" << i << ", " << j << ") held twice";
            }
          }
        }
      }
    }
  }
  int64_t pairs = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      ASSERT_EQ(held[i * n + j] == 1, attends(pattern, i, j))
          << "pair (" << i << ", " << j << "): layout " << int(held[i * n + j]) << ", pattern "
          << attends(pattern, i, j);
      pairs += held[i * n + j];
    }
  }
  int64_t expected = 0;
  for (int64_t i = 0; i < n; ++i) expected += attended_count(pattern, i);
  EXPECT_EQ(pairs, expected);
}

void expect_layout_matches_patterns(int64_t n, int block, const std::vector<HeadPattern>& heads) {
  SCOPED_TRACE("n=" + std::to_string(n) + " B=" + std::to_string(block));
  const auto layout = build_layout(n, block, heads);
  ASSERT_EQ(layout->n, n);
  ASSERT_EQ(layout->block, block);
  ASSERT_EQ(layout->heads, heads);
  ASSERT_EQ(layout->num_heads(), static_cast<int>(heads.size()));
  ASSERT_EQ(layout->head_to_unique.size(), heads.size());
  for (size_t a = 0; a < heads.size(); ++a) {
    ASSERT_GE(layout->head_to_unique[a], 0);
    ASSERT_LT(layout->head_to_unique[a], static_cast<int>(layout->unique.size()));
    for (size_t b = 0; b < a; ++b)
      EXPECT_EQ(heads[a] == heads[b], layout->head_to_unique[a] == layout->head_to_unique[b])
          << a << " vs " << b;
  }
  int64_t pairs = 0;
  for (int64_t h = 0; h < layout->num_heads(); ++h) {
    expect_head_matches_pattern(*layout, h);
    for (int64_t i = 0; i < n; ++i) pairs += attended_count(heads[h], i);
  }
  EXPECT_EQ(layout->attended_pairs(), pairs);
}

const int64_t kSizes[] = {1, 7, 100, 257, 300};

class LayoutBlocks : public ::testing::TestWithParam<int> {};

TEST_P(LayoutBlocks, DenseMatchesElementSet) {
  for (int64_t n : kSizes) expect_layout_matches_patterns(n, GetParam(), {HeadPattern::dense_causal()});
}

TEST_P(LayoutBlocks, StridedMatchesElementSetInEveryMode) {
  for (int64_t n : kSizes) {
    for (int64_t l : {5, 37, 100}) {
      SCOPED_TRACE("l=" + std::to_string(l));
      expect_layout_matches_patterns(n, GetParam(),
                                     layer_patterns(Pattern::strided, l, 0, 2, Combination::merged));
      expect_layout_matches_patterns(n, GetParam(),
                                     layer_patterns(Pattern::strided, l, 0, 1, Combination::interleaved, 0));
      expect_layout_matches_patterns(n, GetParam(),
                                     layer_patterns(Pattern::strided, l, 0, 1, Combination::interleaved, 1));
      expect_layout_matches_patterns(n, GetParam(),
                                     layer_patterns(Pattern::strided, l, 0, 3, Combination::multihead));
    }
  }
}

TEST_P(LayoutBlocks, FixedMatchesElementSetInEveryMode) {
  const int64_t lcs[][2] = {{6, 2}, {37, 5}, {100, 12}, {16, 16}};
  for (int64_t n : kSizes) {
    for (const auto& lc : lcs) {
      const int64_t l = lc[0], c = lc[1];
      SCOPED_TRACE("l=" + std::to_string(l) + " c=" + std::to_string(c));
      expect_layout_matches_patterns(n, GetParam(),
                                     layer_patterns(Pattern::fixed, l, c, 2, Combination::merged));
      expect_layout_matches_patterns(n, GetParam(),
                                     layer_patterns(Pattern::fixed, l, c, 1, Combination::interleaved, 0));
      expect_layout_matches_patterns(n, GetParam(),
                                     layer_patterns(Pattern::fixed, l, c, 1, Combination::interleaved, 1));
      expect_layout_matches_patterns(n, GetParam(),
                                     layer_patterns(Pattern::fixed, l, c, 4, Combination::multihead));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, LayoutBlocks, ::testing::Values(16, 32, 64, 128),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "B" + std::to_string(info.param);
                         });

TEST(Layout, MultiheadHeadsGetTheirOwnPatterns) {
  // strided: heads alternate A1 / A2, and the two distinct patterns get two unique head layouts
  const auto strided =
      build_layout(200, 16, layer_patterns(Pattern::strided, 37, 0, 4, Combination::multihead));
  EXPECT_EQ(strided->unique.size(), 2u);
  EXPECT_EQ(strided->heads[0].subset, Subset::a1);
  EXPECT_EQ(strided->heads[1].subset, Subset::a2);
  EXPECT_EQ(strided->head_to_unique[0], strided->head_to_unique[2]);
  EXPECT_NE(strided->head_to_unique[0], strided->head_to_unique[1]);
  // A1 reads the band in natural order; A2 reads columns of step l.
  ASSERT_EQ(strided->head(0).parts.size(), 1u);
  EXPECT_EQ(strided->head(0).parts[0].view, View::natural);
  ASSERT_EQ(strided->head(1).parts.size(), 1u);
  EXPECT_EQ(strided->head(1).parts[0].view, View::columns);
  // fixed: four heads with four distinct summary offsets, hence four unique layouts
  const auto fixed = build_layout(200, 16, layer_patterns(Pattern::fixed, 37, 5, 4, Combination::multihead));
  EXPECT_EQ(fixed->unique.size(), 4u);
  for (int h = 0; h < 4; ++h)
    for (int g = 0; g < h; ++g) EXPECT_NE(fixed->heads[h].summary_offset, fixed->heads[g].summary_offset);
  // interleaved: layer 0 and layer 1 hold different element sets
  const auto layer0 =
      build_layout(200, 32, layer_patterns(Pattern::fixed, 37, 5, 2, Combination::interleaved, 0));
  const auto layer1 =
      build_layout(200, 32, layer_patterns(Pattern::fixed, 37, 5, 2, Combination::interleaved, 1));
  EXPECT_EQ(layer0->heads[0].subset, Subset::a1);
  EXPECT_EQ(layer1->heads[0].subset, Subset::a2);
  EXPECT_NE(layer0->attended_pairs(), layer1->attended_pairs());
}

TEST(Layout, SparseLayoutsVisitFewerBlocksThanDense) {
  const int64_t n = 4096;
  const auto dense = build_layout(n, 64, {HeadPattern::dense_causal()});
  const auto strided = build_layout(n, 64, {HeadPattern::strided(64)});
  const auto fixed = build_layout(n, 64, {HeadPattern::fixed(128, 32)});
  EXPECT_EQ(dense->attended_pairs(), n * (n + 1) / 2);
  EXPECT_LT(strided->attended_pairs() * 10, dense->attended_pairs());
  EXPECT_LT(strided->visited_blocks() * 4, dense->visited_blocks());
  // fixed l = 128, c = 32 with B = 64: the summary cells sit in every other key block, so about half.
  EXPECT_LT(fixed->attended_pairs() * 3, dense->attended_pairs());
  EXPECT_LT(fixed->visited_blocks(), dense->visited_blocks());
}

TEST(Layout, CacheIsKeyedOnEveryField) {
  const int64_t n = 300;
  const int block = 32;
  const std::vector<HeadPattern> base = {HeadPattern::fixed(37, 5, Subset::both, 0),
                                         HeadPattern::fixed(37, 5)};
  // given the same arguments, the same object
  const auto first = cached_layout(n, block, base);
  const auto again = cached_layout(n, block, base);
  EXPECT_EQ(first.get(), again.get());

  // when any single field differs, a different object built for those arguments
  auto expect_distinct = [&](int64_t n2, int block2, const std::vector<HeadPattern>& heads2,
                             const char* what) {
    SCOPED_TRACE(what);
    const auto other = cached_layout(n2, block2, heads2);
    EXPECT_NE(other.get(), first.get());
    EXPECT_EQ(other->n, n2);
    EXPECT_EQ(other->block, block2);
    EXPECT_EQ(other->heads, heads2);
    EXPECT_EQ(cached_layout(n2, block2, heads2).get(), other.get());
  };
  auto with = [&](const std::function<void(HeadPattern&)>& change) {
    std::vector<HeadPattern> heads = base;
    change(heads[1]);
    return heads;
  };
  expect_distinct(n + 1, block, base, "n");
  expect_distinct(n, 64, base, "block");
  expect_distinct(n, block, with([](HeadPattern& p) { p.stride = 38; }), "stride");
  expect_distinct(n, block, with([](HeadPattern& p) { p.summary = 6; }), "summary c");
  expect_distinct(n, block, with([](HeadPattern& p) { p.summary_offset = 5; }), "summary offset");
  expect_distinct(n, block, with([](HeadPattern& p) { p.subset = Subset::a1; }), "subset");
  expect_distinct(n, block, with([](HeadPattern& p) {
                    p.pattern = Pattern::strided;
                    p.summary = 0;
                  }),
                  "pattern");
  expect_distinct(n, block, {base[0]}, "head count");
  expect_distinct(n, block, {base[0], base[1], base[1]}, "head count");
  EXPECT_EQ(cached_layout(n, block, base).get(), first.get());
}

TEST(Layout, BadInputThrowsNamingTheValue) {
  const std::vector<HeadPattern> dense = {HeadPattern::dense_causal()};
  EXPECT_TRUE(mentions(error_message([&] { build_layout(100, 48, dense); }), {"48"}));
  EXPECT_TRUE(mentions(error_message([&] { build_layout(0, 64, dense); }), {"got 0"}));
  EXPECT_TRUE(mentions(error_message([&] { build_layout(-5, 64, dense); }), {"-5"}));
  EXPECT_TRUE(mentions(error_message([&] { build_layout(100, 64, {}); }), {"head"}));
  EXPECT_TRUE(mentions(error_message([&] { build_layout(100, 64, {HeadPattern::fixed(6, 7)}); }), {"c = 7"}));
  EXPECT_TRUE(mentions(error_message([&] { build_layout(100, 64, {HeadPattern::fixed(6, 0)}); }), {"c = 0"}));
  EXPECT_TRUE(mentions(error_message([&] { build_layout(100, 64, {HeadPattern::strided(0)}); }), {"l = 0"}));
  EXPECT_TRUE(mentions(error_message([&] { build_layout(100, 64, {HeadPattern::fixed(0, 1)}); }), {"l = 0"}));
  // one bad head among good ones is still found
  EXPECT_TRUE(mentions(error_message([&] {
                         cached_layout(100, 64, {HeadPattern::strided(8), HeadPattern::strided(0)});
                       }),
                       {"l = 0"}));
}

}  // namespace
