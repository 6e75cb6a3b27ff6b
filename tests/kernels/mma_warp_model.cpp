// The tensor-core forward walked on the host: the loops of forward_tc_cuda.cu, with every warp-wide
// instruction replaced by mma_warp_model.h's model of it and every per-lane step the kernel's own
// (cuda/flash_tile.h).
#include "mma_warp_model.h"

#include <algorithm>
#include <cmath>

namespace stx::test::warp {
namespace {

using stx::kernels::LayoutPart;

// One warp's registers across a chunk walk: Q as A operands, O accumulators, the row state.
struct WarpState {
  std::vector<AFragment> q;  // [padded_dim / 16]
  std::vector<CFragment> o;  // [padded_dim / 8]
  std::array<flash::RowState, kLanes> rows{};
  int rows_held = 0;  // the warp's rows that exist (0: it idles)
};

// S = Q K^T over one chunk of keys for one warp: for each head-dim step, two score tiles per ldmatrix of K.
void scores(const WarpState& warp, const SharedTile& k_tile, int padded_dim,
            std::array<CFragment, flash::kScoreTiles>& s) {
  for (CFragment& tile : s) tile = CFragment{};
  for (int step = 0; step < padded_dim / mma::kK; ++step) {
    multiply_pairs(warp.q[static_cast<size_t>(step)], k_tile, false, step * mma::kK, flash::kScoreTiles / 2,
                   s.data());
  }
}

// O += P V: P's A operands straight from the score accumulators (rounded to 16 bits), V through
// ldmatrix .trans, two output tiles per load.
void accumulate_output(WarpState& warp, const std::array<CFragment, flash::kScoreTiles>& p,
                       const SharedTile& v_tile, int padded_dim, stx::kernels::DType dtype) {
  for (int step = 0; step < flash::kChunkKeys / mma::kK; ++step) {
    multiply_pairs(accumulators_as_a(p.data(), step, dtype), v_tile, true, step * mma::kK, padded_dim / 16,
                   warp.o.data());
  }
}

// The masking and the online softmax of one chunk, lane by lane with the quad's max in between.
void softmax_chunk(WarpState& warp, std::array<CFragment, flash::kScoreTiles>& s,
                   const flash::ChunkMask& mask, float scale) {
  std::array<float[2], kLanes> chunk_max{};
  for (int lane = 0; lane < kLanes; ++lane) {
    float lane_s[flash::kScoreTiles][mma::kCValues];
    for (int t = 0; t < flash::kScoreTiles; ++t)
      for (int i = 0; i < mma::kCValues; ++i) lane_s[t][i] = s[static_cast<size_t>(t)][lane][i];
    flash::mask_and_scale(lane_s, lane, mask, scale, chunk_max[static_cast<size_t>(lane)]);
    for (int t = 0; t < flash::kScoreTiles; ++t)
      for (int i = 0; i < mma::kCValues; ++i) s[static_cast<size_t>(t)][lane][i] = lane_s[t][i];
  }
  quad_reduce(chunk_max, [](float a, float b) { return std::max(a, b); });
  const int out_tiles = static_cast<int>(warp.o.size());
  for (int lane = 0; lane < kLanes; ++lane) {
    float lane_s[flash::kScoreTiles][mma::kCValues];
    for (int t = 0; t < flash::kScoreTiles; ++t)
      for (int i = 0; i < mma::kCValues; ++i) lane_s[t][i] = s[static_cast<size_t>(t)][lane][i];
    float lane_o[16][mma::kCValues] = {};  // up to D = 128
    for (int t = 0; t < out_tiles; ++t)
      for (int i = 0; i < mma::kCValues; ++i) lane_o[t][i] = warp.o[static_cast<size_t>(t)][lane][i];
    const float(&max)[2] = chunk_max[static_cast<size_t>(lane)];
    flash::softmax_step(lane_s, max, warp.rows[static_cast<size_t>(lane)], lane_o);
    for (int t = 0; t < flash::kScoreTiles; ++t)
      for (int i = 0; i < mma::kCValues; ++i) s[static_cast<size_t>(t)][lane][i] = lane_s[t][i];
    for (int t = 0; t < out_tiles; ++t)
      for (int i = 0; i < mma::kCValues; ++i) warp.o[static_cast<size_t>(t)][lane][i] = lane_o[t][i];
  }
}

// The epilogue: the quad's sums, each lane's cells normalised and merged into what the earlier parts left.
void write_rows(WarpState& warp, int warp_index, int64_t q_first, const LayoutPart& part, int64_t lane_index,
                const ForwardProblem& p, float* out_head, float* lse_head) {
  std::array<float[2], kLanes> sums{};
  for (int lane = 0; lane < kLanes; ++lane)
    for (int half = 0; half < 2; ++half)
      sums[static_cast<size_t>(lane)][half] = warp.rows[static_cast<size_t>(lane)].sum[half];
  quad_reduce(sums, [](float a, float b) { return a + b; });
  // Every lane reads the old lse of its rows before any lane of the quad writes the new one.
  std::array<flash::MergeWeights[2], kLanes> merge{};
  std::array<float[2], kLanes> normaliser{};
  for (int lane = 0; lane < kLanes; ++lane) {
    flash::RowState state = warp.rows[static_cast<size_t>(lane)];
    state.sum[0] = sums[static_cast<size_t>(lane)][0];
    state.sum[1] = sums[static_cast<size_t>(lane)][1];
    float lse[2];
    flash::finish_rows(state, lse, normaliser[static_cast<size_t>(lane)]);
    for (int half = 0; half < 2; ++half) {
      const int row = warp_index * flash::kWarpRows + mma::group_of(lane) + half * 8;
      if (row - warp_index * flash::kWarpRows >= warp.rows_held) continue;
      const int64_t position = part.position(lane_index, q_first + row);
      merge[static_cast<size_t>(lane)][half] = flash::merge_weights(lse_head[position], lse[half]);
    }
  }
  for (int lane = 0; lane < kLanes; ++lane) {
    for (size_t t = 0; t < warp.o.size(); ++t) {
      for (int i = 0; i < mma::kCValues; ++i) {
        const mma::Cell cell = mma::c_cell(lane, i);
        const int half = i >> 1, dim = static_cast<int>(t) * mma::kN + cell.col;
        if (cell.row >= warp.rows_held || dim >= p.head_dim) continue;
        const int64_t position =
            part.position(lane_index, q_first + warp_index * flash::kWarpRows + cell.row);
        const flash::MergeWeights& w = merge[static_cast<size_t>(lane)][half];
        float& o = out_head[position * p.head_dim + dim];
        float merged = w.new_weight * warp.o[t][lane][i] * normaliser[static_cast<size_t>(lane)][half];
        if (w.old_weight != 0.0f) merged += w.old_weight * o;  // the kernel reads no partial it need not
        o = merged;
      }
    }
  }
  for (int lane = 0; lane < kLanes; lane += 4) {  // one lane of each quad writes the row's lse
    for (int half = 0; half < 2; ++half) {
      const int row = mma::group_of(lane) + half * 8;
      if (row >= warp.rows_held) continue;
      lse_head[part.position(lane_index, q_first + warp_index * flash::kWarpRows + row)] =
          merge[static_cast<size_t>(lane)][half].lse;
    }
  }
}

}  // namespace

void load_tile(SharedTile& tile, const float* head, int64_t head_dim, const LayoutPart& part, int64_t lane,
               int64_t first, int rows) {
  std::fill(tile.values.begin(), tile.values.end(), 0.0f);
  for (int r = 0; r < rows; ++r) {
    const float* src = head + part.position(lane, first + r) * head_dim;
    for (int64_t d = 0; d < head_dim; ++d) tile.at(r, static_cast<int>(d)) = src[d];
  }
}

void load_chunk(SharedTile& tile, const float* head, int64_t head_dim, const LayoutPart& part, int64_t lane,
                const flash::ListChunk& chunk, int block) {
  std::fill(tile.values.begin(), tile.values.end(), 0.0f);
  for (int r = 0; r < chunk.rows; ++r) {
    const float* src = head + part.position(lane, chunk.position(block, r)) * head_dim;
    for (int64_t d = 0; d < head_dim; ++d) tile.at(r, static_cast<int>(d)) = src[d];
  }
}

std::vector<AFragment> row_operands(const SharedTile& tile, int row0, int padded_dim) {
  std::vector<AFragment> out;
  for (int step = 0; step < padded_dim / mma::kK; ++step) {
    const LdmatrixRegisters r =
        ldmatrix_x4(tile, addresses(mma::q_operand_address, row0, step * mma::kK), /*transposed=*/false);
    AFragment a{};
    for (int lane = 0; lane < kLanes; ++lane)
      for (int i = 0; i < mma::kAValues; ++i) a[lane][i] = r[lane][i >> 1][i & 1];
    out.push_back(a);
  }
  return out;
}

void multiply_pairs(const AFragment& a, const SharedTile& tile, bool transposed, int k_offset, int pairs,
                    CFragment* acc) {
  for (int pair = 0; pair < pairs; ++pair) {
    const LdmatrixRegisters r =
        transposed ? ldmatrix_x4(tile, addresses(mma::v_operand_address, k_offset, pair * 16), true)
                   : ldmatrix_x4(tile, addresses(mma::k_operand_address, pair * 16, k_offset), false);
    for (int half = 0; half < 2; ++half) {
      BFragment b{};
      for (int lane = 0; lane < kLanes; ++lane) {
        b[lane] = {r[lane][2 * half][0], r[lane][2 * half][1], r[lane][2 * half + 1][0],
                   r[lane][2 * half + 1][1]};
      }
      mma_m16n8k16(a, b, acc[2 * pair + half]);
    }
  }
}

AFragment accumulators_as_a(const CFragment* scores, int step, stx::kernels::DType dtype) {
  AFragment a{};
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int i = 0; i < mma::kAValues; ++i) {
      a[lane][i] = round_to(dtype, scores[2 * step + mma::p_source_tile(i)][lane][mma::p_source_value(i)]);
    }
  }
  return a;
}

void tensor_core_forward(const ForwardProblem& p, std::vector<float>& out, std::vector<float>& lse) {
  const int D = p.padded_dim, pitch = mma::tile_pitch(D);
  const float scale = p.scale > 0.0f ? p.scale : 1.0f / std::sqrt(static_cast<float>(p.head_dim));
  const int64_t head_size = p.n * p.head_dim;
  out.assign(static_cast<size_t>(p.batch * p.heads * head_size), 0.0f);
  lse.assign(static_cast<size_t>(p.batch * p.heads * p.n), flash::kMinusInfinity);
  SharedTile q_tile(flash::kTileRows, pitch), k_tile(flash::kChunkKeys, pitch),
      v_tile(flash::kChunkKeys, pitch);

  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t offset = (b * p.heads + h) * head_size;
      const float *q = p.q.data() + offset, *k = p.k.data() + offset, *v = p.v.data() + offset;
      float* out_head = out.data() + offset;
      float* lse_head = lse.data() + (b * p.heads + h) * p.n;
      for (const LayoutPart& part : p.layout->head(h).parts) {  // the kernel: one launch per part
        const int B = static_cast<int>(part.block);
        // The kernel's thread block: tile_warps(B) warps of 16 rows (two for blocks narrower than 64).
        const int warps_per_tile = flash::tile_warps(B), tile = warps_per_tile * flash::kWarpRows;
        for (int64_t lane_index = 0; lane_index < part.lanes; ++lane_index) {
          const int64_t length = part.lane_length(lane_index, p.n);
          for (int64_t qb = 0; qb < part.num_blocks; ++qb) {
            for (int tile_row = 0; tile_row < B; tile_row += tile) {  // blockIdx.z
              const int64_t q_first = qb * B + tile_row;
              if (q_first >= length) break;
              const int q_rows =
                  static_cast<int>(std::min<int64_t>({tile, B - tile_row, length - q_first}));
              load_tile(q_tile, q, p.head_dim, part, lane_index, q_first, q_rows);
              std::array<WarpState, flash::kWarps> warps;
              for (int w = 0; w < warps_per_tile; ++w) {
                WarpState& warp = warps[static_cast<size_t>(w)];
                warp.rows_held = std::clamp(q_rows - w * flash::kWarpRows, 0, flash::kWarpRows);
                warp.o.assign(static_cast<size_t>(D / mma::kN), CFragment{});
                warp.q = row_operands(q_tile, w * flash::kWarpRows, D);
              }
              const int64_t list_end = part.row_begin[qb + 1];
              for (int64_t entry = part.row_begin[qb]; entry < list_end;) {
                const int pieces = flash::gathered_entries(part.row_mask.data() + entry, list_end - entry, B);
                const int32_t mask_index = part.row_mask[entry];
                for (int chunk = 0; chunk < B; chunk += flash::kChunkKeys) {
                  const flash::ListChunk keys =
                      flash::list_chunk(part.row_key.data() + entry, pieces, B, chunk, length);
                  if (keys.rows == 0) break;
                  const int k_rows = keys.rows;
                  load_chunk(k_tile, k, p.head_dim, part, lane_index, keys, B);
                  load_chunk(v_tile, v, p.head_dim, part, lane_index, keys, B);
                  for (int w = 0; w < warps_per_tile; ++w) {
                    WarpState& warp = warps[static_cast<size_t>(w)];
                    if (warp.rows_held == 0) continue;
                    std::array<CFragment, flash::kScoreTiles> s;
                    scores(warp, k_tile, D, s);
                    const flash::ChunkMask mask =
                        flash::chunk_mask(mask_index < 0 ? nullptr : part.mask(mask_index), part.mask_words,
                                          tile_row + w * flash::kWarpRows, chunk, warp.rows_held, k_rows);
                    softmax_chunk(warp, s, mask, scale);
                    accumulate_output(warp, s, v_tile, D, p.dtype);
                  }
                }
                entry += pieces;
              }
              for (int w = 0; w < warps_per_tile; ++w) {
                if (warps[static_cast<size_t>(w)].rows_held == 0) continue;
                write_rows(warps[static_cast<size_t>(w)], w, q_first, part, lane_index, p, out_head,
                           lse_head);
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace stx::test::warp
