// The tensor-core backward walked on the host: the key pass (dK, dV: a thread block per 64 keys, walking the
// column lists) and the query pass (dQ: a thread block per 64 queries, walking the row lists) of
// backward_tc_cuda.cu, with mma_warp_model.h's warp and the kernels' own per-lane step
// (flash::probabilities_and_dscores). Parts add up, as the kernels' finish() adds them.
#include <algorithm>
#include <cmath>

#include "mma_warp_model.h"

namespace stx::test::warp {
namespace {

using stx::kernels::LayoutPart;

constexpr int kChunk =
    flash::kChunkKeys;  // queries per step of the key pass, keys per step of the query pass

// lse and Delta of rows [first, first + rows) of a lane into 64-entry arrays: -inf and 0 past the rows.
void load_row_values(std::vector<float>& lse, std::vector<float>& delta, const float* lse_head,
                     const float* delta_head, const LayoutPart& part, int64_t lane, const flash::ListChunk& rows,
                     int block) {
  lse.assign(kChunk, flash::kMinusInfinity);
  delta.assign(kChunk, 0.0f);
  for (int r = 0; r < rows.rows; ++r) {
    const int64_t position = part.position(lane, rows.position(block, r));
    lse[static_cast<size_t>(r)] = lse_head[position];
    delta[static_cast<size_t>(r)] = delta_head[position];
  }
}

// Adds the accumulator tiles of a warp's rows (scaled) into rows of a lane of one head's gradient.
void add_rows(const std::vector<CFragment>& acc, float scale, int rows_held, int64_t first,
              const LayoutPart& part, int64_t lane_index, int64_t head_dim, float* grad) {
  for (int lane = 0; lane < kLanes; ++lane) {
    for (size_t t = 0; t < acc.size(); ++t) {
      for (int i = 0; i < mma::kCValues; ++i) {
        const mma::Cell cell = mma::c_cell(lane, i);
        const int dim = static_cast<int>(t) * mma::kN + cell.col;
        if (cell.row >= rows_held || dim >= head_dim) continue;
        grad[part.position(lane_index, first + cell.row) * head_dim + dim] += acc[t][lane][i] * scale;
      }
    }
  }
}

// One warp's chunk: the scores and their gradients for 16 rows against 64 columns, each as 8 accumulator
// tiles, from the rows' A operands and the columns' tiles (B^T's rows: not transposed).
void two_products(const std::vector<AFragment>& rows_a, const SharedTile& cols_a,
                  const std::vector<AFragment>& rows_b, const SharedTile& cols_b, int padded_dim,
                  std::array<CFragment, flash::kScoreTiles>& first,
                  std::array<CFragment, flash::kScoreTiles>& second) {
  for (CFragment& t : first) t = CFragment{};
  for (CFragment& t : second) t = CFragment{};
  for (int step = 0; step < padded_dim / mma::kK; ++step) {
    multiply_pairs(rows_a[static_cast<size_t>(step)], cols_a, false, step * mma::kK, flash::kScoreTiles / 2,
                   first.data());
    multiply_pairs(rows_b[static_cast<size_t>(step)], cols_b, false, step * mma::kK, flash::kScoreTiles / 2,
                   second.data());
  }
}

// Per lane: P in place of S alone (the dV launch of the key pass at head dim 128).
template <bool KEYS_AS_ROWS>
void p_only(std::array<CFragment, flash::kScoreTiles>& s, const flash::ChunkMask& mask, float scale,
            const float* lse) {
  for (int lane = 0; lane < kLanes; ++lane) {
    float lane_s[flash::kScoreTiles][mma::kCValues];
    for (int t = 0; t < flash::kScoreTiles; ++t)
      for (int i = 0; i < mma::kCValues; ++i) lane_s[t][i] = s[static_cast<size_t>(t)][lane][i];
    flash::probabilities<KEYS_AS_ROWS>(lane_s, lane, mask, scale, lse);
    for (int t = 0; t < flash::kScoreTiles; ++t)
      for (int i = 0; i < mma::kCValues; ++i) s[static_cast<size_t>(t)][lane][i] = lane_s[t][i];
  }
}

// Per lane: P and dS in place of S and dP (the kernels' own step).
template <bool KEYS_AS_ROWS>
void p_and_ds(std::array<CFragment, flash::kScoreTiles>& s, std::array<CFragment, flash::kScoreTiles>& dp,
              const flash::ChunkMask& mask, float scale, const float* lse, const float* delta) {
  for (int lane = 0; lane < kLanes; ++lane) {
    float lane_s[flash::kScoreTiles][mma::kCValues], lane_dp[flash::kScoreTiles][mma::kCValues];
    for (int t = 0; t < flash::kScoreTiles; ++t) {
      for (int i = 0; i < mma::kCValues; ++i) {
        lane_s[t][i] = s[static_cast<size_t>(t)][lane][i];
        lane_dp[t][i] = dp[static_cast<size_t>(t)][lane][i];
      }
    }
    flash::probabilities_and_dscores<KEYS_AS_ROWS>(lane_s, lane_dp, lane, mask, scale, lse, delta);
    for (int t = 0; t < flash::kScoreTiles; ++t) {
      for (int i = 0; i < mma::kCValues; ++i) {
        s[static_cast<size_t>(t)][lane][i] = lane_s[t][i];
        dp[static_cast<size_t>(t)][lane][i] = lane_dp[t][i];
      }
    }
  }
}

struct HeadInputs {
  const float *q, *k, *v, *dout, *lse, *delta;
  float *dq, *dk, *dv;
};

// Which gradients a key-pass launch accumulates: both up to head dim 64, at 128 one launch each (the kernels'
// KeyGrads), the dV launch taking P alone.
constexpr int kDv = 1, kDk = 2;

void key_pass(const BackwardProblem& problem, const LayoutPart& part, const HeadInputs& in, float scale,
              int grads) {
  const ForwardProblem& p = problem.forward;
  const int D = p.padded_dim, pitch = mma::tile_pitch(D), B = static_cast<int>(part.block);
  // The kernels' thread block: tile_warps(B) warps of 16 rows (two for blocks narrower than 64).
  const int warps_per_tile = flash::tile_warps(B), tile = warps_per_tile * flash::kWarpRows;
  SharedTile k_tile(flash::kTileRows, pitch), v_tile(flash::kTileRows, pitch), q_tile(kChunk, pitch),
      dout_tile(kChunk, pitch);
  std::vector<float> lse, delta;
  for (int64_t lane_index = 0; lane_index < part.lanes; ++lane_index) {
    const int64_t length = part.lane_length(lane_index, p.n);
    for (int64_t kb = 0; kb < part.num_blocks; ++kb) {
      for (int tile_col = 0; tile_col < B; tile_col += tile) {
        const int64_t k_first = kb * B + tile_col;
        if (k_first >= length) break;
        const int k_rows =
            static_cast<int>(std::min<int64_t>({tile, B - tile_col, length - k_first}));
        load_tile(k_tile, in.k, p.head_dim, part, lane_index, k_first, k_rows);
        load_tile(v_tile, in.v, p.head_dim, part, lane_index, k_first, k_rows);
        for (int w = 0; w < warps_per_tile; ++w) {
          const int keys_held = std::clamp(k_rows - w * flash::kWarpRows, 0, flash::kWarpRows);
          if (keys_held == 0) continue;
          const std::vector<AFragment> k_a = row_operands(k_tile, w * flash::kWarpRows, D);
          const std::vector<AFragment> v_a = row_operands(v_tile, w * flash::kWarpRows, D);
          std::vector<CFragment> dk(static_cast<size_t>(D / mma::kN)), dv(static_cast<size_t>(D / mma::kN));
          const int64_t list_end = part.col_begin[kb + 1];
          for (int64_t entry = part.col_begin[kb]; entry < list_end;) {
            const int pieces = flash::gathered_entries(part.col_mask.data() + entry, list_end - entry, B);
            const int32_t mask_index = part.col_mask[entry];
            for (int chunk = 0; chunk < B; chunk += kChunk) {
              const flash::ListChunk queries =
                  flash::list_chunk(part.col_query.data() + entry, pieces, B, chunk, length);
              if (queries.rows == 0) break;
              const int q_rows = queries.rows;
              load_chunk(q_tile, in.q, p.head_dim, part, lane_index, queries, B);
              load_chunk(dout_tile, in.dout, p.head_dim, part, lane_index, queries, B);
              load_row_values(lse, delta, in.lse, in.delta, part, lane_index, queries, B);
              std::array<CFragment, flash::kScoreTiles> s, dp;  // S^T = K Q^T and dP^T = V dO^T
              two_products(k_a, q_tile, v_a, dout_tile, D, s, dp);
              const flash::ChunkMask mask =
                  flash::chunk_mask(mask_index < 0 ? nullptr : part.mask(mask_index), part.mask_words, chunk,
                                    tile_col + w * flash::kWarpRows, q_rows, keys_held);
              if (grads & kDk) {
                p_and_ds<true>(s, dp, mask, scale, lse.data(), delta.data());
              } else {
                p_only<true>(s, mask, scale, lse.data());
              }
              for (int step = 0; step < kChunk / mma::kK; ++step) {  // dV += P^T dO, dK += dS^T Q
                if (grads & kDv) {
                  multiply_pairs(accumulators_as_a(s.data(), step, p.dtype), dout_tile, true, step * mma::kK,
                                 D / 16, dv.data());
                }
                if (grads & kDk) {
                  multiply_pairs(accumulators_as_a(dp.data(), step, p.dtype), q_tile, true, step * mma::kK,
                                 D / 16, dk.data());
                }
              }
            }
            entry += pieces;
          }
          if (grads & kDk) {
            add_rows(dk, scale, keys_held, k_first + w * flash::kWarpRows, part, lane_index, p.head_dim, in.dk);
          }
          if (grads & kDv) {
            add_rows(dv, 1.0f, keys_held, k_first + w * flash::kWarpRows, part, lane_index, p.head_dim, in.dv);
          }
        }
      }
    }
  }
}

void query_pass(const BackwardProblem& problem, const LayoutPart& part, const HeadInputs& in, float scale) {
  const ForwardProblem& p = problem.forward;
  const int D = p.padded_dim, pitch = mma::tile_pitch(D), B = static_cast<int>(part.block);
  // The kernels' thread block: tile_warps(B) warps of 16 rows (two for blocks narrower than 64).
  const int warps_per_tile = flash::tile_warps(B), tile = warps_per_tile * flash::kWarpRows;
  SharedTile q_tile(flash::kTileRows, pitch), dout_tile(flash::kTileRows, pitch), k_tile(kChunk, pitch),
      v_tile(kChunk, pitch);
  std::vector<float> lse, delta;
  for (int64_t lane_index = 0; lane_index < part.lanes; ++lane_index) {
    const int64_t length = part.lane_length(lane_index, p.n);
    for (int64_t qb = 0; qb < part.num_blocks; ++qb) {
      for (int tile_row = 0; tile_row < B; tile_row += tile) {
        const int64_t q_first = qb * B + tile_row;
        if (q_first >= length) break;
        const int q_rows =
            static_cast<int>(std::min<int64_t>({tile, B - tile_row, length - q_first}));
        load_tile(q_tile, in.q, p.head_dim, part, lane_index, q_first, q_rows);
        load_tile(dout_tile, in.dout, p.head_dim, part, lane_index, q_first, q_rows);
        load_row_values(lse, delta, in.lse, in.delta, part, lane_index, flash::ListChunk{nullptr, 1, q_first, q_rows},
                        B);
        for (int w = 0; w < warps_per_tile; ++w) {
          const int rows_held = std::clamp(q_rows - w * flash::kWarpRows, 0, flash::kWarpRows);
          if (rows_held == 0) continue;
          const std::vector<AFragment> q_a = row_operands(q_tile, w * flash::kWarpRows, D);
          const std::vector<AFragment> dout_a = row_operands(dout_tile, w * flash::kWarpRows, D);
          std::vector<CFragment> dq(static_cast<size_t>(D / mma::kN));
          const int64_t list_end = part.row_begin[qb + 1];
          for (int64_t entry = part.row_begin[qb]; entry < list_end;) {
            const int pieces = flash::gathered_entries(part.row_mask.data() + entry, list_end - entry, B);
            const int32_t mask_index = part.row_mask[entry];
            for (int chunk = 0; chunk < B; chunk += kChunk) {
              const flash::ListChunk keys = flash::list_chunk(part.row_key.data() + entry, pieces, B, chunk, length);
              if (keys.rows == 0) break;
              const int k_rows = keys.rows;
              load_chunk(k_tile, in.k, p.head_dim, part, lane_index, keys, B);
              load_chunk(v_tile, in.v, p.head_dim, part, lane_index, keys, B);
              std::array<CFragment, flash::kScoreTiles> s, dp;  // S = Q K^T and dP = dO V^T
              two_products(q_a, k_tile, dout_a, v_tile, D, s, dp);
              const flash::ChunkMask mask =
                  flash::chunk_mask(mask_index < 0 ? nullptr : part.mask(mask_index), part.mask_words,
                                    tile_row + w * flash::kWarpRows, chunk, rows_held, k_rows);
              const size_t warp_row0 = static_cast<size_t>(w * flash::kWarpRows);
              p_and_ds<false>(s, dp, mask, scale, lse.data() + warp_row0, delta.data() + warp_row0);
              for (int step = 0; step < kChunk / mma::kK; ++step) {  // dQ += dS K
                multiply_pairs(accumulators_as_a(dp.data(), step, p.dtype), k_tile, true, step * mma::kK,
                               D / 16, dq.data());
              }
            }
            entry += pieces;
          }
          add_rows(dq, scale, rows_held, q_first + w * flash::kWarpRows, part, lane_index, p.head_dim, in.dq);
        }
      }
    }
  }
}

}  // namespace

void tensor_core_backward(const BackwardProblem& problem, std::vector<float>& dq, std::vector<float>& dk,
                          std::vector<float>& dv) {
  const ForwardProblem& p = problem.forward;
  const float scale = p.scale > 0.0f ? p.scale : 1.0f / std::sqrt(static_cast<float>(p.head_dim));
  const int64_t head_size = p.n * p.head_dim;
  const size_t elements = static_cast<size_t>(p.batch * p.heads * head_size);
  dq.assign(elements, 0.0f);
  dk.assign(elements, 0.0f);
  dv.assign(elements, 0.0f);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t offset = (b * p.heads + h) * head_size, row_offset = (b * p.heads + h) * p.n;
      const HeadInputs in{p.q.data() + offset,
                          p.k.data() + offset,
                          p.v.data() + offset,
                          problem.dout.data() + offset,
                          problem.lse.data() + row_offset,
                          problem.delta.data() + row_offset,
                          dq.data() + offset,
                          dk.data() + offset,
                          dv.data() + offset};
      if (p.padded_dim <= 64) {
        for (const LayoutPart& part : p.layout->head(h).parts) key_pass(problem, part, in, scale, kDv | kDk);
      } else {  // the dV launch over every part, then the dK launch
        for (const LayoutPart& part : p.layout->head(h).parts) key_pass(problem, part, in, scale, kDv);
        for (const LayoutPart& part : p.layout->head(h).parts) key_pass(problem, part, in, scale, kDk);
      }
      for (const LayoutPart& part : p.layout->head(h).parts) query_pass(problem, part, in, scale);
    }
  }
}

}  // namespace stx::test::warp
