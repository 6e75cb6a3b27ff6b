// The warp-wide instructions of the tensor-core kernels (ldmatrix, mma.m16n8k16), the packing of their 16-bit
// operands, and the copy of a sequence tile into shared memory at mma_fragments.h's pitch. sm_80 and later.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "cuda/cuda_common.cuh"
#include "cuda/flash_tile.h"
#include "cuda/mma_fragments.h"

namespace stx::kernels::detail {

// ---- the warp-wide instructions ---------------------------------------------------------------------

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

// 16 bytes from global to shared memory without passing through registers (both 16-byte aligned); complete
// only after cp_async_wait_all().
__device__ __forceinline__ void cp_async_16(void* shared, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(shared)), "l"(global)
               : "memory");
}

__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// After a thread block's tile loads: this thread's copies landed, then every thread's.
__device__ __forceinline__ void tiles_loaded() {
  cp_async_wait_all();
  __syncthreads();
}

// c += a b for one m16n8k16 with fp32 accumulators.
template <class T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats as one register of two 16-bit values, `low` in the low half (the lower-numbered value).
template <class T>
__device__ __forceinline__ uint32_t pack(float low, float high) {
  uint32_t r;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(low, high);
    memcpy(&r, &v, 4);
  } else {
    const __half2 v = __floats2half2_rn(low, high);
    memcpy(&r, &v, 4);
  }
  return r;
}

// ---- tiles in shared memory: 16-bit values at mma::tile_pitch, copied 16 bytes at a time -----------------

// Rows 0 .. rows - 1 of a tile of ROWS x pitch 16-bit values from positions position_of(r) of a lane; zeros
// elsewhere (missing rows and dims past `dim`), so that the padding adds nothing to a dot product. Aligned
// rows (vector_loads) are copied with cp.async: the tile holds them once tiles_loaded() has run.
template <class T, int D, int ROWS, class PositionOf>
__device__ void load_rows16(uint16_t* tile, const T* head, int64_t seq_stride, int64_t lane, int64_t step,
                            int rows, int dim, bool vector_loads, PositionOf position_of) {
  constexpr int P = mma::tile_pitch(D), CHUNKS = D / mma::kChunkValues;
  for (int e = threadIdx.x; e < ROWS * CHUNKS; e += blockDim.x) {
    const int r = e / CHUNKS, c = (e % CHUNKS) * mma::kChunkValues;
    uint4 value = make_uint4(0, 0, 0, 0);
    if (r < rows) {
      const T* src = head + (lane + position_of(r) * step) * seq_stride + c;
      if (vector_loads && c < dim) {
        cp_async_16(tile + r * P + c, src);
        continue;
      }
      T values[mma::kChunkValues];
#pragma unroll
      for (int j = 0; j < mma::kChunkValues; ++j) values[j] = c + j < dim ? src[j] : T(0.0f);
      memcpy(&value, values, sizeof(value));
    }
    *reinterpret_cast<uint4*>(tile + r * P + c) = value;
  }
}

// Rows [first, first + rows) of a lane.
template <class T, int D, int ROWS>
__device__ void load_tile16(uint16_t* tile, const T* head, int64_t seq_stride, int64_t lane, int64_t step,
                            int64_t first, int rows, int dim, bool vector_loads) {
  load_rows16<T, D, ROWS>(tile, head, seq_stride, lane, step, rows, dim, vector_loads,
                          [first](int r) { return first + r; });
}

// A chunk's rows from the whole blocks blocks[0 ..] of B positions each (flash::gathered_position).
template <class T, int D, int ROWS>
__device__ void load_gathered16(uint16_t* tile, const T* head, int64_t seq_stride, int64_t lane, int64_t step,
                                const int32_t* blocks, int block, int rows, int dim, bool vector_loads) {
  load_rows16<T, D, ROWS>(tile, head, seq_stride, lane, step, rows, dim, vector_loads,
                          [=](int r) { return flash::gathered_position(blocks, block, r); });
}

// A chunk's positions of a lane into a tile of ROWS rows.
template <class T, int D, int ROWS>
__device__ void load_chunk16(uint16_t* tile, const T* head, int64_t seq_stride, int64_t lane, int64_t step,
                             const flash::ListChunk& c, int block, int dim, bool vector_loads) {
  if (c.pieces > 1) {
    load_gathered16<T, D, ROWS>(tile, head, seq_stride, lane, step, c.blocks, block, c.rows, dim,
                                vector_loads);
  } else {
    load_tile16<T, D, ROWS>(tile, head, seq_stride, lane, step, c.first, c.rows, dim, vector_loads);
  }
}

// Calls f(TypeTag<__half or __nv_bfloat16>{}, std::integral_constant<int, D>{}) for a 16-bit dtype, with D the
// smallest of 32, 48, 64 and 128 (up to MAX_D) that holds head_dim: the tensor-core kernels' instantiations.
template <int MAX_D, class F>
void dispatch_tensor_core(DType dtype, int64_t head_dim, F&& f) {
  const auto with_type = [&](auto type) {
    if (head_dim <= 32) return f(type, std::integral_constant<int, 32>{});
    if (head_dim <= 48) return f(type, std::integral_constant<int, 48>{});
    if constexpr (MAX_D == 64) return f(type, std::integral_constant<int, 64>{});
    if constexpr (MAX_D == 128) {
      if (head_dim <= 64) return f(type, std::integral_constant<int, 64>{});
      return f(type, std::integral_constant<int, 128>{});
    }
  };
  if (dtype == DType::bf16) {
    with_type(TypeTag<__nv_bfloat16>{});
  } else {
    with_type(TypeTag<__half>{});
  }
}

// One thread block's tile of a work item (blockIdx.x: the item, .y: the batch element, .z: which tile of
// `tile_rows` rows of the item's block): where its rows start in the view's lane and how many hold data.
struct TileWork {
  WorkItem item;
  DevicePart part;
  int64_t batch, step, lane, length;  // length: the lane's positions
  int offset;                         // the tile's first row inside the item's block
  int64_t first;                      // its index in the lane
  int rows;                           // rows that hold data; 0 when the lane ends before the tile
};

__device__ __forceinline__ TileWork tile_work(const WorkItem* items, const DevicePart* parts, int64_t n,
                                              int tile_rows) {
  TileWork w;
  w.item = items[blockIdx.x];
  w.part = parts[w.item.part];
  w.batch = blockIdx.y;
  w.step = w.part.step;
  w.lane = w.item.lane;
  w.length = lane_length(n, w.lane, w.step);
  w.offset = blockIdx.z * tile_rows;
  w.first = int64_t{w.item.block} * w.part.block + w.offset;
  w.rows = w.first >= w.length ? 0 : flash::chunk_rows(w.part.block - w.offset, w.length - w.first);
  return w;
}

// The [n, dim] rows of head `head` of batch element `batch` of a [batch, heads, n, dim] tensor.
template <class T>
__device__ __forceinline__ T* head_rows(T* x, const Strides& s, int64_t batch, int64_t head) {
  return x + batch * s.batch + head * s.head;
}

// Accumulators to zero.
template <int TILES>
__device__ __forceinline__ void zero(float (&x)[TILES][mma::kCValues]) {
#pragma unroll
  for (int t = 0; t < TILES; ++t)
#pragma unroll
    for (int i = 0; i < mma::kCValues; ++i) x[t][i] = 0.0f;
}

// ---- a warp's products over a chunk: the shapes every pass of the forward and backward is made of --------

// The A operands of a warp's 16 rows of a tile (one register set per 16 head dims).
template <int D>
__device__ __forceinline__ void row_operands(uint32_t (&a)[D / 16][4], const uint16_t* tile, int row0) {
  constexpr int P = mma::tile_pitch(D);
  const int me = threadIdx.x % 32;
#pragma unroll
  for (int s = 0; s < D / 16; ++s) {
    const mma::Cell at = mma::q_operand_address(me, row0, s * mma::kK);
    ldmatrix_x4(a[s], tile + at.row * P + at.col);
  }
}

// acc += A B^T over the 8 accumulator tiles of a chunk: B^T's rows are the tile's 64 rows (non-transposed
// ldmatrix), one k-step per 16 head dims, whose A operand a_at(s, a) gives. S from K, dP from V (and their
// transposes from Q, dO).
template <class T, int D, class AOperand>
__device__ __forceinline__ void chunk_product_with(float (&acc)[flash::kScoreTiles][4], AOperand a_at,
                                                   const uint16_t* tile) {
  constexpr int P = mma::tile_pitch(D);
  const int me = threadIdx.x % 32;
#pragma unroll
  for (int s = 0; s < D / 16; ++s) {
    uint32_t a[4];
    a_at(s, a);
#pragma unroll
    for (int pair = 0; pair < flash::kScoreTiles / 2; ++pair) {
      uint32_t b[4];
      const mma::Cell at = mma::k_operand_address(me, pair * 16, s * mma::kK);
      ldmatrix_x4(b, tile + at.row * P + at.col);
      mma_16816<T>(acc[2 * pair], a, b[0], b[1]);
      mma_16816<T>(acc[2 * pair + 1], a, b[2], b[3]);
    }
  }
}

// With the A operands held in registers for the whole walk (row_operands).
template <class T, int D>
__device__ __forceinline__ void chunk_product(float (&acc)[flash::kScoreTiles][4],
                                              const uint32_t (&a)[D / 16][4], const uint16_t* tile) {
  chunk_product_with<T, D>(
      acc,
      [&](int s, uint32_t(&out)[4]) {
#pragma unroll
        for (int j = 0; j < 4; ++j) out[j] = a[s][j];
      },
      tile);
}

// A warp's A operands for its 16 rows of a tile, from `row0`: held in registers for the whole walk (HOLD), or
// read from the tile again at each k-step (ldmatrix, a few cycles), for head dims whose accumulators leave no
// registers to hold them (the backward's key pass at D = 128: dK and dV alone are 128 floats a lane).
template <int D, bool HOLD>
struct RowOperands;

template <int D>
struct RowOperands<D, true> {
  uint32_t a[D / 16][4];
  __device__ __forceinline__ RowOperands(const uint16_t* tile, int row0) { row_operands<D>(a, tile, row0); }
  template <class T>
  __device__ __forceinline__ void product(float (&acc)[flash::kScoreTiles][4], const uint16_t* tile) const {
    chunk_product<T, D>(acc, a, tile);
  }
};

template <int D>
struct RowOperands<D, false> {
  const uint16_t* a_tile;
  int row0;
  __device__ __forceinline__ RowOperands(const uint16_t* tile, int row) : a_tile(tile), row0(row) {}
  template <class T>
  __device__ __forceinline__ void product(float (&acc)[flash::kScoreTiles][4], const uint16_t* tile) const {
    constexpr int P = mma::tile_pitch(D);
    const int me = threadIdx.x % 32;
    chunk_product_with<T, D>(
        acc,
        [&](int s, uint32_t(&out)[4]) {
          const mma::Cell at = mma::q_operand_address(me, row0, s * mma::kK);
          ldmatrix_x4(out, a_tile + at.row * P + at.col);
        },
        tile);
  }
};

// acc += X Y where X (16 x 64) is in score accumulators and Y (64 x D) in a tile (.trans ldmatrix): P V's shape.
template <class T, int D>
__device__ __forceinline__ void accumulate_from_scores(float (&acc)[D / 8][4],
                                                       const float (&x)[flash::kScoreTiles][4],
                                                       const uint16_t* tile) {
  constexpr int P = mma::tile_pitch(D);
  const int me = threadIdx.x % 32;
#pragma unroll
  for (int ks = 0; ks < flash::kChunkKeys / mma::kK; ++ks) {
    uint32_t a[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int t = 2 * ks + mma::p_source_tile(2 * j);
      a[j] = pack<T>(x[t][mma::p_source_value(2 * j)], x[t][mma::p_source_value(2 * j + 1)]);
    }
#pragma unroll
    for (int pair = 0; pair < D / 16; ++pair) {
      uint32_t b[4];
      const mma::Cell at = mma::v_operand_address(me, ks * mma::kK, pair * 16);
      ldmatrix_x4_trans(b, tile + at.row * P + at.col);
      mma_16816<T>(acc[2 * pair], a, b[0], b[1]);
      mma_16816<T>(acc[2 * pair + 1], a, b[2], b[3]);
    }
  }
}

}  // namespace stx::kernels::detail
