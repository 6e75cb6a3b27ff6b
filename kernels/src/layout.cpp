#include "stx/kernels/layout.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "stx/kernels/error.h"

namespace stx::kernels {
namespace {

// The attended keys of one query row of a part, as ascending closed intervals in the part's own indices.
void part_ranges(const LayoutPart& part, int64_t row, std::vector<KeyRange>& out) {
  if (part.view == View::natural) {
    HeadPattern p = part.rule.pattern;
    p.subset = part.rule.include;
    attended_ranges(p, row, out);
    return;
  }
  // Columns of a strided head: within one lane, A2 is every earlier index; A1 adds index row - 1 and row.
  out.clear();
  const int64_t last = part.rule.exclude_a1 ? row - 2 : row;
  if (last >= 0) out.push_back({0, last});
}

// Sets bits lo..hi (inclusive) of a bit row, a word at a time.
void set_bits(uint64_t* words, int64_t lo, int64_t hi) {
  for (int64_t w = lo / 64; w <= hi / 64; ++w) {
    const int64_t first = std::max(lo, w * 64) - w * 64, last = std::min(hi, w * 64 + 63) - w * 64;
    const uint64_t upto_last = last == 63 ? ~uint64_t{0} : (uint64_t{1} << (last + 1)) - 1;
    words[w] |= upto_last & ~((uint64_t{1} << first) - 1);
  }
}

void build_part(LayoutPart& part, int64_t n, int block) {
  const int64_t B = block;
  part.length = part.view == View::natural ? n : (n + part.step - 1) / part.step;
  part.lanes = part.view == View::natural ? 1 : std::min(part.step, n);
  part.num_blocks = (part.length + B - 1) / B;
  part.mask_words = (B + 63) / 64;
  part.block = B;
  const int64_t nb = part.num_blocks;

  std::vector<int64_t> count(static_cast<size_t>(nb), 0);  // attended elements per key block of this row block
  std::vector<int32_t> touched;
  const int64_t mask_size = B * part.mask_words;
  std::vector<int32_t> mask_of(static_cast<size_t>(nb), -1);  // key block -> its slot in `pending`
  std::vector<uint64_t> pending;
  std::map<std::vector<uint64_t>, int32_t> unique_masks;
  std::vector<KeyRange> ranges;
  part.row_begin.assign(1, 0);

  for (int64_t qb = 0; qb < nb; ++qb) {
    const int64_t row_first = qb * B, row_end = std::min(part.length, row_first + B);
    touched.clear();
    for (int64_t row = row_first; row < row_end; ++row) {
      part_ranges(part, row, ranges);
      for (const KeyRange& r : ranges) {
        for (int64_t kb = r.first / B; kb <= r.last / B; ++kb) {
          int64_t lo = std::max(r.first, kb * B), hi = std::min(r.last, kb * B + B - 1);
          if (count[kb] == 0) touched.push_back(static_cast<int32_t>(kb));
          count[kb] += hi - lo + 1;
        }
      }
    }
    std::sort(touched.begin(), touched.end());
    // Masks of this row of blocks are built in `pending`, then deduplicated: the patterns repeat every
    // l positions, so a long sequence has many partial blocks but few distinct masks.
    pending.clear();
    for (int32_t kb : touched) {
      const bool full = count[kb] == (row_end - row_first) * B && row_end - row_first == B;
      count[kb] = 0;
      part.row_key.push_back(kb);
      part.row_mask.push_back(-1);
      if (!full) {
        mask_of[kb] = static_cast<int32_t>(pending.size() / mask_size);
        pending.resize(pending.size() + mask_size, 0);
      }
    }
    if (pending.empty()) {
      part.row_begin.push_back(static_cast<int64_t>(part.row_key.size()));
      continue;
    }
    // One more pass over the rows sets the bits of every partial block, so the cost is rows x ranges,
    // not partial blocks x rows x ranges (a fixed-pattern row has i / l ranges).
    for (int64_t row = row_first; row < row_end; ++row) {
      part_ranges(part, row, ranges);
      for (const KeyRange& r : ranges) {
        for (int64_t kb = r.first / B; kb <= r.last / B; ++kb) {
          if (mask_of[kb] < 0) continue;
          uint64_t* row_bits = pending.data() + mask_of[kb] * mask_size + (row - row_first) * part.mask_words;
          set_bits(row_bits, std::max(r.first, kb * B) - kb * B, std::min(r.last, kb * B + B - 1) - kb * B);
        }
      }
    }
    for (size_t e = static_cast<size_t>(part.row_begin.back()); e < part.row_key.size(); ++e) {
      int32_t& slot = mask_of[part.row_key[e]];
      if (slot < 0) continue;
      const uint64_t* bits = pending.data() + slot * mask_size;
      const std::vector<uint64_t> key(bits, bits + mask_size);
      auto found = unique_masks.find(key);
      if (found == unique_masks.end()) {
        found = unique_masks.emplace(key, static_cast<int32_t>(part.masks.size() / mask_size)).first;
        part.masks.insert(part.masks.end(), bits, bits + mask_size);
      }
      part.row_mask[e] = found->second;
      slot = -1;
    }
    part.row_begin.push_back(static_cast<int64_t>(part.row_key.size()));
  }

  part.masks_transposed.assign(part.masks.size(), 0);
  for (size_t m = 0; m < part.masks.size() / mask_size; ++m) {
    const uint64_t* src = part.masks.data() + m * mask_size;
    uint64_t* dst = part.masks_transposed.data() + m * mask_size;
    for (int64_t r = 0; r < B; ++r)
      for (int64_t c = 0; c < B; ++c)
        if ((src[r * part.mask_words + c / 64] >> (c % 64)) & 1)
          dst[c * part.mask_words + r / 64] |= uint64_t{1} << (r % 64);
  }

  // The transpose, by counting sort; rows are visited in order, so each column list comes out ascending.
  part.col_begin.assign(static_cast<size_t>(nb + 1), 0);
  for (int32_t kb : part.row_key) part.col_begin[kb + 1]++;
  for (int64_t kb = 0; kb < nb; ++kb) part.col_begin[kb + 1] += part.col_begin[kb];
  part.col_query.resize(part.row_key.size());
  part.col_mask.resize(part.row_key.size());
  std::vector<int64_t> fill(part.col_begin.begin(), part.col_begin.end() - 1);
  for (int64_t qb = 0; qb < nb; ++qb) {
    for (int64_t e = part.row_begin[qb]; e < part.row_begin[qb + 1]; ++e) {
      int64_t at = fill[part.row_key[e]]++;
      part.col_query[at] = static_cast<int32_t>(qb);
      part.col_mask[at] = part.row_mask[e];
    }
  }
}

HeadLayout build_head(const HeadPattern& p, int64_t n, int block) {
  HeadLayout head;
  auto add = [&](View view, Subset include, bool exclude_a1) {
    LayoutPart part;
    part.view = view;
    part.rule = PartRule{p, include, exclude_a1};
    part.step = view == View::natural ? 1 : p.stride;
    build_part(part, n, block);
    if (!part.row_key.empty()) head.parts.push_back(std::move(part));
  };
  if (p.pattern != Pattern::strided) {
    add(View::natural, p.pattern == Pattern::dense ? Subset::both : p.subset, false);
    return head;
  }
  if (p.subset != Subset::a2) add(View::natural, Subset::a1, false);
  if (p.subset != Subset::a1) add(View::columns, Subset::a2, p.subset == Subset::both);
  return head;
}

}  // namespace

bool PartRule::holds(int64_t i, int64_t j) const {
  HeadPattern p = pattern;
  p.subset = include;
  if (!attends(p, i, j)) return false;
  return !(exclude_a1 && in_a1(pattern, i, j));
}

const uint64_t* LayoutPart::mask(int32_t index) const {
  return masks.data() + static_cast<size_t>(index) * static_cast<size_t>(block * mask_words);
}

const uint64_t* LayoutPart::mask_transposed(int32_t index) const {
  return masks_transposed.data() + static_cast<size_t>(index) * static_cast<size_t>(block * mask_words);
}

int64_t Layout::attended_pairs() const {
  int64_t total = 0;
  for (const HeadPattern& p : heads)
    for (int64_t i = 0; i < n; ++i) total += attended_count(p, i);
  return total;
}

int64_t Layout::visited_blocks() const {
  int64_t total = 0;
  for (int64_t h = 0; h < num_heads(); ++h)
    for (const LayoutPart& part : head(h).parts)
      total += static_cast<int64_t>(part.row_key.size()) * part.lanes;
  return total;
}

std::shared_ptr<const Layout> build_layout(int64_t n, int block, const std::vector<HeadPattern>& heads) {
  STX_KERNEL_CHECK(n >= 1, "a layout needs a sequence length n >= 1, got " + std::to_string(n));
  STX_KERNEL_CHECK(block == 16 || block == 32 || block == 64 || block == 128,
                   "the block size must be 16, 32, 64 or 128, got " + std::to_string(block));
  STX_KERNEL_CHECK(!heads.empty(), "a layout needs at least one head pattern");
  STX_KERNEL_CHECK(n < (int64_t{1} << 31) * block, "sequence length " + std::to_string(n) + " is too long");
  auto layout = std::make_shared<Layout>();
  layout->n = n;
  layout->block = block;
  layout->heads = heads;
  for (const HeadPattern& p : heads) {
    validate(p);
    auto same = std::find(heads.begin(), heads.end(), p);
    int first = static_cast<int>(same - heads.begin());
    if (first < static_cast<int>(layout->head_to_unique.size())) {
      layout->head_to_unique.push_back(layout->head_to_unique[first]);
    } else {
      layout->head_to_unique.push_back(static_cast<int>(layout->unique.size()));
      layout->unique.push_back(build_head(p, n, block));
    }
  }
  return layout;
}

std::shared_ptr<const Layout> cached_layout(int64_t n, int block, const std::vector<HeadPattern>& heads) {
  using Key = std::tuple<int64_t, int, std::vector<std::tuple<int, int64_t, int64_t, int64_t, int>>>;
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const Layout>> cache;
  std::vector<std::tuple<int, int64_t, int64_t, int64_t, int>> fields;
  for (const HeadPattern& p : heads)
    fields.emplace_back(static_cast<int>(p.pattern), p.stride, p.summary, p.summary_offset,
                        static_cast<int>(p.subset));
  Key key{n, block, fields};
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto layout = build_layout(n, block, heads);  // built outside the lock: large layouts take a while
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() >= 64) cache.clear();  // a model uses a handful; a sweep must not grow without bound
  return cache.emplace(key, layout).first->second;
}

}  // namespace stx::kernels
