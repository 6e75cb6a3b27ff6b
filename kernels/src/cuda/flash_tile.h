// One warp's share of the tensor-core forward (forward_tc_cuda.cu), lane by lane: what each lane does with
// the score and output accumulators it holds between the warp-wide instructions (mma, ldmatrix, the quad
// shuffles). The device kernel and the CPU suite's model of a warp (tests/kernels/mma_warp_model.h) run
// these same functions, so the masking, the online softmax, the row bookkeeping and the epilogue's cells
// are tested on the host against the naive reference.
//
// A warp owns 16 query rows. Per chunk of kChunkKeys keys it holds S as kScoreTiles 16 x 8 accumulator
// tiles (mma_fragments.h's C layout: a lane holds rows g and g + 8, "halves" 0 and 1 below), and O as
// D / 8 tiles of the same layout over the head dims.
#pragma once

#include <cstdint>

#include "cuda/mma_fragments.h"

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

namespace stx::kernels::flash {

constexpr int kChunkKeys = 64;                     // keys per step of the walk over a key block
constexpr int kScoreTiles = kChunkKeys / mma::kN;  // 8 accumulator tiles of S per warp
constexpr int kWarpRows = mma::kM;                 // 16 query rows per warp
constexpr int kWarps = 4;                          // warps per thread block, at most
constexpr int kTileRows = kWarps * kWarpRows;      // 64 query rows per thread block, at most

// Warps of a thread block for blocks of `block` rows: four, but two for blocks narrower than 64, whose rows
// two warps hold (B = 32; B = 16 leaves one idle): idle warps would hold registers and shared memory that
// other thread blocks could run in.
STX_HOST_DEVICE constexpr int tile_warps(int block) { return block >= kTileRows ? kWarps : 2; }
constexpr float kMinusInfinity = -__builtin_huge_valf();

// The fast exponential and logarithm on the device (as the scalar kernels, --use_fast_math), the exact ones
// in the host model.
#if defined(__CUDA_ARCH__)
STX_HOST_DEVICE float exp_of(float x) { return __expf(x); }
STX_HOST_DEVICE float log_of(float x) { return __logf(x); }
#else
STX_HOST_DEVICE float exp_of(float x) { return std::exp(x); }
STX_HOST_DEVICE float log_of(float x) { return std::log(x); }
#endif

// Which scores of a chunk count, for one warp: the block's mask (null: a full block), how many rows and
// keys hold data, and where the warp's rows and the chunk's keys start inside their blocks.
struct ChunkMask {
  const uint64_t* mask = nullptr;  // B rows of mask_words words; bit c of row r: query r attends key c
  int64_t mask_words = 0;
  int first_row = 0;  // block row of the warp's row 0
  int first_key = 0;  // block column of the chunk's key 0
  int rows = 0;       // the warp's rows that exist (0..16)
  int keys = 0;       // the chunk's keys that exist (0..kChunkKeys)
};

STX_HOST_DEVICE ChunkMask chunk_mask(const uint64_t* mask, int64_t mask_words, int first_row, int first_key,
                                     int rows, int keys) {
  return ChunkMask{mask, mask_words, first_row, first_key, rows, keys};
}

STX_HOST_DEVICE bool attends(const ChunkMask& m, int row, int key) {
  if (row >= m.rows || key >= m.keys) return false;
  if (m.mask == nullptr) return true;
  const int r = m.first_row + row, c = m.first_key + key;
  return (m.mask[r * m.mask_words + (c >> 6)] >> (c & 63)) & 1u;
}

// ---- the walk over a block list, a chunk at a time ------------------------------------------------------
// A chunk is what one step of the walk loads: up to kChunkKeys positions (keys; queries in the key pass).
// Blocks of kChunkKeys positions or more are walked a slice at a time. Narrower blocks that the layout marks
// full are gathered, up to kChunkKeys / B consecutive entries of the list to a chunk, so that their products
// run on whole chunks (the fixed pattern's summary columns: with B = c = 32 two rows' summaries fill one). A
// partial block keeps a chunk of its own, so that a chunk has at most one mask.

// How many list entries the chunk that starts at an entry gathers: masks points at that entry's mask index
// (-1: full) and entries_left counts it and those after it in the list.
STX_HOST_DEVICE int gathered_entries(const int32_t* masks, int64_t entries_left, int block) {
  if (block >= kChunkKeys || masks[0] >= 0) return 1;
  const int most = kChunkKeys / block;
  int entries = 1;
  while (entries < most && entries < entries_left && masks[entries] < 0) ++entries;
  return entries;
}

// Position of row r of a gathered chunk whose blocks are blocks[0 .. pieces): r's block's start plus r's place.
STX_HOST_DEVICE int64_t gathered_position(const int32_t* blocks, int block, int r) {
  return int64_t{blocks[r / block]} * block + r % block;
}

// Positions of a chunk that hold data: at most kChunkKeys, no further than the block's or the lane's end.
STX_HOST_DEVICE int chunk_rows(int to_block_end, int64_t to_lane_end) {
  const int most = kChunkKeys < to_block_end ? kChunkKeys : to_block_end;
  return static_cast<int>(to_lane_end < most ? to_lane_end : most);
}

// One chunk of the walk: the list's block indices from its first entry, the entries it gathers, its first
// position (a slice of one block) and the positions that hold data.
struct ListChunk {
  const int32_t* blocks;
  int pieces;
  int64_t first;
  int rows;

  STX_HOST_DEVICE int64_t position(int block, int r) const {
    return pieces > 1 ? gathered_position(blocks, block, r) : first + r;
  }
};

// The chunk that starts `slice` positions into the block of blocks[0] (a slice of a wide block), or gathers
// `pieces` entries; rows 0 when it starts at or past the lane's `length`.
STX_HOST_DEVICE ListChunk list_chunk(const int32_t* blocks, int pieces, int block, int slice,
                                     int64_t length) {
  ListChunk c{blocks, pieces, int64_t{blocks[0]} * block + slice, 0};
  if (c.first >= length) return c;
  // Gathered blocks are full, and the layout marks a block full only when all its B x B pairs are attended
  // (layout.cpp), so none reaches past the lane's end.
  c.rows = pieces > 1 ? pieces * block : chunk_rows(block - slice, length - c.first);
  return c;
}

// A lane's running softmax state for its two rows (g and g + 8): the max so far, and the lane's own part of
// the sum (the quad adds its four parts once, at the end).
struct RowState {
  float max[2] = {kMinusInfinity, kMinusInfinity};
  float sum[2] = {0.0f, 0.0f};
};

// Scales the lane's scores and sets those of pairs not attended to -inf; writes the lane's max of each half
// into chunk_max (before the quad's reduction).
STX_HOST_DEVICE void mask_and_scale(float (&s)[kScoreTiles][mma::kCValues], int lane, const ChunkMask& m,
                                    float scale, float (&chunk_max)[2]) {
  chunk_max[0] = chunk_max[1] = kMinusInfinity;
  STX_UNROLL
  for (int tile = 0; tile < kScoreTiles; ++tile) {
    STX_UNROLL
    for (int i = 0; i < mma::kCValues; ++i) {
      const mma::Cell cell = mma::c_cell(lane, i);
      const float x = attends(m, cell.row, tile * mma::kN + cell.col) ? s[tile][i] * scale : kMinusInfinity;
      s[tile][i] = x;
      chunk_max[i >> 1] = chunk_max[i >> 1] > x ? chunk_max[i >> 1] : x;
    }
  }
}

// After the quad's max (chunk_max now the same in the four lanes of a row): the new running max, the
// factor that rescales what came before, p = exp(s - max) in place of s, the lane's sums, and O rescaled.
template <int OUT_TILES>
STX_HOST_DEVICE void softmax_step(float (&s)[kScoreTiles][mma::kCValues], const float (&chunk_max)[2],
                                  RowState& state, float (&o)[OUT_TILES][mma::kCValues]) {
  float rescale[2];
  STX_UNROLL
  for (int half = 0; half < 2; ++half) {
    const float old_max = state.max[half];
    const float new_max = old_max > chunk_max[half] ? old_max : chunk_max[half];
    rescale[half] = old_max == kMinusInfinity ? 0.0f : exp_of(old_max - new_max);
    state.max[half] = new_max;
    state.sum[half] *= rescale[half];
  }
  STX_UNROLL
  for (int tile = 0; tile < kScoreTiles; ++tile) {
    STX_UNROLL
    for (int i = 0; i < mma::kCValues; ++i) {
      const int half = i >> 1;
      const float p = s[tile][i] == kMinusInfinity ? 0.0f : exp_of(s[tile][i] - state.max[half]);
      s[tile][i] = p;
      state.sum[half] += p;
    }
  }
  STX_UNROLL
  for (int tile = 0; tile < OUT_TILES; ++tile) {
    STX_UNROLL
    for (int i = 0; i < mma::kCValues; ++i) o[tile][i] *= rescale[i >> 1];
  }
}

// After the quad's sum of state.sum: each half's log-sum-exp (-inf for a row that attended nothing) and the
// factor that normalises its output (0 then: out = 0, as the reference has it).
STX_HOST_DEVICE void finish_rows(const RowState& state, float (&lse)[2], float (&normaliser)[2]) {
  STX_UNROLL
  for (int half = 0; half < 2; ++half) {
    const bool empty = !(state.sum[half] > 0.0f);
    lse[half] = empty ? kMinusInfinity : state.max[half] + log_of(state.sum[half]);
    normaliser[half] = empty ? 0.0f : 1.0f / state.sum[half];
  }
}

// Merging a part into the parts before it through their log-sum-exps (both may be -inf): the weights of
// the old and the new output, and the merged lse.
struct MergeWeights {
  float old_weight, new_weight, lse;
};
STX_HOST_DEVICE MergeWeights merge_weights(float old_lse, float new_lse) {
  const float hi = old_lse > new_lse ? old_lse : new_lse, lo = old_lse > new_lse ? new_lse : old_lse;
  if (hi == kMinusInfinity) return MergeWeights{0.0f, 0.0f, kMinusInfinity};
  const float merged = lo == kMinusInfinity ? hi : hi + log_of(1.0f + exp_of(lo - hi));
  return MergeWeights{exp_of(old_lse - merged), exp_of(new_lse - merged), merged};
}

}  // namespace stx::kernels::flash

namespace stx::kernels::flash {

// ---- the backward ----------------------------------------------------------------------------------
// P = exp(scale S - lse) and dS = P (dP - delta) of one chunk for a lane, in place of S and dP, with 0 where a
// pair is not attended or its query attends nothing (lse = -inf). The query pass holds S (a warp's 16 queries
// by the chunk's keys), the key pass S^T (a warp's 16 keys by the chunk's queries: KEYS_AS_ROWS). lse and
// delta are indexed by query, counted as the mask counts its rows (ChunkMask: rows are queries).
// One cell's probability, and the query it belongs to (its lse and delta index).
template <bool KEYS_AS_ROWS>
STX_HOST_DEVICE float probability_of(float score, int lane, int tile, int i, const ChunkMask& m, float scale,
                                     const float* lse, int& query) {
  const mma::Cell cell = mma::c_cell(lane, i);
  const int across = tile * mma::kN + cell.col;
  query = KEYS_AS_ROWS ? across : cell.row;
  const int key = KEYS_AS_ROWS ? cell.row : across;
  if (!attends(m, query, key) || lse[query] == kMinusInfinity) return 0.0f;
  return exp_of(score * scale - lse[query]);
}

template <bool KEYS_AS_ROWS>
STX_HOST_DEVICE void probabilities_and_dscores(float (&s)[kScoreTiles][mma::kCValues],
                                               float (&dp)[kScoreTiles][mma::kCValues], int lane,
                                               const ChunkMask& m, float scale, const float* lse,
                                               const float* delta) {
  STX_UNROLL
  for (int tile = 0; tile < kScoreTiles; ++tile) {
    STX_UNROLL
    for (int i = 0; i < mma::kCValues; ++i) {
      int query = 0;
      const float p = probability_of<KEYS_AS_ROWS>(s[tile][i], lane, tile, i, m, scale, lse, query);
      s[tile][i] = p;
      dp[tile][i] = p * (dp[tile][i] - delta[query]);
    }
  }
}

// P alone, where only dV is wanted (the key pass's dV launch at head dim 128).
template <bool KEYS_AS_ROWS>
STX_HOST_DEVICE void probabilities(float (&s)[kScoreTiles][mma::kCValues], int lane, const ChunkMask& m,
                                   float scale, const float* lse) {
  STX_UNROLL
  for (int tile = 0; tile < kScoreTiles; ++tile) {
    STX_UNROLL
    for (int i = 0; i < mma::kCValues; ++i) {
      int query = 0;
      s[tile][i] = probability_of<KEYS_AS_ROWS>(s[tile][i], lane, tile, i, m, scale, lse, query);
    }
  }
}

}  // namespace stx::kernels::flash
