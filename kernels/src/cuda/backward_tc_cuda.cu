// The block-sparse backward on tensor cores (float16 and bfloat16, sm_80 and later, head dims up to 128): the
// scalar backward's two passes (backward_cuda.cu: its Delta kernel, its launches per part and its finish(),
// so dK, dV and dQ stay deterministic), with every product on mma.m16n8k16 as in FlashAttention-2.
//   key pass    a thread block per 64 keys (32 for blocks narrower than 64), a warp per 16; per 64-query chunk of the query blocks that visit
//               the key block (a slice of one, or full blocks narrower than 64 gathered: flash_tile.h): S^T = K Q^T and dP^T = V dO^T, then P^T and dS^T per lane, dV += P^T dO and
//               dK += dS^T Q with P^T and dS^T taken from the accumulators as A operands.
//   query pass  a thread block per 64 queries: S = Q K^T, dP = dO V^T, dQ += dS K.
// The per-lane step (flash::probabilities_and_dscores) and the fragment maps are the ones the CPU suite runs
// through its warp model (tests/kernels/mma_warp_backward.cpp).
#include "cuda/attention_args.cuh"
#include "cuda/flash_tile.h"
#include "cuda/mma_instructions.cuh"

namespace stx::kernels::detail {
namespace {

namespace fl = stx::kernels::flash;
constexpr int kChunk = fl::kChunkKeys;
// Up to 64 head dims a warp holds its rows' A operands for the whole walk; at 128 the accumulators (dK and dV:
// 128 floats a lane) leave no room, and the operands are read from the tile again at each k-step.
template <int D>
constexpr bool kHoldOperands = D <= 64;

// Which gradients a key-pass launch accumulates: dK and dV together up to head dim 64; at 128 one launch each,
// as both accumulators with S^T and dP^T would need more registers than a thread has (ptxas spilled 64
// bytes). The dV launch computes S^T and P^T alone; the cost is S^T computed twice.
enum KeyGrads : int { kDv = 1, kDk = 2, kBoth = 3 };
template <int D>
constexpr int kKeyLaunches = D <= 64 ? 1 : 2;

template <int D, int WARPS>
constexpr size_t tc_backward_shared_bytes() {
  return sizeof(uint16_t) * static_cast<size_t>(2 * WARPS * fl::kWarpRows + 2 * kChunk) * mma::tile_pitch(D) +
         sizeof(float) * 2 * kChunk;
}

// lse and Delta of a chunk's rows into shared memory: -inf and 0 past them.
__device__ __forceinline__ void load_row_values(float* lse, float* delta, const float* lse_head,
                                                const float* delta_head, int64_t lane, int64_t step,
                                                const fl::ListChunk& rows, int block) {
  for (int r = threadIdx.x; r < kChunk; r += blockDim.x) {
    const bool held = r < rows.rows;
    const int64_t position = held ? lane + rows.position(block, r) * step : 0;
    lse[r] = held ? lse_head[position] : -INFINITY;
    delta[r] = held ? delta_head[position] : 0.0f;
  }
}

// Adds a warp's accumulated rows (times scale) through finish(): rows first_row + r of a lane.
template <class T, int D>
__device__ __forceinline__ void finish_rows(const float (&acc)[D / 8][4], float scale, int rows_held,
                                            int64_t first_row, int64_t lane, int64_t step, int dim,
                                            int32_t flags, float* partial, const Strides& partial_stride,
                                            T* grad, const Strides& grad_stride) {
  const int me = threadIdx.x % 32;
#pragma unroll
  for (int t = 0; t < D / 8; ++t) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const mma::Cell cell = mma::c_cell(me, i);
      const int d = t * mma::kN + cell.col;
      if (cell.row >= rows_held || d >= dim) continue;
      const int64_t position = lane + (first_row + cell.row) * step;
      finish(acc[t][i] * scale, flags, partial + position * partial_stride.seq + d,
             grad + position * grad_stride.seq + d);
    }
  }
}

template <class T, int D, int GRADS, int WARPS>
__global__ void __launch_bounds__(WARPS * 32, 2) key_tc_kernel(BackwardArgs<T> a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int P = mma::tile_pitch(D), TILE = WARPS * fl::kWarpRows;
  constexpr bool want_dk = GRADS & kDk, want_dv = GRADS & kDv;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  uint16_t* k_tile = reinterpret_cast<uint16_t*>(shared_bytes);   // [64 keys][P]
  uint16_t* v_tile = k_tile + TILE * P;                           // [TILE keys][P]
  uint16_t* q_tile = v_tile + TILE * P;                           // [64 queries][P]
  uint16_t* dout_tile = q_tile + kChunk * P;                      // [64 queries][P]
  float* lse = reinterpret_cast<float*>(dout_tile + kChunk * P);  // [64]
  float* delta = lse + kChunk;                                    // [64]

  const TileWork w = tile_work(a.items, a.parts, a.n, TILE);
  if (w.rows == 0) return;
  const WorkItem& item = w.item;
  const DevicePart& part = w.part;
  const int B = part.block, tile_col = w.offset, k_rows = w.rows;
  const int64_t batch = w.batch, step = w.step, lane = w.lane, length = w.length, k_first = w.first;

  const int64_t bh = batch * a.heads + item.head;
  const T* q = head_rows(a.q, a.q_stride, batch, item.head);
  const T* dout = head_rows(a.dout, a.dout_stride, batch, item.head);
  load_tile16<T, D, TILE>(k_tile, head_rows(a.k, a.k_stride, batch, item.head), a.k_stride.seq, lane, step,
                          k_first, k_rows, a.dim, a.vector_loads);
  load_tile16<T, D, TILE>(v_tile, head_rows(a.v, a.v_stride, batch, item.head), a.v_stride.seq, lane, step,
                          k_first, k_rows, a.dim, a.vector_loads);
  tiles_loaded();
  const int warp = threadIdx.x / 32, me = threadIdx.x % 32;
  const int keys_held = max(0, min(fl::kWarpRows, k_rows - warp * fl::kWarpRows));
  const RowOperands<D, kHoldOperands<D>> k_a(k_tile, warp * fl::kWarpRows), v_a(v_tile, warp * fl::kWarpRows);
  float dk[want_dk ? D / 8 : 1][4], dv[want_dv ? D / 8 : 1][4];
  zero(dk);
  zero(dv);

  const int64_t list_end = part.col_begin[item.block + 1];
  for (int64_t entry = part.col_begin[item.block]; entry < list_end;) {
    const int pieces = fl::gathered_entries(part.col_mask + entry, list_end - entry, B);
    const int32_t mask_index = part.col_mask[entry];
    for (int chunk = 0; chunk < B; chunk += kChunk) {
      const fl::ListChunk queries = fl::list_chunk(part.col_query + entry, pieces, B, chunk, length);
      if (queries.rows == 0) break;
      const int q_rows = queries.rows;
      __syncthreads();  // every warp is done with the previous chunk
      load_chunk16<T, D, kChunk>(q_tile, q, a.q_stride.seq, lane, step, queries, B, a.dim, a.vector_loads);
      load_chunk16<T, D, kChunk>(dout_tile, dout, a.dout_stride.seq, lane, step, queries, B, a.dim,
                                 a.vector_loads);
      load_row_values(lse, delta, a.lse + bh * a.n, a.delta + bh * a.n, lane, step, queries, B);
      tiles_loaded();
      if (keys_held == 0) continue;  // warp-uniform
      float s[fl::kScoreTiles][4], dp[want_dk ? fl::kScoreTiles : 1][4];
      zero(s);
      zero(dp);
      k_a.template product<T>(s, q_tile);  // S^T = K Q^T
      const fl::ChunkMask mask = fl::chunk_mask(block_mask(part, mask_index), part.mask_words, chunk,
                                                tile_col + warp * fl::kWarpRows, q_rows, keys_held);
      if constexpr (want_dk) {
        v_a.template product<T>(dp, dout_tile);  // dP^T = V dO^T
        fl::probabilities_and_dscores<true>(s, dp, me, mask, a.scale, lse, delta);
      } else {
        fl::probabilities<true>(s, me, mask, a.scale, lse);
      }
      if constexpr (want_dv) accumulate_from_scores<T, D>(dv, s, dout_tile);  // dV += P^T dO
      if constexpr (want_dk) accumulate_from_scores<T, D>(dk, dp, q_tile);    // dK += dS^T Q
    }
    entry += pieces;
  }
  if (keys_held == 0) return;
  const int64_t first_key = k_first + warp * fl::kWarpRows;
  if constexpr (want_dk) {
    finish_rows<T, D>(dk, a.scale, keys_held, first_key, lane, step, a.dim, item.flags,
                      head_rows(a.partial_a, a.partial_a_stride, batch, item.head), a.partial_a_stride,
                      head_rows(a.grad_a, a.grad_a_stride, batch, item.head), a.grad_a_stride);
  }
  if constexpr (want_dv) {
    finish_rows<T, D>(dv, 1.0f, keys_held, first_key, lane, step, a.dim, item.flags,
                      head_rows(a.partial_b, a.partial_b_stride, batch, item.head), a.partial_b_stride,
                      head_rows(a.grad_b, a.grad_b_stride, batch, item.head), a.grad_b_stride);
  }
#elif defined(__CUDA_ARCH__)
  __trap();  // built without sm_80 code (tensor_cores_usable refuses such a build): fail loudly, never silently
#endif
}

template <class T, int D, int WARPS>
__global__ void __launch_bounds__(WARPS * 32, 2) query_tc_kernel(BackwardArgs<T> a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int P = mma::tile_pitch(D), TILE = WARPS * fl::kWarpRows;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  uint16_t* q_tile = reinterpret_cast<uint16_t*>(shared_bytes);  // [64 queries][P]
  uint16_t* dout_tile = q_tile + TILE * P;                       // [TILE queries][P]
  uint16_t* k_tile = dout_tile + TILE * P;                       // [64 keys][P]
  uint16_t* v_tile = k_tile + kChunk * P;                        // [64 keys][P]
  float* lse = reinterpret_cast<float*>(v_tile + kChunk * P);    // [64 queries]
  float* delta = lse + kChunk;                                   // [64 queries]

  const TileWork w = tile_work(a.items, a.parts, a.n, TILE);
  if (w.rows == 0) return;
  const WorkItem& item = w.item;
  const DevicePart& part = w.part;
  const int B = part.block, tile_row = w.offset, q_rows = w.rows;
  const int64_t batch = w.batch, step = w.step, lane = w.lane, length = w.length, q_first = w.first;

  const int64_t bh = batch * a.heads + item.head;
  const T* k = head_rows(a.k, a.k_stride, batch, item.head);
  const T* v = head_rows(a.v, a.v_stride, batch, item.head);
  load_tile16<T, D, TILE>(q_tile, head_rows(a.q, a.q_stride, batch, item.head), a.q_stride.seq, lane, step,
                          q_first, q_rows, a.dim, a.vector_loads);
  load_tile16<T, D, TILE>(dout_tile, head_rows(a.dout, a.dout_stride, batch, item.head), a.dout_stride.seq,
                          lane, step, q_first, q_rows, a.dim, a.vector_loads);
  load_row_values(lse, delta, a.lse + bh * a.n, a.delta + bh * a.n, lane, step,
                  fl::ListChunk{nullptr, 1, q_first, q_rows}, B);
  tiles_loaded();
  const int warp = threadIdx.x / 32, me = threadIdx.x % 32;
  const int rows_held = max(0, min(fl::kWarpRows, q_rows - warp * fl::kWarpRows));
  const RowOperands<D, kHoldOperands<D>> q_a(q_tile, warp * fl::kWarpRows),
      dout_a(dout_tile, warp * fl::kWarpRows);
  float dq[D / 8][4];
  zero(dq);

  const int64_t list_end = part.row_begin[item.block + 1];
  for (int64_t entry = part.row_begin[item.block]; entry < list_end;) {
    const int pieces = fl::gathered_entries(part.row_mask + entry, list_end - entry, B);
    const int32_t mask_index = part.row_mask[entry];
    for (int chunk = 0; chunk < B; chunk += kChunk) {
      const fl::ListChunk keys = fl::list_chunk(part.row_key + entry, pieces, B, chunk, length);
      if (keys.rows == 0) break;
      const int k_rows = keys.rows;
      __syncthreads();
      load_chunk16<T, D, kChunk>(k_tile, k, a.k_stride.seq, lane, step, keys, B, a.dim, a.vector_loads);
      load_chunk16<T, D, kChunk>(v_tile, v, a.v_stride.seq, lane, step, keys, B, a.dim, a.vector_loads);
      tiles_loaded();
      if (rows_held == 0) continue;
      float s[fl::kScoreTiles][4], dp[fl::kScoreTiles][4];
      zero(s);
      zero(dp);
      q_a.template product<T>(s, k_tile);      // S = Q K^T
      dout_a.template product<T>(dp, v_tile);  // dP = dO V^T
      const fl::ChunkMask mask = fl::chunk_mask(block_mask(part, mask_index), part.mask_words,
                                                tile_row + warp * fl::kWarpRows, chunk, rows_held, k_rows);
      fl::probabilities_and_dscores<false>(s, dp, me, mask, a.scale, lse + warp * fl::kWarpRows,
                                           delta + warp * fl::kWarpRows);
      accumulate_from_scores<T, D>(dq, dp, k_tile);  // dQ += dS K
    }
    entry += pieces;
  }
  if (rows_held == 0) return;
  finish_rows<T, D>(dq, a.scale, rows_held, q_first + warp * fl::kWarpRows, lane, step, a.dim, item.flags,
                    head_rows(a.partial_a, a.partial_a_stride, batch, item.head), a.partial_a_stride,
                    head_rows(a.grad_a, a.grad_a_stride, batch, item.head), a.grad_a_stride);
#elif defined(__CUDA_ARCH__)
  __trap();  // built without sm_80 code (tensor_cores_usable refuses such a build): fail loudly, never silently
#endif
}

template <class T, int D, int WARPS>
void launch_tc_passes(BackwardArgs<T> a, const BackwardParams& p, const DeviceLayout& layout,
                      const BackwardScratch& scratch) {
  const cudaStream_t stream = static_cast<cudaStream_t>(p.stream);
  constexpr size_t shared = tc_backward_shared_bytes<D, WARPS>();
  constexpr int tile = WARPS * fl::kWarpRows, threads = WARPS * 32;
  const auto launch = [&](auto kernel) {
    launch_slots(kernel, a, layout, p.batch, p.layout->block, tile, shared, stream, threads);
  };
  set_key_pass(a, p, scratch);
  if constexpr (kKeyLaunches<D> == 1) {
    launch(key_tc_kernel<T, D, kBoth, WARPS>);
  } else {
    launch(key_tc_kernel<T, D, kDv, WARPS>);
    launch(key_tc_kernel<T, D, kDk, WARPS>);
  }
  set_query_pass(a, p, scratch);
  launch(query_tc_kernel<T, D, WARPS>);
}

}  // namespace

bool tensor_core_backward_applies(const BackwardParams& p) {
  return p.head_dim <= 128 && tensor_cores_usable(p.dtype);
}

void backward_tc_cuda(const BackwardParams& p, const DeviceLayout& layout, const float* delta,
                      const BackwardScratch& scratch) {
  dispatch_tensor_core<128>(p.dtype, p.head_dim, [&](auto type, auto dim) {
    using T = typename decltype(type)::type;
    constexpr int d = decltype(dim)::value;
    if (fl::tile_warps(p.layout->block) == fl::kWarps) {
      launch_tc_passes<T, d, fl::kWarps>(backward_args<T>(p, layout, delta), p, layout, scratch);
    } else {
      launch_tc_passes<T, d, 2>(backward_args<T>(p, layout, delta), p, layout, scratch);
    }
  });
}

}  // namespace stx::kernels::detail
