// The tensor-core kernels' fragment maps and tile logic, checked on the host (no GPU needed): the maps
// against the PTX ISA's tables and each other, the shared-memory pitch against bank conflicts, and the whole
// tensor-core forward, walked through a model of the warp (mma_warp_model.h), against the naive reference on
// awkward sizes, every pattern and mode, head dims 32 to 128, in float16 and bfloat16.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mma_warp_model.h"
#include "reference.h"
#include "stx/kernels/layout.h"
#include "test_util.h"

namespace stx::test {
namespace {

namespace mma = stx::kernels::mma;
using warp::kLanes;

// Every (row, column) of a rows x cols operand is held by exactly one (lane, value).
template <class CellOf>
void expect_each_cell_once(const char* what, int rows, int cols, int values, CellOf cell_of) {
  std::vector<int> seen(static_cast<size_t>(rows * cols), 0);
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int i = 0; i < values; ++i) {
      const mma::Cell c = cell_of(lane, i);
      ASSERT_TRUE(c.row >= 0 && c.row < rows && c.col >= 0 && c.col < cols)
          << what << " lane " << lane << " value " << i << " at (" << c.row << ", " << c.col << ")";
      ++seen[static_cast<size_t>(c.row * cols + c.col)];
    }
  }
  for (int e = 0; e < rows * cols; ++e) EXPECT_EQ(seen[static_cast<size_t>(e)], 1) << what << " cell " << e;
}

TEST(MmaFragments, EachOperandCellIsHeldByExactlyOneLaneValue) {
  expect_each_cell_once("A", 16, 16, mma::kAValues, mma::a_cell);
  expect_each_cell_once("B", 16, 8, mma::kBValues, mma::b_cell);
  expect_each_cell_once("C", 16, 8, mma::kCValues, mma::c_cell);
}

TEST(MmaFragments, TheTablesSpotValuesOfThePtxIsa) {
  // PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type": lane 5 is group 1, thread 1.
  EXPECT_EQ(mma::a_cell(5, 0).row, 1);
  EXPECT_EQ(mma::a_cell(5, 0).col, 2);
  EXPECT_EQ(mma::a_cell(5, 3).row, 9);
  EXPECT_EQ(mma::a_cell(5, 3).col, 3);
  EXPECT_EQ(mma::a_cell(5, 6).row, 9);
  EXPECT_EQ(mma::a_cell(5, 6).col, 10);
  EXPECT_EQ(mma::b_cell(5, 3).row, 11);
  EXPECT_EQ(mma::b_cell(5, 3).col, 1);
  EXPECT_EQ(mma::c_cell(31, 3).row, 15);
  EXPECT_EQ(mma::c_cell(31, 3).col, 7);
}

TEST(MmaFragments, EachRowOfTheAccumulatorsIsHeldByOneQuad) {
  for (int row = 0; row < 16; ++row) {
    std::set<int> lanes;
    for (int lane = 0; lane < kLanes; ++lane)
      for (int i = 0; i < mma::kCValues; ++i)
        if (mma::c_cell(lane, i).row == row) lanes.insert(lane);
    const int quad = (row % 8) * 4;
    EXPECT_EQ(lanes, (std::set<int>{quad, quad + 1, quad + 2, quad + 3})) << "row " << row;
  }
}

TEST(MmaFragments, TwoScoreTilesAreTheAOperandOfPTimesV) {
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int i = 0; i < mma::kAValues; ++i) {
      const mma::Cell a = mma::a_cell(lane, i);
      const mma::Cell c = mma::c_cell(lane, mma::p_source_value(i));
      EXPECT_EQ(a.row, c.row) << "lane " << lane << " value " << i;
      EXPECT_EQ(a.col, c.col + mma::kN * mma::p_source_tile(i)) << "lane " << lane << " value " << i;
    }
  }
}

// A tile of distinct values, so a value says where it came from.
warp::SharedTile numbered_tile(int rows, int pitch) {
  warp::SharedTile tile(rows, pitch);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < pitch; ++c) tile.at(r, c) = static_cast<float>(r * 1000 + c);
  return tile;
}

TEST(MmaFragments, LdmatrixLoadsWhatEachOperandExpects) {
  const warp::SharedTile tile = numbered_tile(48, mma::tile_pitch(64));
  const int row0 = 16, col0 = 32;
  // Q as A: value i of lane L is Q[row0 + a.row][col0 + a.col].
  const auto q = warp::ldmatrix_x4(tile, warp::addresses(mma::q_operand_address, row0, col0), false);
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int i = 0; i < mma::kAValues; ++i) {
      const mma::Cell a = mma::a_cell(lane, i);
      EXPECT_EQ(q[lane][i >> 1][i & 1], tile.at(row0 + a.row, col0 + a.col))
          << "Q lane " << lane << " value " << i;
    }
  }
  // K as B of two score tiles: B[k][n] = K[row0 + 8 half + n][col0 + k].
  const auto k = warp::ldmatrix_x4(tile, warp::addresses(mma::k_operand_address, row0, col0), false);
  // V as B of two output tiles, with .trans: B[k][n] = V[row0 + k][col0 + 8 half + n].
  const auto v = warp::ldmatrix_x4(tile, warp::addresses(mma::v_operand_address, row0, col0), true);
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int half = 0; half < 2; ++half) {
      for (int i = 0; i < mma::kBValues; ++i) {
        const mma::Cell b = mma::b_cell(lane, i);
        const int reg = 2 * half + (i >> 1), value = i & 1;
        EXPECT_EQ(k[lane][reg][value], tile.at(row0 + 8 * half + b.col, col0 + b.row)) << "K lane " << lane;
        EXPECT_EQ(v[lane][reg][value], tile.at(row0 + b.row, col0 + 8 * half + b.col)) << "V lane " << lane;
      }
    }
  }
}

TEST(MmaFragments, TheModelledMmaMultipliesTheMatricesTheFragmentsHold) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  float A[16][16], B[16][8];
  for (auto& row : A)
    for (float& x : row) x = u(rng);
  for (auto& row : B)
    for (float& x : row) x = u(rng);
  warp::AFragment a{};
  warp::BFragment b{};
  warp::CFragment c{};
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int i = 0; i < mma::kAValues; ++i)
      a[lane][i] = A[mma::a_cell(lane, i).row][mma::a_cell(lane, i).col];
    for (int i = 0; i < mma::kBValues; ++i)
      b[lane][i] = B[mma::b_cell(lane, i).row][mma::b_cell(lane, i).col];
    for (int i = 0; i < mma::kCValues; ++i) c[lane][i] = 1.0f;
  }
  warp::mma_m16n8k16(a, b, c);
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int i = 0; i < mma::kCValues; ++i) {
      const mma::Cell cell = mma::c_cell(lane, i);
      double want = 1.0;
      for (int kk = 0; kk < 16; ++kk) want += double{A[cell.row][kk]} * B[kk][cell.col];
      EXPECT_NEAR(c[lane][i], want, 1e-5) << "lane " << lane << " value " << i;
    }
  }
}

// ldmatrix reads one 8 x 8 matrix per phase: its eight 16-byte rows must fall in eight different groups of
// four banks, or the phase is replayed.
TEST(MmaFragments, NoLdmatrixPhaseHasABankConflictAtAnyHeadDim) {
  for (int dim : {32, 48, 64, 128}) {
    const int pitch = mma::tile_pitch(dim);
    for (auto address_of : {mma::q_operand_address, mma::k_operand_address, mma::v_operand_address}) {
      for (int row0 = 0; row0 < 64; row0 += 16) {
        for (int col0 = 0; col0 < dim; col0 += 16) {
          for (int matrix = 0; matrix < 4; ++matrix) {
            std::set<int> groups;
            for (int lane = 8 * matrix; lane < 8 * matrix + 8; ++lane) {
              const mma::Cell at = address_of(lane, row0, col0);
              ASSERT_EQ(mma::bank_of(at.row, at.col, pitch) % 4, 0) << "rows start on a 16-byte boundary";
              groups.insert(mma::bank_of(at.row, at.col, pitch) / 4);
            }
            EXPECT_EQ(groups.size(), 8u) << "head dim " << dim << " rows from " << row0 << " cols from "
                                         << col0 << " matrix " << matrix;
          }
        }
      }
    }
  }
}

// ---- the whole forward through the warp model -------------------------------------------------------

struct ModelCase {
  int64_t n, head_dim, batch, heads;
  stx::kernels::Pattern pattern;
  int64_t l, c;
  stx::kernels::Combination mode;
  int layer, block;
  stx::kernels::DType dtype;

  std::string name() const {
    std::string s = std::string(stx::kernels::to_string(pattern)) + "_" + stx::kernels::to_string(mode) +
                    std::to_string(layer) + "_n" + std::to_string(n) + "_d" + std::to_string(head_dim) +
                    "_l" + std::to_string(l) + "_c" + std::to_string(c) + "_B" + std::to_string(block) + "_" +
                    stx::kernels::to_string(dtype);
    return s;
  }
};

void PrintTo(const ModelCase& k, std::ostream* os) { *os << k.name(); }

int padded_dim(int64_t head_dim) {
  for (int d : {32, 48, 64, 128})
    if (head_dim <= d) return d;
  return -1;
}

std::vector<ModelCase> model_cases() {
  using stx::kernels::Combination;
  using stx::kernels::DType;
  using stx::kernels::Pattern;
  std::vector<ModelCase> cases;
  for (DType dtype : {DType::bf16, DType::f16}) {
    // n = 7: fewer rows than a warp; n = 113 with l and c no multiple of anything; n = 1000, B = 128 (two
    // chunks per key block) and B = 16 (a chunk mostly empty).
    cases.push_back({7, 64, 1, 2, Pattern::strided, 3, 0, Combination::merged, 0, 16, dtype});
    cases.push_back({7, 48, 1, 2, Pattern::fixed, 6, 2, Combination::merged, 0, 16, dtype});
    for (Pattern pattern : {Pattern::strided, Pattern::fixed}) {
      const int64_t c = pattern == Pattern::fixed ? 5 : 0;
      cases.push_back({113, 48, 2, 3, pattern, 37, c, Combination::merged, 0, 16, dtype});
      cases.push_back({113, 64, 1, 2, pattern, 37, c, Combination::interleaved, 0, 32, dtype});
      cases.push_back({113, 64, 1, 2, pattern, 37, c, Combination::interleaved, 1, 32, dtype});
      cases.push_back({113, 48, 1, 4, pattern, 37, c, Combination::multihead, 0, 64, dtype});
      cases.push_back({1000, 64, 1, 2, pattern, 100, pattern == Pattern::fixed ? 12 : 0, Combination::merged,
                       0, 128, dtype});
      cases.push_back({1000, 48, 1, 2, pattern, 31, pattern == Pattern::fixed ? 7 : 0, Combination::merged, 0,
                       64, dtype});
    }
    cases.push_back({113, 32, 1, 2, Pattern::dense, 0, 0, Combination::merged, 0, 64, dtype});
    cases.push_back({300, 128, 1, 1, Pattern::strided, 24, 0, Combination::merged, 0, 64, dtype});
    cases.push_back({113, 20, 1, 2, Pattern::fixed, 16, 4, Combination::interleaved, 1, 16, dtype});
    // Blocks narrower than a chunk whose lists hold runs of full blocks, gathered into chunks (flash_tile.h):
    // four to a chunk, a run cut by the diagonal; the fixed summaries at B = c (the benchmark's l = 128,
    // c = 32), one block of each row of l; the strided band; and a lane that ends inside a block.
    cases.push_back({113, 32, 1, 2, Pattern::dense, 0, 0, Combination::merged, 0, 16, dtype});
    cases.push_back({300, 64, 1, 2, Pattern::fixed, 64, 16, Combination::merged, 0, 16, dtype});
    cases.push_back({1000, 64, 1, 2, Pattern::fixed, 128, 32, Combination::merged, 0, 32, dtype});
    cases.push_back({200, 48, 1, 2, Pattern::strided, 64, 0, Combination::merged, 0, 32, dtype});
    // Head dim 100 (padded to 128, where the backward's key pass is two launches) with gathered blocks.
    cases.push_back({113, 100, 1, 2, Pattern::fixed, 32, 8, Combination::merged, 0, 16, dtype});
  }
  return cases;
}

// A case's patterns, layout and shape, and `inputs` filled with N(0, 1) values rounded to its dtype (seeded
// by the case's name and `seed`, so a case keeps its numbers when cases are added around it).
struct CaseSetup {
  std::vector<stx::kernels::HeadPattern> patterns;
  std::shared_ptr<const stx::kernels::Layout> layout;
  ReferenceShape shape;
  warp::ForwardProblem problem;  // everything but q, k and v, which are among `inputs`
};

CaseSetup set_up(const ModelCase& k, const std::string& seed,
                 std::initializer_list<std::vector<float>*> inputs) {
  CaseSetup c;
  c.patterns = stx::kernels::layer_patterns(k.pattern, k.l, k.c, static_cast<int>(k.heads), k.mode, k.layer);
  c.layout = stx::kernels::build_layout(k.n, k.block, c.patterns);
  c.shape.batch = c.problem.batch = k.batch;
  c.shape.heads = c.problem.heads = k.heads;
  c.shape.seq_len = c.problem.n = k.n;
  c.shape.head_dim = c.problem.head_dim = k.head_dim;
  c.problem.padded_dim = padded_dim(k.head_dim);
  c.problem.dtype = k.dtype;
  c.problem.layout = c.layout.get();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(k.name() + seed)));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::vector<float>* x : inputs) {
    x->resize(static_cast<size_t>(c.shape.elements()));
    for (float& e : *x) e = warp::round_to(k.dtype, normal(rng));
  }
  return c;
}

// A 16-bit result against the reference: bounded on the normalised error as the CUDA suite bounds one.
Tolerance sixteen_bit(stx::kernels::DType dtype) {
  Tolerance t;
  t.max_nmse = dtype == stx::kernels::DType::bf16 ? 1e-4 : 1e-5;
  t.atol = std::numeric_limits<double>::infinity();
  t.rtol = 0.0;
  return t;
}

class TensorCoreModel : public ::testing::TestWithParam<ModelCase> {};

TEST_P(TensorCoreModel, TheForwardMatchesTheReference) {
  const ModelCase& k = GetParam();
  std::vector<float> q, kk, v;
  CaseSetup c = set_up(k, "", {&q, &kk, &v});
  c.problem.q = q;
  c.problem.k = kk;
  c.problem.v = v;
  std::vector<float> out, lse;
  warp::tensor_core_forward(c.problem, out, lse);

  std::vector<double> ref_out, ref_lse;
  reference_forward(c.patterns, c.shape, to_double(q), to_double(kk), to_double(v), ref_out, ref_lse);
  // P is rounded to 16 bits before P V (the one rounding the fp32 kernels do not make); the lse comes from
  // fp32 scores and sums.
  Tolerance lse_tolerance;
  lse_tolerance.atol = 1e-4;
  lse_tolerance.rtol = 1e-5;
  EXPECT_TRUE(matches_reference("out", to_double(out), ref_out, {k.batch, k.heads, k.n, k.head_dim},
                                sixteen_bit(k.dtype)));
  EXPECT_TRUE(matches_reference("lse", to_double(lse), ref_lse, {k.batch, k.heads, k.n}, lse_tolerance));
}

// The backward's passes through the warp model, head dims up to 128 (at 128 the key pass is two launches,
// dV then dK, as in the kernels). Inputs: the reference forward's out (rounded to the dtype, as the
// op hands it back) and lse, a random dO, and Delta = rowsum(dO * O) as the delta kernel computes it.
class TensorCoreBackwardModel : public ::testing::TestWithParam<ModelCase> {};

TEST_P(TensorCoreBackwardModel, ThePassesMatchTheReference) {
  const ModelCase& k = GetParam();
  warp::BackwardProblem problem;
  std::vector<float> q, kk, v;
  CaseSetup c = set_up(k, "backward", {&q, &kk, &v, &problem.dout});
  const ReferenceShape& shape = c.shape;
  const auto& patterns = c.patterns;
  problem.forward = c.problem;
  problem.forward.q = q;
  problem.forward.k = kk;
  problem.forward.v = v;
  const warp::ForwardProblem& forward = problem.forward;
  std::vector<double> out, lse;
  reference_forward(patterns, shape, to_double(forward.q), to_double(forward.k), to_double(forward.v), out,
                    lse);
  for (double& x : out) x = warp::round_to(k.dtype, static_cast<float>(x));
  problem.lse.assign(lse.begin(), lse.end());
  problem.delta.assign(static_cast<size_t>(shape.rows()), 0.0f);
  for (int64_t row = 0; row < shape.rows(); ++row) {
    float sum = 0.0f;
    for (int64_t d = 0; d < k.head_dim; ++d) {
      const size_t e = static_cast<size_t>(row * k.head_dim + d);
      sum += problem.dout[e] * static_cast<float>(out[e]);
    }
    problem.delta[static_cast<size_t>(row)] = sum;
  }
  std::vector<float> dq, dk, dv;
  warp::tensor_core_backward(problem, dq, dk, dv);

  std::vector<double> ref_dq, ref_dk, ref_dv;
  reference_backward(patterns, shape, to_double(forward.q), to_double(forward.k), to_double(forward.v), out,
                     lse, to_double(problem.dout), ref_dq, ref_dk, ref_dv);
  // P and dS are rounded to 16 bits before their products (as in FlashAttention-2).
  const Tolerance tolerance = sixteen_bit(k.dtype);
  const std::vector<int64_t> dims = {k.batch, k.heads, k.n, k.head_dim};
  EXPECT_TRUE(matches_reference("dq", to_double(dq), ref_dq, dims, tolerance));
  EXPECT_TRUE(matches_reference("dk", to_double(dk), ref_dk, dims, tolerance));
  EXPECT_TRUE(matches_reference("dv", to_double(dv), ref_dv, dims, tolerance));
}

INSTANTIATE_TEST_SUITE_P(Cases, TensorCoreModel, ::testing::ValuesIn(model_cases()),
                         [](const ::testing::TestParamInfo<ModelCase>& info) { return info.param.name(); });

INSTANTIATE_TEST_SUITE_P(Cases, TensorCoreBackwardModel, ::testing::ValuesIn(model_cases()),
                         [](const ::testing::TestParamInfo<ModelCase>& info) { return info.param.name(); });

}  // namespace
}  // namespace stx::test
