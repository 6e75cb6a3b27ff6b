// The CPU kernels, written once and compiled per instruction set (see cpu_kernels_*.cpp).
// Define STX_VEC_BYTES and STX_CPU_NAMESPACE, then include this file once.
//
// Work is split over (batch, head, part, lane, block) items with OpenMP; each item owns the rows it
// writes, so no item races another. Scores are kept in base 2: s2 = scale * log2(e) * q.k, so the
// softmax uses exp2 and lse = ln(2) * (m2 + log2(l)).
#include <omp.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>  // F16C conversions in simd.h's load_half and store_half
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends.h"

namespace stx::kernels::detail::STX_CPU_NAMESPACE {
namespace {

#include "cpu/simd.h"

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kLazyRescale = 8.0f;  // forward: see the online softmax below
constexpr int kMaxGroups = 128 / W;   // groups of W queries in the largest block

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// One unit of parallel work: a block of rows (queries, or keys in the dK/dV pass) of one lane of one
// part of one (batch, head).
struct WorkItem {
  int32_t batch, head, part, lane, block;
  int32_t lanes = 0;  // forward of a columns part: the item is every block of lanes lane .. lane + lanes - 1
};

// Items of part `part` of every head that has one; heads have 1 or 2 parts.
std::vector<WorkItem> work_items(const Layout& layout, int64_t batch, int part) {
  std::vector<WorkItem> items;
  for (int64_t b = 0; b < batch; ++b)
    for (int h = 0; h < layout.num_heads(); ++h) {
      const HeadLayout& hl = layout.head(h);
      if (part >= static_cast<int>(hl.parts.size())) continue;
      const LayoutPart& lp = hl.parts[part];
      for (int64_t lane = 0; lane < lp.lanes; ++lane) {
        const int64_t blocks = (lp.lane_length(lane, layout.n) + lp.block - 1) / lp.block;
        for (int64_t blk = 0; blk < blocks; ++blk)
          items.push_back({static_cast<int32_t>(b), h, part, static_cast<int32_t>(lane), static_cast<int32_t>(blk)});
      }
    }
  return items;
}

int max_parts(const Layout& layout) {
  size_t m = 0;
  for (const HeadLayout& h : layout.unique) m = std::max(m, h.parts.size());
  return static_cast<int>(m);
}

// A [batch, heads, seq, dim] tensor seen through one lane of a part: row `index` of the lane.
struct LaneRows {
  const float* base;  // start of (batch, head)
  int64_t seq_stride;
  int64_t lane, step;
  const float* row(int64_t index) const { return base + (lane + index * step) * seq_stride; }
  int64_t row_stride() const { return step * seq_stride; }
};

LaneRows lane_rows(const void* data, const Strides& s, const WorkItem& w, const LayoutPart& part) {
  const float* base = static_cast<const float*>(data) + w.batch * s.batch + w.head * s.head;
  return LaneRows{base, s.seq, w.lane, part.step};
}

// dst[d][r] = scale * row r's element d, for d < D and r < count; columns count..ld-1 zeroed.
// Whole W x W tiles go through registers (transpose_tile); the ragged edges element by element.
void pack_transposed(float* dst, int64_t ld, const LaneRows& src, int64_t first, int64_t count, int64_t d,
                     float scale) {
  const int64_t full_rows = count / W * W, full_cols = d / W * W;
  for (int64_t r0 = 0; r0 < full_rows; r0 += W) {
    for (int64_t e0 = 0; e0 < full_cols; e0 += W) {
      vfloat x[W];
#pragma GCC unroll 16
      for (int i = 0; i < W; ++i) x[i] = load(src.row(first + r0 + i) + e0);
      transpose_tile(x);
#pragma GCC unroll 16
      for (int i = 0; i < W; ++i) store(dst + (e0 + i) * ld + r0, x[i] * scale);
    }
    for (int64_t r = r0; r < r0 + W; ++r) {
      const float* row = src.row(first + r);
      for (int64_t e = full_cols; e < d; ++e) dst[e * ld + r] = row[e] * scale;
    }
  }
  for (int64_t r = full_rows; r < count; ++r) {
    const float* row = src.row(first + r);
    for (int64_t e = 0; e < d; ++e) dst[e * ld + r] = row[e] * scale;
  }
  if (count < ld)
    for (int64_t e = 0; e < d; ++e) std::fill(dst + e * ld + count, dst + (e + 1) * ld, 0.0f);
}

// Rows first..first+count-1 as the right-hand operand of gemm (N = dp columns). Read in place when a
// row holds a whole number of vectors; otherwise copied, zero-padded to dp, into `scratch`.
struct RowOperand {
  const float* data;
  int64_t ld;
};
// Rows of a columns view (step l) are also copied: they sit l rows apart, usually a multiple of 4 KiB,
// so in place every row of a block maps to the same few L1 sets and the block cannot stay cached
// while the gemm tiles re-read it.
RowOperand rows_operand(const LaneRows& src, int64_t first, int64_t count, int64_t d, int64_t dp,
                        float* scratch) {
  if (d == dp && src.step == 1) return RowOperand{src.row(first), src.row_stride()};
  for (int64_t r = 0; r < count; ++r) {
    std::memcpy(scratch + r * dp, src.row(first + r), sizeof(float) * d);
    std::fill(scratch + r * dp + d, scratch + (r + 1) * dp, 0.0f);
  }
  return RowOperand{scratch, dp};
}

// dst[0:d] = src[0:d], dst[d:dp] = 0: one row, inline. The empty asm keeps GCC from turning the loop
// into a call to memcpy, which for rows of a few hundred bytes costs more than the copy.
inline void copy_row(float* __restrict dst, const float* __restrict src, int64_t d, int64_t dp) {
  int64_t e = 0;
  for (; e + W <= d; e += W) {
    vfloat x = load(src + e);
    asm("" : "+v"(x));
    store(dst + e, x);
  }
  for (; e < d; ++e) dst[e] = src[e];
  for (; e < dp; ++e) dst[e] = 0.0f;
}

// Bits of lane i of a vector: 1 << i, for turning W mask bits into a vector condition.
inline vint lane_bits() {
  vint v;
  for (int i = 0; i < W; ++i) v[i] = 1 << i;
  return v;
}

// Sets t[x][y] = -inf for y < ncols where bit y of the mask's row x is clear, x < nrows. The mask is
// B rows of `words` 64-bit words; W divides 64, so a vector's bits never straddle two words.
void apply_mask(float* t, int64_t ld, const uint64_t* mask, int64_t words, int64_t nrows, int64_t ncols) {
  const vint bits_of_lane = lane_bits();
  const vfloat neg_inf = splat(kNegInf);
  for (int64_t x = 0; x < nrows; ++x) {
    const uint64_t* bits = mask + x * words;
    float* row = t + x * ld;
    for (int64_t y = 0; y < ncols; y += W) {
      const int32_t chunk = static_cast<int32_t>((bits[y >> 6] >> (y & 63)) & ((uint64_t{1} << W) - 1));
      const vint keep = (vint{} + chunk) & bits_of_lane;
      store(row + y, keep == 0 ? neg_inf : load(row + y));
    }
  }
}

// Per-thread scratch tiles for block B and padded head dim dp.
struct Scratch {
  std::vector<float> qt, dot, s, ds, acc, acc2, m, l, alpha, lse2, delta, rows_a, rows_b, k_rows;
  std::vector<float> stage;  // forward_lanes: a group of lanes' q, k and v
  Scratch(int64_t block, int64_t dp)
      : qt(dp * block), dot(dp * block), s(block * block), ds(block * block), acc(block * dp), acc2(block * dp),
        m(block), l(block), alpha(block), lse2(block), delta(block), rows_a(block * dp), rows_b(block * dp),
        k_rows(block * dp) {}
};

// ---------------------------------------------------------------------------------------------------
// Forward: for each query block, an online softmax over its listed key blocks. The tile is held
// transposed, s^T = k q^T (keys x queries), so k and v are read in place and the softmax statistics
// are vectors over the block's queries. A columns part is first staged lane by lane into contiguous
// memory (forward_lanes), then computed the same way.

// Where the forward finds one lane's rows: in the tensors themselves, or in a thread's staging copy.
// Row index r of the lane is q.row(r) ..., out + r * out_step and lse[r * lse_step].
struct ForwardRows {
  LaneRows q, k, v;
  float* out;
  int64_t out_step;
  float* lse;
  int64_t lse_step;
};

// Query block `block` of one lane of a part (lane_len rows in that lane).
void forward_block(const ForwardParams& p, const LayoutPart& part, int64_t lane_len, int64_t block,
                   const ForwardRows& io, Scratch& t, bool first_part) {
  const int64_t B = part.block, D = p.head_dim, dp = round_up(D, W);
  const int64_t q0 = block * B, rows = std::min(B, lane_len - q0);
  const LaneRows& k = io.k;
  const LaneRows& v = io.v;
  // The out rows are written at the end: start their read-for-ownership now, behind the products.
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < D; b += 64 / static_cast<int64_t>(sizeof(float)))
      __builtin_prefetch(io.out + (q0 + r) * io.out_step + b, 1, 3);
  pack_transposed(t.qt.data(), B, io.q, q0, rows, D, p.scale * kLog2e);  // scores come out in base 2
  std::fill(t.acc.begin(), t.acc.end(), 0.0f);
  std::fill(t.m.begin(), t.m.end(), kNegInf);
  std::fill(t.l.begin(), t.l.end(), 0.0f);
  if (!first_part) {
    // Continue the earlier part's softmax: its normalised state is m = lse (base 2), l = 1, acc = out.
    // The parts' key sets are disjoint, so this is exact, and no per-row merge is needed.
    for (int64_t r = 0; r < rows; ++r) {
      const float lse = io.lse[(q0 + r) * io.lse_step];
      if (lse == kNegInf) continue;
      t.m[r] = lse * kLog2e;
      t.l[r] = 1.0f;
      copy_row(t.acc.data() + r * dp, io.out + (q0 + r) * io.out_step, D, D);
    }
  }

  for (int64_t e = part.row_begin[block]; e < part.row_begin[block + 1]; ++e) {
    const int64_t k0 = int64_t{part.row_key[e]} * B, keys = std::min(B, lane_len - k0);
    if (keys <= 0) continue;  // a shorter lane can end before a block that the longest lane has
    // Key rows [lo[g], hi[g]) of the block that the g-th group of W queries attends. A partial block
    // often leaves a whole group a corner of keys it never attends (the strided band's first and
    // diagonal blocks are triangles): those rows are skipped in both products and the softmax.
    const int64_t groups = (rows + W - 1) / W;
    int64_t lo[kMaxGroups], hi[kMaxGroups];
    bool split = false;
    const int32_t mask = part.row_mask[e];
    const uint64_t* mt = mask >= 0 ? part.mask_transposed(mask) : nullptr;
    if (mt) {
      int64_t kept = 0;
      for (int64_t g = 0; g < groups; ++g) {
        lo[g] = keys;
        hi[g] = 0;
        const int64_t word = g * W >> 6, shift = g * W & 63;
        for (int64_t c = 0; c < keys; ++c)
          if ((mt[c * part.mask_words + word] >> shift) & ((uint64_t{1} << W) - 1)) {
            lo[g] = std::min(lo[g], c);
            hi[g] = c + 1;
          }
        if (lo[g] >= hi[g]) lo[g] = hi[g] = 0;
        kept += hi[g] - lo[g];
      }
      split = kept < keys * groups;
    }
    if (!split)
      for (int64_t g = 0; g < groups; ++g) lo[g] = 0, hi[g] = keys;
    // s^T = k q^T   (keys x B)
    if (!split) {
      gemm<false>(keys, B, D, k.row(k0), k.row_stride(), 1, t.qt.data(), B, t.s.data(), B);
    } else {
      for (int64_t g = 0; g < groups; ++g)
        if (hi[g] > lo[g])
          gemm<false>(hi[g] - lo[g], W, D, k.row(k0 + lo[g]), k.row_stride(), 1, t.qt.data() + g * W, B,
                      t.s.data() + lo[g] * B + g * W, B);
    }
    if (mt) apply_mask(t.s.data(), B, mt, part.mask_words, keys, groups * W);
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t j = g * W;
      vfloat mx = splat(kNegInf);
      for (int64_t c = lo[g]; c < hi[g]; ++c) {
        const vfloat sc = load(t.s.data() + c * B + j);
        mx = sc > mx ? sc : mx;
      }
      // The reference m moves only when the block's maximum exceeds it by more than kLazyRescale:
      // p = exp2(s - m) then stays below 2^kLazyRescale, harmless in fp32, and most blocks leave every
      // row's alpha at exactly 1, so the acc rows need no rescaling.
      const vfloat m_old = load(t.m.data() + j);
      const vfloat m_new = mx > m_old + kLazyRescale ? mx : m_old;
      // A query with nothing attended yet keeps shift 0, so exp2(-inf - 0) = 0 and no NaN appears.
      const vfloat shift = m_new == kNegInf ? vfloat{} : m_new;
      vfloat sum = vfloat{};
      for (int64_t c = lo[g]; c < hi[g]; ++c) {
        const vfloat pc = exp2v(load(t.s.data() + c * B + j) - shift);
        store(t.s.data() + c * B + j, pc);
        sum += pc;
      }
      const vfloat alpha = exp2v(m_old - shift);
      store(t.l.data() + j, load(t.l.data() + j) * alpha + sum);
      store(t.m.data() + j, m_new);
      store(t.alpha.data() + j, alpha);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float alpha = t.alpha[r];
      if (alpha == 1.0f) continue;
      float* acc = t.acc.data() + r * dp;
      for (int64_t j = 0; j < dp; j += W) store(acc + j, load(acc + j) * alpha);
    }
    // acc += p v = (p^T)^T v   (rows x dp)
    const RowOperand vr = rows_operand(v, k0, keys, D, dp, t.rows_a.data());
    if (!split) {
      gemm<true>(rows, dp, keys, t.s.data(), 1, B, vr.data, vr.ld, t.acc.data(), dp);
    } else {
      for (int64_t g = 0; g < groups; ++g)
        if (hi[g] > lo[g])
          gemm<true>(std::min<int64_t>(W, rows - g * W), dp, hi[g] - lo[g], t.s.data() + lo[g] * B + g * W, 1, B,
                     vr.data + lo[g] * vr.ld, vr.ld, t.acc.data() + g * W * dp, dp);
    }
  }

  for (int64_t r = 0; r < rows; ++r) {
    float* out = io.out + (q0 + r) * io.out_step;
    const float* acc = t.acc.data() + r * dp;
    const float inv = t.l[r] > 0.0f ? 1.0f / t.l[r] : 0.0f;
    int64_t d = 0;
    for (; d + W <= D; d += W) store(out + d, load(acc + d) * inv);
    for (; d < D; ++d) out[d] = acc[d] * inv;
    io.lse[(q0 + r) * io.lse_step] = t.l[r] > 0.0f ? kLn2 * (t.m[r] + std::log2(t.l[r])) : kNegInf;
  }
}

float* out_of_head(const ForwardParams& p, const WorkItem& w) {
  return static_cast<float*>(p.out) + w.batch * p.out_stride.batch + w.head * p.out_stride.head;
}
float* lse_of_head(const ForwardParams& p, const WorkItem& w) {
  return p.lse + (int64_t{w.batch} * p.heads + w.head) * p.layout->n;
}

// One query block, read and written in place.
void forward_item(const ForwardParams& p, const WorkItem& w, Scratch& t, bool first_part) {
  const LayoutPart& part = p.layout->head(w.head).parts[w.part];
  const ForwardRows io{lane_rows(p.q, p.q_stride, w, part),
                       lane_rows(p.k, p.k_stride, w, part),
                       lane_rows(p.v, p.v_stride, w, part),
                       out_of_head(p, w) + w.lane * p.out_stride.seq,
                       part.step * p.out_stride.seq,
                       lse_of_head(p, w) + w.lane,
                       part.step};
  forward_block(p, part, part.lane_length(w.lane, p.layout->n), w.block, io, t, first_part);
}

// Every block of lanes w.lane .. w.lane + w.lanes - 1 of a columns part. Their rows are l apart in
// the tensors, usually a multiple of 4 KiB: read in place, all rows of a block fall in the same few
// cache sets and no hardware prefetcher follows them, so each is a miss taken with little overlap.
// Instead the group's q, k and v rows are first staged lane by lane into contiguous memory, reading
// the tensors in runs of w.lanes consecutive rows. out and lse, touched once per row, stay in place.
void forward_lanes(const ForwardParams& p, const WorkItem& w, Scratch& t, bool first_part) {
  const LayoutPart& part = p.layout->head(w.head).parts[w.part];
  const int64_t n = p.layout->n, D = p.head_dim, dp = round_up(D, W), G = w.lanes;
  const int64_t L = part.lane_length(w.lane, n);  // the group's first lane is its longest
  const int64_t lane_floats = L * dp;
  t.stage.resize(static_cast<size_t>(3 * G * lane_floats));
  float* sq = t.stage.data();
  float* sk = sq + G * lane_floats;
  float* sv = sk + G * lane_floats;
  // Position lane + j * step of lane g = w.lane + g; a lane past its length ends the run (lanes
  // further on are no longer). One tensor at a time, each a sequence of runs of G rows.
  auto stage_in = [&](float* dst, const void* data, const Strides& st) {
    const float* src = static_cast<const float*>(data) + w.batch * st.batch + w.head * st.head;
    for (int64_t j = 0; j < L; ++j)
      for (int64_t g = 0; g < G; ++g) {
        const int64_t pos = part.position(w.lane + g, j);
        if (pos >= n) break;
        copy_row(dst + g * lane_floats + j * dp, src + pos * st.seq, D, dp);
      }
  };
  stage_in(sq, p.q, p.q_stride);
  stage_in(sk, p.k, p.k_stride);
  stage_in(sv, p.v, p.v_stride);
  for (int64_t g = 0; g < G; ++g) {
    const int64_t lane = w.lane + g, len = part.lane_length(lane, n);
    const ForwardRows io{LaneRows{sq + g * lane_floats, dp, 0, 1},
                         LaneRows{sk + g * lane_floats, dp, 0, 1},
                         LaneRows{sv + g * lane_floats, dp, 0, 1},
                         out_of_head(p, w) + lane * p.out_stride.seq,
                         part.step * p.out_stride.seq,
                         lse_of_head(p, w) + lane,
                         part.step};
    for (int64_t block = 0; block * part.block < len; ++block) forward_block(p, part, len, block, io, t, first_part);
  }
}

// The forward's items of part `part`: one per query block of a natural part, one per group of lanes
// of a columns part, sized so that the group's staged rows stay in the L2 cache.
std::vector<WorkItem> forward_work_items(const Layout& layout, int64_t batch, int part, int64_t dp) {
  constexpr int64_t kStageBytes = 512 * 1024, kMaxStageBytes = 4 * 1024 * 1024, kMaxLanes = 16;
  std::vector<WorkItem> items;
  for (int64_t b = 0; b < batch; ++b)
    for (int h = 0; h < layout.num_heads(); ++h) {
      const HeadLayout& hl = layout.head(h);
      if (part >= static_cast<int>(hl.parts.size())) continue;
      const LayoutPart& lp = hl.parts[part];
      const int64_t lane_bytes = 3 * dp * lp.length * static_cast<int64_t>(sizeof(float));
      if (lp.step == 1 || lane_bytes > kMaxStageBytes) {
        // In place, one item per query block: natural rows are consecutive, and a columns part whose
        // lanes are too long to stage has a small l, so its rows are not far apart either.
        for (int64_t lane = 0; lane < lp.lanes; ++lane) {
          const int64_t blocks = (lp.lane_length(lane, layout.n) + lp.block - 1) / lp.block;
          for (int64_t blk = 0; blk < blocks; ++blk)
            items.push_back({static_cast<int32_t>(b), h, part, static_cast<int32_t>(lane), static_cast<int32_t>(blk)});
        }
        continue;
      }
      const int64_t group = std::clamp<int64_t>(kStageBytes / lane_bytes, 1, kMaxLanes);
      for (int64_t lane = 0; lane < lp.lanes; lane += group)
        items.push_back({static_cast<int32_t>(b), h, part, static_cast<int32_t>(lane), 0,
                         static_cast<int32_t>(std::min(group, lp.lanes - lane))});
    }
  return items;
}

}  // namespace

// A head with no parts (fixed A2 alone, n before the first summary cell) has no work items: every one of its
// rows attends nothing. call(batch, head, position) is given each of its rows.
template <class Call>
void for_rows_of_empty_heads(const Layout& layout, int64_t batch, Call&& call) {
  for (int h = 0; h < layout.num_heads(); ++h) {
    if (!layout.head(h).parts.empty()) continue;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < layout.n; ++i) call(b, h, i);
  }
}

void forward(const ForwardParams& p) {
  const Layout& layout = *p.layout;
  const int64_t B = layout.block, dp = round_up(p.head_dim, W);
  // Rows that attend nothing: out = 0 and lse = -inf, as attention.h says (and the CUDA kernels write).
  for_rows_of_empty_heads(layout, p.batch, [&](int64_t b, int64_t h, int64_t i) {
    float* out =
        static_cast<float*>(p.out) + b * p.out_stride.batch + h * p.out_stride.head + i * p.out_stride.seq;
    std::fill(out, out + p.head_dim, 0.0f);
    p.lse[(b * p.heads + h) * layout.n + i] = kNegInf;
  });
  for (int part = 0; part < max_parts(layout); ++part) {
    const std::vector<WorkItem> items = forward_work_items(layout, p.batch, part, dp);
#pragma omp parallel
    {
      Scratch t(B, dp);
#pragma omp for schedule(dynamic, 1)
      for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].lanes > 0) forward_lanes(p, items[i], t, part == 0);
        else forward_item(p, items[i], t, part == 0);
      }
    }
  }
}

namespace {

// ---------------------------------------------------------------------------------------------------
// Backward, flash-attention style, in one pass over key blocks: P is recomputed from the saved lse,
// dK and dV of a key block are summed over the query blocks of its column list, and dQ is summed
// into a per-thread fp32 buffer (two items can share query rows), reduced at the end. A separate dQ
// pass over row lists would recompute s and dP: 7 tile products instead of 5.
//   P = exp(s - lse), dV += P^T dO, dP = dO V^T, dS = P * (dP - delta), dK += scale dS^T Q, dQ += scale dS K

// lse in base 2 and delta of query rows q0..q0+rows-1 of the item's lane.
void load_row_stats(const BackwardParams& p, const WorkItem& w, const LayoutPart& part, int64_t q0, int64_t rows,
                    const float* delta_base, Scratch& t) {
  const float* lse = p.lse + (int64_t{w.batch} * p.heads + w.head) * p.layout->n;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t pos = part.position(w.lane, q0 + r);
    // A row that attends nothing (fixed A2 alone, before the first summary cell) has lse = -inf and
    // no gradient: +inf here makes every recomputed P of the row exactly 0.
    t.lse2[r] = lse[pos] == kNegInf ? std::numeric_limits<float>::infinity() : lse[pos] * kLog2e;
    t.delta[r] = delta_base[pos];
  }
}

// Writes (first part) or adds (later parts) scale * acc to rows of a [batch, heads, seq, dim] tensor.
void store_rows(void* data, const Strides& s, const WorkItem& w, const LayoutPart& part, int64_t first,
                int64_t count, const float* acc, int64_t dp, int64_t d, float scale, bool overwrite) {
  float* base = static_cast<float*>(data) + w.batch * s.batch + w.head * s.head;
  for (int64_t r = 0; r < count; ++r) {
    float* row = base + part.position(w.lane, first + r) * s.seq;
    const float* a = acc + r * dp;
    if (overwrite)
      for (int64_t e = 0; e < d; ++e) row[e] = a[e] * scale;
    else
      for (int64_t e = 0; e < d; ++e) row[e] += a[e] * scale;
  }
}

// One key block (the item's block): dK and dV written, dQ added to `dq_sum` ([batch, heads, n, dp]).
void backward_item(const BackwardParams& p, const WorkItem& w, const float* delta_base, float* dq_sum, Scratch& t,
                   bool first_part) {
  const LayoutPart& part = p.layout->head(w.head).parts[w.part];
  const int64_t n = p.layout->n, B = part.block, D = p.head_dim, dp = round_up(D, W);
  const int64_t lane_len = part.lane_length(w.lane, n);
  const int64_t k0 = int64_t{w.block} * B, keys = std::min(B, lane_len - k0);
  const LaneRows q = lane_rows(p.q, p.q_stride, w, part);
  const LaneRows dout = lane_rows(p.dout, p.dout_stride, w, part);
  const LaneRows k = lane_rows(p.k, p.k_stride, w, part);
  pack_transposed(t.qt.data(), B, k, k0, keys, D, p.scale * kLog2e);                                // k^T
  pack_transposed(t.dot.data(), B, lane_rows(p.v, p.v_stride, w, part), k0, keys, D, 1.0f);  // v^T
  const RowOperand kr = rows_operand(k, k0, keys, D, dp, t.k_rows.data());
  float* dq_head = dq_sum + (int64_t{w.batch} * p.heads + w.head) * n * dp;
  std::fill(t.acc.begin(), t.acc.end(), 0.0f);   // dK
  std::fill(t.acc2.begin(), t.acc2.end(), 0.0f);  // dV
  for (int64_t e = part.col_begin[w.block]; e < part.col_begin[w.block + 1]; ++e) {
    const int64_t q0 = int64_t{part.col_query[e]} * B, rows = std::min(B, lane_len - q0);
    if (rows <= 0) continue;
    load_row_stats(p, w, part, q0, rows, delta_base, t);
    gemm<false>(rows, B, D, q.row(q0), q.row_stride(), 1, t.qt.data(), B, t.s.data(), B);           // s = q k^T
    gemm<false>(rows, B, D, dout.row(q0), dout.row_stride(), 1, t.dot.data(), B, t.ds.data(), B);  // dP = dO v^T
    if (part.col_mask[e] >= 0) apply_mask(t.s.data(), B, part.mask(part.col_mask[e]), part.mask_words, rows, B);
    for (int64_t r = 0; r < rows; ++r) {
      float* s = t.s.data() + r * B;
      float* ds = t.ds.data() + r * B;
      const float lse2 = t.lse2[r], delta = t.delta[r];
      for (int64_t j = 0; j < B; j += W) {
        const vfloat pj = exp2v(load(s + j) - lse2);
        store(s + j, pj);
        store(ds + j, pj * (load(ds + j) - delta));
      }
    }
    // dV += P^T dO, dK += dS^T Q   (keys x dp): A^T through strides (ai = 1, ak = B)
    const RowOperand dor = rows_operand(dout, q0, rows, D, dp, t.rows_a.data());
    const RowOperand qr = rows_operand(q, q0, rows, D, dp, t.rows_b.data());
    gemm<true>(keys, dp, rows, t.s.data(), 1, B, dor.data, dor.ld, t.acc2.data(), dp);
    gemm<true>(keys, dp, rows, t.ds.data(), 1, B, qr.data, qr.ld, t.acc.data(), dp);
    // dQ += dS K   (rows x dp), rows of this lane sit step * dp apart in the position-indexed buffer
    gemm<true>(rows, dp, keys, t.ds.data(), B, 1, kr.data, kr.ld, dq_head + part.position(w.lane, q0) * dp,
               part.step * dp);
  }
  store_rows(p.dk, p.dk_stride, w, part, k0, keys, t.acc.data(), dp, D, p.scale, first_part);
  store_rows(p.dv, p.dv_stride, w, part, k0, keys, t.acc2.data(), dp, D, 1.0f, first_part);
}

}  // namespace

void backward(const BackwardParams& p) {
  const Layout& layout = *p.layout;
  const int64_t n = layout.n, D = p.head_dim, B = layout.block, dp = round_up(D, W);
  const int64_t rows_total = p.batch * p.heads * n;
  // delta_i = dO_i . O_i, per (batch, head, position).
  std::vector<float> delta(static_cast<size_t>(rows_total));
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h) {
      const float* o = static_cast<const float*>(p.out) + b * p.out_stride.batch + h * p.out_stride.head;
      const float* g = static_cast<const float*>(p.dout) + b * p.dout_stride.batch + h * p.dout_stride.head;
      float* dst = delta.data() + (b * p.heads + h) * n;
      for (int64_t i = 0; i < n; ++i) {
        float s = 0.0f;
        for (int64_t d = 0; d < D; ++d) s += o[i * p.out_stride.seq + d] * g[i * p.dout_stride.seq + d];
        dst[i] = s;
      }
    }
  // Keys of a head that attends nothing get no gradient (its dQ rows are zero below, as every head's start).
  for_rows_of_empty_heads(layout, p.batch, [&](int64_t b, int64_t h, int64_t i) {
    for (auto [grad, stride] : {std::pair{p.dk, p.dk_stride}, std::pair{p.dv, p.dv_stride}}) {
      float* row = static_cast<float*>(grad) + b * stride.batch + h * stride.head + i * stride.seq;
      std::fill(row, row + D, 0.0f);
    }
  });
  std::vector<std::vector<WorkItem>> items_of_part;
  for (int part = 0; part < max_parts(layout); ++part) items_of_part.push_back(work_items(layout, p.batch, part));
  const int threads = omp_get_max_threads();
  std::vector<std::vector<float>> dq_sums(static_cast<size_t>(threads));
#pragma omp parallel num_threads(threads)
  {
    std::vector<float>& dq_sum = dq_sums[static_cast<size_t>(omp_get_thread_num())];
    dq_sum.assign(static_cast<size_t>(rows_total * dp), 0.0f);  // first touched by its own thread
    // Every buffer exists before any thread sums them below, even when no part's loop (and its implicit
    // barrier) runs in between: a layout whose heads all attend nothing has no parts.
#pragma omp barrier
    Scratch t(B, dp);
    for (size_t part = 0; part < items_of_part.size(); ++part) {
      const std::vector<WorkItem>& items = items_of_part[part];
      // dK and dV of later parts add to the first part's rows: finish a part before the next.
#pragma omp for schedule(dynamic, 1)
      for (size_t i = 0; i < items.size(); ++i) {
        const WorkItem& w = items[i];
        backward_item(p, w, delta.data() + (int64_t{w.batch} * p.heads + w.head) * n, dq_sum.data(), t,
                      part == 0);
      }
    }
    // dQ = scale * (sum of the threads' buffers)
#pragma omp for schedule(static)
    for (int64_t row = 0; row < rows_total; ++row) {
      const int64_t b = row / (p.heads * n), h = (row / n) % p.heads, i = row % n;
      float* dq = static_cast<float*>(p.dq) + b * p.dq_stride.batch + h * p.dq_stride.head + i * p.dq_stride.seq;
      for (int64_t d = 0; d < D; ++d) {
        float sum = 0.0f;
        for (const std::vector<float>& part_sum : dq_sums) sum += part_sum[row * dp + d];
        dq[d] = sum * p.scale;
      }
    }
  }
}

void to_half(const float* src, uint16_t* dst, int64_t count) {
  const vfloat top = splat(65504.0f), bottom = splat(-65504.0f);
  int64_t i = 0;
  for (; i + W <= count; i += W) {
    vfloat x = load(src + i);
    x = x > top ? top : x;  // NaN compares false both times and stays NaN
    x = x < bottom ? bottom : x;
    store_half(dst + i, x);
  }
  for (; i < count; ++i) dst[i] = float_to_half(std::clamp(src[i], -65504.0f, 65504.0f));
}

void from_half(const uint16_t* src, float* dst, int64_t count) {
  int64_t i = 0;
  for (; i + W <= count; i += W) store(dst + i, load_half(src + i));
  for (; i < count; ++i) dst[i] = half_to_float(src[i]);
}

}  // namespace stx::kernels::detail::STX_CPU_NAMESPACE
