// A model of one warp's tensor-core instructions on the host, from the fragment maps of
// kernels/src/cuda/mma_fragments.h, and the tensor-core forward (forward_tc_cuda.cu) walked through it:
// the same parts, blocks, chunks, warps and lanes, the same per-lane functions (cuda/flash_tile.h), and the
// same 16-bit roundings (inputs, and P before P V). Test-only; what it cannot show is the hardware's own
// summation order inside an mma (fp32 either way) and the speed.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda/flash_tile.h"
#include "cuda/mma_fragments.h"
#include "stx/kernels/attention.h"
#include "stx/kernels/layout.h"

namespace stx::test::warp {

namespace mma = stx::kernels::mma;
namespace flash = stx::kernels::flash;
constexpr int kLanes = mma::kWarpLanes;

// x rounded to the 16-bit type (round to nearest even), back as a float: what a value stored as T holds.
inline float round_to(stx::kernels::DType dtype, float x) {
  uint16_t h = 0;
  if (dtype == stx::kernels::DType::f16) {
    stx::kernels::convert_to_half(&x, &h, 1);
    float back = 0.0f;
    stx::kernels::convert_from_half(&h, &back, 1);
    return back;
  }
  uint32_t bits = 0;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return x;  // NaN stays NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  float out = 0.0f;
  std::memcpy(&out, &bits, 4);
  return out;
}

// A tile of 16-bit values in shared memory, held as floats (already rounded): rows x pitch.
struct SharedTile {
  int rows = 0, pitch = 0;
  std::vector<float> values;
  SharedTile(int r, int p) : rows(r), pitch(p), values(static_cast<size_t>(r) * p, 0.0f) {}
  float at(int row, int col) const { return values[static_cast<size_t>(row) * pitch + col]; }
  float& at(int row, int col) { return values[static_cast<size_t>(row) * pitch + col]; }
};

// ldmatrix .x4 for the whole warp: address[L] is lane L's (row, column) in the tile; result[L][j][v] is
// value v of register j of lane L.
using LdmatrixRegisters = std::array<std::array<std::array<float, 2>, 4>, kLanes>;
inline LdmatrixRegisters ldmatrix_x4(const SharedTile& tile, const std::array<mma::Cell, kLanes>& address,
                                     bool transposed) {
  LdmatrixRegisters out{};
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int j = 0; j < 4; ++j) {
      for (int v = 0; v < 2; ++v) {
        const mma::Cell e = mma::ldmatrix_cell(lane, v, transposed);  // (row, col) of matrix j as stored
        const mma::Cell row_start = address[static_cast<size_t>(8 * j + e.row)];
        out[lane][j][v] = tile.at(row_start.row, row_start.col + e.col);
      }
    }
  }
  return out;
}

// Per-lane operands of one mma: A (8 values), B (4), C (4).
using AFragment = std::array<std::array<float, mma::kAValues>, kLanes>;
using BFragment = std::array<std::array<float, mma::kBValues>, kLanes>;
using CFragment = std::array<std::array<float, mma::kCValues>, kLanes>;

// mma.m16n8k16 for the warp: C += A B, in fp32, each matrix gathered from the lanes by its fragment map.
inline void mma_m16n8k16(const AFragment& a, const BFragment& b, CFragment& c) {
  float A[16][16] = {}, B[16][8] = {};
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int i = 0; i < mma::kAValues; ++i)
      A[mma::a_cell(lane, i).row][mma::a_cell(lane, i).col] = a[lane][i];
    for (int i = 0; i < mma::kBValues; ++i)
      B[mma::b_cell(lane, i).row][mma::b_cell(lane, i).col] = b[lane][i];
  }
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int i = 0; i < mma::kCValues; ++i) {
      const mma::Cell cell = mma::c_cell(lane, i);
      float sum = c[lane][i];
      for (int k = 0; k < 16; ++k) sum += A[cell.row][k] * B[k][cell.col];
      c[lane][i] = sum;
    }
  }
}

// The lanes' addresses for one ldmatrix of an operand (mma_fragments.h's *_operand_address).
template <class AddressOf>
std::array<mma::Cell, kLanes> addresses(AddressOf address_of, int row0, int col0) {
  std::array<mma::Cell, kLanes> out{};
  for (int lane = 0; lane < kLanes; ++lane) out[static_cast<size_t>(lane)] = address_of(lane, row0, col0);
  return out;
}

// The max (or the sum) over each quad, as the two butterfly shuffles leave it in all four lanes.
template <class Op>
void quad_reduce(std::array<float[2], kLanes>& values, Op op) {
  for (int quad = 0; quad < kLanes; quad += 4) {
    for (int half = 0; half < 2; ++half) {
      float r = values[quad][half];
      for (int l = 1; l < 4; ++l) r = op(r, values[quad + l][half]);
      for (int l = 0; l < 4; ++l) values[quad + l][half] = r;
    }
  }
}

// The inputs of one forward, [batch, heads, n, head_dim] contiguous floats already rounded to `dtype`.
struct ForwardProblem {
  int64_t batch = 1, heads = 1, n = 1, head_dim = 64;
  int padded_dim = 64;  // the kernel's D: 32, 48, 64 or 128, at least head_dim
  float scale = 0.0f;
  stx::kernels::DType dtype = stx::kernels::DType::bf16;
  const stx::kernels::Layout* layout = nullptr;
  std::vector<float> q, k, v;
};

// out [batch, heads, n, head_dim] and lse [batch, heads, n], computed as the tensor-core forward does.
void tensor_core_forward(const ForwardProblem& problem, std::vector<float>& out, std::vector<float>& lse);

// The backward's inputs besides the forward's: dO, and the forward's lse and Delta = rowsum(dO * O) (the
// scalar delta kernel's, which the tensor-core passes read), [batch, heads, n(, head_dim)].
struct BackwardProblem {
  ForwardProblem forward;
  std::vector<float> dout, lse, delta;
};

// dq, dk, dv [batch, heads, n, head_dim] as the tensor-core key and query passes compute them, parts summed.
void tensor_core_backward(const BackwardProblem& problem, std::vector<float>& dq, std::vector<float>& dk,
                          std::vector<float>& dv);

// Shared by the forward and backward walks: rows [first, first + rows) of a view lane of one head into a
// 16-bit tile, zero elsewhere (the kernels' load_tile).
void load_tile(SharedTile& tile, const float* head, int64_t head_dim, const stx::kernels::LayoutPart& part,
               int64_t lane, int64_t first, int rows);
// A chunk of the walk over a block list (flash::list_chunk: a slice of one block, or whole blocks gathered)
// into a tile, zero elsewhere (the kernels' load_chunk16).
void load_chunk(SharedTile& tile, const float* head, int64_t head_dim, const stx::kernels::LayoutPart& part,
                int64_t lane, const flash::ListChunk& chunk, int block);
// The A operands of a warp's 16 rows from `row0` of a tile, one per 16 head dims (ldmatrix with
// q_operand_address: queries for Q and dO, keys for K and V).
std::vector<AFragment> row_operands(const SharedTile& tile, int row0, int padded_dim);
// acc[t] += A B over accumulator tiles 0 .. 2 pairs - 1 for the k-step whose 16 values start at `k_offset` of
// the tile: not transposed, B^T's rows are the tile's rows 16 j .. (k_operand_address at (16 j, k_offset): S
// from K, dP from V); transposed, B's rows are the tile's rows k_offset .. and pair j its columns 16 j ..
// (v_operand_address, .trans: P V, dS K, P^T dO, dS^T Q).
void multiply_pairs(const AFragment& a, const SharedTile& tile, bool transposed, int k_offset, int pairs,
                    CFragment* acc);
// The A operand of k-step `step` from score accumulators (P or dS), rounded to the 16-bit type.
AFragment accumulators_as_a(const CFragment* scores, int step, stx::kernels::DType dtype);

}  // namespace stx::test::warp
