// The block-sparse forward on tensor cores (float16 and bfloat16, sm_80 and later, head dims up to 128):
// flash attention over our layouts. One thread block per (work item, batch, 64-row query tile), as the
// scalar forward (forward_cuda.cu) and with its launches per part and its merge through the log-sum-exp;
// four warps of 16 query rows each (two for blocks narrower than 64). Per 64-key chunk of the listed key blocks (a slice of one block, or
// full blocks narrower than 64 gathered: flash_tile.h's walk) a warp computes S = Q K^T with mma.m16n8k16
// (Q in registers for the whole walk, K through ldmatrix), masks only the blocks the layout marks partial,
// runs the online softmax in registers, and accumulates O += P V with P taken straight from S's
// accumulators (V through ldmatrix .trans). The fragment maps and every per-lane step
// are in mma_fragments.h and flash_tile.h, which the CPU suite runs through its model of a warp.
#include "cuda/attention_args.cuh"
#include "cuda/flash_tile.h"
#include "cuda/mma_instructions.cuh"

namespace stx::kernels::detail {
namespace {

namespace fl = stx::kernels::flash;

template <int D, int WARPS>
constexpr size_t tc_shared_bytes() {
  const size_t rows = WARPS * fl::kWarpRows + 2 * fl::kChunkKeys;
  return sizeof(uint16_t) * rows * mma::tile_pitch(D);
}

// WARPS warps of 16 query rows each (flash::tile_warps: 4, or 2 for blocks narrower than 64).
template <class T, int D, int WARPS>
__global__ void __launch_bounds__(WARPS * 32, 2) forward_tc_kernel(ForwardArgs<T> a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  static_assert(WARPS == 2 || WARPS == fl::kWarps, "a tile of 32 or 64 query rows");
  static_assert(D % 16 == 0 && D <= 128, "head dims are padded to 32, 48, 64 or 128");
  constexpr int P = mma::tile_pitch(D), OUT_TILES = D / mma::kN, TILE = WARPS * fl::kWarpRows;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  uint16_t* q_tile = reinterpret_cast<uint16_t*>(shared_bytes);  // [TILE][P]
  uint16_t* k_tile = q_tile + TILE * P;                          // [kChunkKeys][P]
  uint16_t* v_tile = k_tile + fl::kChunkKeys * P;                // [kChunkKeys][P]

  const TileWork w = tile_work(a.items, a.parts, a.n, TILE);
  if (w.rows == 0) return;  // the lane ends before this tile
  const WorkItem& item = w.item;
  const DevicePart& part = w.part;
  const int B = part.block, tile_row = w.offset, q_rows = w.rows;
  const int64_t batch = w.batch, step = w.step, view_lane = w.lane, length = w.length, q_first = w.first;
  const T* k = head_rows(a.k, a.k_stride, w.batch, w.item.head);
  const T* v = head_rows(a.v, a.v_stride, w.batch, w.item.head);
  load_tile16<T, D, TILE>(q_tile, head_rows(a.q, a.q_stride, w.batch, w.item.head), a.q_stride.seq, view_lane,
                          step, q_first, q_rows, a.dim, a.vector_loads);
  tiles_loaded();

  const int warp = threadIdx.x / 32, me = threadIdx.x % 32;
  const int rows_held = max(0, min(fl::kWarpRows, q_rows - warp * fl::kWarpRows));
  uint32_t q_frag[D / 16][4];
  row_operands<D>(q_frag, q_tile, warp * fl::kWarpRows);
  float o[OUT_TILES][mma::kCValues];
  zero(o);
  fl::RowState state;

  const int64_t list_end = part.row_begin[item.block + 1];
  for (int64_t entry = part.row_begin[item.block]; entry < list_end;) {
    const int pieces = fl::gathered_entries(part.row_mask + entry, list_end - entry, B);
    const int32_t mask_index = part.row_mask[entry];
    for (int chunk = 0; chunk < B; chunk += fl::kChunkKeys) {
      const fl::ListChunk keys = fl::list_chunk(part.row_key + entry, pieces, B, chunk, length);
      if (keys.rows == 0) break;
      const int k_rows = keys.rows;
      __syncthreads();  // every warp is done with the previous chunk's k_tile and v_tile
      load_chunk16<T, D, fl::kChunkKeys>(k_tile, k, a.k_stride.seq, view_lane, step, keys, B, a.dim,
                                         a.vector_loads);
      load_chunk16<T, D, fl::kChunkKeys>(v_tile, v, a.v_stride.seq, view_lane, step, keys, B, a.dim,
                                         a.vector_loads);
      tiles_loaded();
      if (rows_held == 0) continue;  // warp-uniform: this warp's rows are past the tile's end

      float s[fl::kScoreTiles][mma::kCValues];
      zero(s);
      chunk_product<T, D>(s, q_frag, k_tile);  // S = Q K^T

      const fl::ChunkMask mask = fl::chunk_mask(block_mask(part, mask_index), part.mask_words,
                                                tile_row + warp * fl::kWarpRows, chunk, rows_held, k_rows);
      float chunk_max[2];
      fl::mask_and_scale(s, me, mask, a.scale, chunk_max);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        chunk_max[half] = fmaxf(chunk_max[half], __shfl_xor_sync(0xffffffffu, chunk_max[half], 1));
        chunk_max[half] = fmaxf(chunk_max[half], __shfl_xor_sync(0xffffffffu, chunk_max[half], 2));
      }
      fl::softmax_step(s, chunk_max, state, o);

      accumulate_from_scores<T, D>(o, s, v_tile);  // O += P V
    }
    entry += pieces;
  }
  if (rows_held == 0) return;

    // The epilogue: the quad's sums, then each row merged with the earlier parts through the lse.
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    state.sum[half] += __shfl_xor_sync(0xffffffffu, state.sum[half], 1);
    state.sum[half] += __shfl_xor_sync(0xffffffffu, state.sum[half], 2);
  }
  float part_lse[2], normaliser[2];
  fl::finish_rows(state, part_lse, normaliser);
  const bool first = item.flags & kFirstPart, last = item.flags & kLastPart;
  float* lse = a.lse + (batch * a.heads + item.head) * a.n;
  fl::MergeWeights merge[2];
  int64_t position[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = mma::group_of(me) + half * 8;
    position[half] = view_lane + (q_first + warp * fl::kWarpRows + row) * step;
    const float old_lse = first || row >= rows_held ? fl::kMinusInfinity : lse[position[half]];
    merge[half] = fl::merge_weights(old_lse, part_lse[half]);
  }
  __syncwarp();  // every lane of a quad has read its rows' old lse before one of them writes the new one
  T* out = head_rows(a.out, a.out_stride, batch, item.head);
  float* partial = head_rows(a.partial, a.partial_stride, batch, item.head);
#pragma unroll
  for (int t = 0; t < OUT_TILES; ++t) {
#pragma unroll
    for (int i = 0; i < mma::kCValues; ++i) {
      const mma::Cell cell = mma::c_cell(me, i);
      const int half = i >> 1, dim = t * mma::kN + cell.col;
      if (cell.row >= rows_held || dim >= a.dim) continue;
      float value = merge[half].new_weight * o[t][i] * normaliser[half];
      float* partial_at = partial + position[half] * a.partial_stride.seq + dim;
      if (merge[half].old_weight != 0.0f) value += merge[half].old_weight * *partial_at;
      if (last) {
        store_float(out + position[half] * a.out_stride.seq + dim, value);
      } else {
        *partial_at = value;
      }
    }
  }
  if (mma::in_group(me) == 0) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      if (mma::group_of(me) + half * 8 < rows_held) lse[position[half]] = merge[half].lse;
    }
  }
#elif defined(__CUDA_ARCH__)
  __trap();  // built without sm_80 code (tensor_cores_usable refuses such a build): fail loudly, never silently
#endif
}

template <class T, int D, int WARPS>
void launch_tc_with(const ForwardParams& p, const DeviceLayout& layout, float* partial,
                    const Strides& partial_stride) {
  ForwardArgs<T> a = forward_args<T>(p, layout, partial, partial_stride);
  launch_slots(forward_tc_kernel<T, D, WARPS>, a, layout, p.batch, p.layout->block, WARPS * fl::kWarpRows,
               tc_shared_bytes<D, WARPS>(), static_cast<cudaStream_t>(p.stream), WARPS * 32);
}

template <class T, int D>
void launch_tc(const ForwardParams& p, const DeviceLayout& layout, float* partial,
               const Strides& partial_stride) {
  if (fl::tile_warps(p.layout->block) == fl::kWarps) {
    launch_tc_with<T, D, fl::kWarps>(p, layout, partial, partial_stride);
  } else {
    launch_tc_with<T, D, 2>(p, layout, partial, partial_stride);
  }
}

}  // namespace

bool tensor_cores_usable(DType dtype) {
  if (dtype == DType::f32) return false;
  static const bool disabled = [] {
    const char* flag = std::getenv("STX_CUDA_TENSOR_CORES");
    return flag != nullptr && std::string(flag) == "0";
  }();
  if (disabled) return false;
  int device = 0, major = 0;
  STX_CUDA_CHECK(cudaGetDevice(&device));
  STX_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  if (major < 8) return false;
  // The kernels' code must be for sm_80 or later: a build for older GPUs only, JIT-compiled from its PTX on
  // a newer one, holds them with no body.
  static const bool built_for_sm80 = [] {
    cudaFuncAttributes attributes{};
    const bool found =
        cudaFuncGetAttributes(&attributes, forward_tc_kernel<__half, 64, fl::kWarps>) == cudaSuccess;
    if (!found) (void)cudaGetLastError();  // not left for the next launch's check to find
    return found && attributes.ptxVersion >= 80;
  }();
  return built_for_sm80;
}

bool tensor_core_forward_applies(const ForwardParams& p) {
  return p.head_dim <= 128 && tensor_cores_usable(p.dtype);
}

void forward_tc_cuda(const ForwardParams& p, const DeviceLayout& layout, float* partial,
                     const Strides& partial_stride) {
  dispatch_tensor_core<128>(p.dtype, p.head_dim, [&](auto type, auto dim) {
    launch_tc<typename decltype(type)::type, decltype(dim)::value>(p, layout, partial, partial_stride);
  });
}

}  // namespace stx::kernels::detail
