// Which lane of a warp holds which element of the tensor-core instructions' operands, as index maps that
// compile for the device (the tensor-core attention kernels) and for the host (the CPU suite's model of a
// warp, tests/kernels/test_mma_model.cpp, which runs the kernels' tile logic through them against the
// naive reference). Read off the PTX ISA's fragment tables for
//   mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32   (A 16x16, B 16x8, C and D 16x8)
//   ldmatrix.sync.aligned.m8n8.x4{,.trans}.shared.b16                 (four 8x8 matrices of 16-bit values)
// No CUDA header here: plain integer arithmetic, so that the host and the device agree by construction.
#pragma once

#if defined(__CUDACC__)
#define STX_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define STX_HOST_DEVICE inline
#endif
#if defined(__CUDA_ARCH__)
#define STX_UNROLL _Pragma("unroll")
#else
#define STX_UNROLL
#endif

namespace stx::kernels::mma {

constexpr int kWarpLanes = 32;
// One m16n8k16: the query rows a warp owns, the keys (or dims) of one accumulator tile, the inner step.
constexpr int kM = 16, kN = 8, kK = 16;
// Values a lane holds: A (two 16-bit values in each of 4 registers), B (2 registers), C/D (4 fp32).
constexpr int kAValues = 8, kBValues = 4, kCValues = 4;

struct Cell {
  int row = 0, col = 0;
};

// The PTX ISA's "groupID" and "threadID_in_group": a quad of four lanes shares each row of A and C.
STX_HOST_DEVICE constexpr int group_of(int lane) { return lane >> 2; }
STX_HOST_DEVICE constexpr int in_group(int lane) { return lane & 3; }

// A (16 x 16, row major: rows M, columns K): value i of `lane`. Rows g and g + 8, columns 2t, 2t + 1 and the
// same 8 further right: a0 a1 (g, 2t..), a2 a3 (g + 8, 2t..), a4 a5 (g, 2t + 8..), a6 a7 (g + 8, 2t + 8..).
STX_HOST_DEVICE constexpr Cell a_cell(int lane, int i) {
  return Cell{group_of(lane) + ((i >> 1) & 1) * 8, in_group(lane) * 2 + (i & 1) + (i >> 2) * 8};
}

// B (16 x 8, column major: rows K, columns N): b0 b1 (2t.., g), b2 b3 (2t + 8.., g).
STX_HOST_DEVICE constexpr Cell b_cell(int lane, int i) {
  return Cell{in_group(lane) * 2 + (i & 1) + (i >> 1) * 8, group_of(lane)};
}

// C and D (16 x 8 fp32): c0 c1 (g, 2t..), c2 c3 (g + 8, 2t..). Each row is held by the four lanes of one
// quad, two columns each: a row's max or sum is two butterfly steps (xor 1, xor 2) across the quad.
STX_HOST_DEVICE constexpr Cell c_cell(int lane, int i) {
  return Cell{group_of(lane) + (i >> 1) * 8, in_group(lane) * 2 + (i & 1)};
}

// The flash-attention identity: the accumulators of two neighbouring 16 x 8 score tiles (keys 16s .. 16s + 7
// and 16s + 8 .. 16s + 15) are, value for value, the A operand of P V's k-step s. Value i of that A comes from
// tile 2s + p_source_tile(i), value p_source_value(i): no shuffle, only a conversion to 16 bits.
STX_HOST_DEVICE constexpr int p_source_tile(int i) { return i >> 2; }
STX_HOST_DEVICE constexpr int p_source_value(int i) { return i & 3; }

// ldmatrix .x4: lane L gives the shared-memory address of row L % 8 of matrix L / 8. Afterwards register j of
// every lane holds two neighbouring 16-bit values of matrix j: value v (0, 1) is element (L / 4, 2 (L % 4) + v)
// of the matrix as stored, or with .trans element (2 (L % 4) + v, L / 4): the matrix transposed.
STX_HOST_DEVICE constexpr int ldmatrix_matrix_of(int lane) { return lane >> 3; }
STX_HOST_DEVICE constexpr int ldmatrix_row_of(int lane) { return lane & 7; }
STX_HOST_DEVICE constexpr Cell ldmatrix_cell(int lane, int value, bool transposed) {
  return transposed ? Cell{in_group(lane) * 2 + value, group_of(lane)}
                    : Cell{group_of(lane), in_group(lane) * 2 + value};
}

// Where each lane points its ldmatrix .x4 for the three operands, as (row, column) of the tile in shared
// memory (row major, a row per position: queries, keys or values by head dim). A tile's 16 x 16 piece at
// (row0, col0) becomes, in registers 0..3:
//   q_operand  A of S = Q K^T (rows: queries, columns: head dims): matrices (rows 0-7 | 8-15) x (cols 0-7 | 8-15)
//              in the order a0a1, a2a3, a4a5, a6a7.
//   k_operand  B of two neighbouring score tiles (rows: keys 0-7 then 8-15; columns: head dims of the k-step):
//              registers 0, 1 are b0b1, b2b3 of keys 0-7's tile; 2, 3 those of keys 8-15's.
//   v_operand  B of two neighbouring output tiles of O = P V, with .trans (rows: keys of the k-step;
//              columns: head dims 0-7 then 8-15): registers 0, 1 are b0b1, b2b3 of dims 0-7; 2, 3 of dims 8-15.
STX_HOST_DEVICE constexpr Cell q_operand_address(int lane, int row0, int col0) {
  return Cell{row0 + ldmatrix_row_of(lane) + (ldmatrix_matrix_of(lane) & 1) * 8,
              col0 + (ldmatrix_matrix_of(lane) >> 1) * 8};
}
STX_HOST_DEVICE constexpr Cell k_operand_address(int lane, int row0, int col0) {
  return Cell{row0 + ldmatrix_row_of(lane) + (ldmatrix_matrix_of(lane) >> 1) * 8,
              col0 + (ldmatrix_matrix_of(lane) & 1) * 8};
}
STX_HOST_DEVICE constexpr Cell v_operand_address(int lane, int row0, int col0) {
  return Cell{row0 + ldmatrix_row_of(lane) + (ldmatrix_matrix_of(lane) & 1) * 8,
              col0 + (ldmatrix_matrix_of(lane) >> 1) * 8};
}

// Shared-memory tiles of 16-bit values keep a row pitch of D + 8 values: 16 bytes more than a row, so that
// the pitch is an odd number of 16-byte chunks (D = 32, 48, 64, 128 give 5, 7, 9, 17) and the eight rows one
// ldmatrix phase reads start in eight different 4-bank groups: no bank conflict, for every head dim, without
// a swizzle that needs a power-of-two row (48 has none). cp.async copies 16-byte chunks: 8 values.
STX_HOST_DEVICE constexpr int tile_pitch(int head_dim) { return head_dim + 8; }
constexpr int kChunkValues = 8;

// The 32-bit bank of the 16-bit value at (row, col) of a tile of that pitch (32 banks of 4 bytes).
STX_HOST_DEVICE constexpr int bank_of(int row, int col, int pitch) {
  return ((row * pitch + col) * 2 / 4) % 32;
}

}  // namespace stx::kernels::mma
