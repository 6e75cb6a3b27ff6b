// Incremental decoding on every backend: attention_decode at a position, with a KV cache larger than the
// sequence and filled one position at a time, equals the matching row of the double reference and of the
// full forward on the same backend (out and lse).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attention_cases.h"
#include "backend.h"
#include "reference.h"
#include "stx/kernels/attention.h"
#include "stx/kernels/layout.h"
#include "test_util.h"

namespace stx::test {
namespace {

using namespace stx::kernels;

constexpr int64_t kSpareCapacity = 29;  // cache slots past the sequence end

// What one backend decoded at the positions: out [B, H, P, D], lse [B, H, P], and out at the last position
// again without lse [B, H, D].
struct Decoded {
  std::vector<double> out, lse, last_out_without_lse;
  // The last position again, read by the kernel from memory (DecodeParams::position_in_memory) [B, H, D],
  // and whether a position in memory past the capacity was refused (CPU) or made out NaN (CUDA).
  std::vector<double> last_out_from_memory;
  bool past_capacity_refused = false;
};

// An int64 in a backend's memory, as the bits of two float32 elements.
std::unique_ptr<Buffer> upload_position(const Backend& backend, int64_t position) {
  std::vector<float> bits(2);
  std::memcpy(bits.data(), &position, sizeof position);
  return backend.upload(bits, DType::f32);
}

// Decodes `positions` (ascending) of the case on one backend. Cache slots not yet written hold NaN, so
// reading past the query's position (or past the sequence end) would poison the result.
void decode_positions(const Backend& backend, const AttentionCase& kc, DType dtype, const Tensor& q,
                      const Tensor& k, const Tensor& v, const std::vector<int64_t>& positions,
                      Decoded& decoded) {
  const int64_t B = kc.batch, H = kc.heads, T = kc.seq_len, D = kc.head_dim, capacity = T + kSpareCapacity;
  const int64_t P = static_cast<int64_t>(positions.size());
  const std::vector<HeadPattern> patterns = kc.patterns();
  BackendTensor held_q(backend, q, dtype);
  Tensor empty_cache(B, H, capacity, D, kc.storage, kNaN);
  empty_cache.fill(kNaN);
  BackendTensor k_cache(backend, empty_cache, dtype), v_cache(backend, empty_cache, dtype);
  // out is [B, H, D] with 8 padding floats after each head's row; lse is [B, H]
  const int64_t row = D + kPadding;
  std::vector<float> unwritten_out(static_cast<size_t>(B * H * row), kSentinel);
  for (int64_t bh = 0; bh < B * H; ++bh) std::fill_n(unwritten_out.begin() + bh * row, D, kNaN);
  const std::vector<float> unwritten_lse(static_cast<size_t>(B * H), kNaN);
  const auto out = backend.upload(unwritten_out, dtype);
  const auto lse = backend.upload(unwritten_lse, DType::f32);
  DecodeParams p;
  p.k_cache = k_cache.data();
  p.v_cache = v_cache.data();
  p.out = out->data();
  p.lse = static_cast<float*>(lse->data());
  p.q_stride = {held_q.strides().batch, held_q.strides().head, 0};
  p.k_stride = k_cache.strides();
  p.v_stride = v_cache.strides();
  p.out_stride = {H * row, row, 0};
  p.batch = B;
  p.heads = H;
  p.head_dim = D;
  p.capacity = capacity;
  p.scale = kc.scale;
  p.dtype = p.cache_dtype = dtype;
  p.patterns = patterns.data();
  decoded.out.assign(static_cast<size_t>(B * H * P * D), 0.0);
  decoded.lse.assign(static_cast<size_t>(B * H * P), 0.0);
  int64_t cached = 0;  // positions [0, cached) are in the caches
  for (int64_t e = 0; e < P; ++e) {
    const int64_t i = positions[e];
    for (; cached <= i; ++cached)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
          k_cache.buffer->write(k_cache.host.index(b, h, cached, 0), k.data() + k.index(b, h, cached, 0), D);
          v_cache.buffer->write(v_cache.host.index(b, h, cached, 0), v.data() + v.index(b, h, cached, 0), D);
        }
    out->write(0, unwritten_out.data(), out->elements());
    lse->write(0, unwritten_lse.data(), lse->elements());
    p.q = held_q.buffer->element(q.index(0, 0, i, 0));  // row i of every (b, h), read through q's strides
    p.position = i;
    ASSERT_NO_THROW(backend.decode(p)) << "position " << i;
    const std::vector<float> got_out = out->read(), got_lse = lse->read();
    for (int64_t bh = 0; bh < B * H; ++bh) {
      decoded.lse[bh * P + e] = got_lse[bh];
      for (int64_t x = 0; x < D; ++x) decoded.out[(bh * P + e) * D + x] = got_out[bh * row + x];
      for (int64_t x = D; x < row; ++x) ASSERT_EQ(got_out[bh * row + x], kSentinel) << "out padding written";
    }
  }
  // lse is optional: decode the last position again without it
  p.lse = nullptr;
  out->write(0, unwritten_out.data(), out->elements());
  ASSERT_NO_THROW(backend.decode(p));
  const std::vector<float> got_out = out->read();
  decoded.last_out_without_lse.resize(static_cast<size_t>(B * H * D));
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t x = 0; x < D; ++x) decoded.last_out_without_lse[bh * D + x] = got_out[bh * row + x];

  // The position read from memory: p.position is then ignored.
  const auto at_last = upload_position(backend, p.position);
  p.position_in_memory = static_cast<const int64_t*>(at_last->data());
  p.position = -7;
  out->write(0, unwritten_out.data(), out->elements());
  ASSERT_NO_THROW(backend.decode(p));
  const std::vector<float> from_memory = out->read();
  decoded.last_out_from_memory.resize(static_cast<size_t>(B * H * D));
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t x = 0; x < D; ++x) decoded.last_out_from_memory[bh * D + x] = from_memory[bh * row + x];
  const auto past_end = upload_position(backend, capacity);
  p.position_in_memory = static_cast<const int64_t*>(past_end->data());
  out->write(0, std::vector<float>(static_cast<size_t>(out->elements()), 0.0f).data(), out->elements());
  if (backend.device() == Device::cpu) {
    try {
      backend.decode(p);
    } catch (const Error&) {
      decoded.past_capacity_refused = true;
    }
  } else {
    ASSERT_NO_THROW(backend.decode(p));
    const std::vector<float> past = out->read();
    decoded.past_capacity_refused = true;
    for (int64_t bh = 0; bh < B * H; ++bh)
      for (int64_t x = 0; x < D; ++x) decoded.past_capacity_refused &= std::isnan(past[bh * row + x]);
  }
}

// The backend's full forward at the positions: out [B, H, P, D], lse [B, H, P].
void forward_rows(const Backend& backend, const AttentionCase& kc, DType dtype, const Tensor& q,
                  const Tensor& k, const Tensor& v, const std::vector<int64_t>& positions,
                  std::vector<double>& out_rows, std::vector<double>& lse_rows) {
  const int64_t B = kc.batch, H = kc.heads, T = kc.seq_len, D = kc.head_dim;
  const int64_t P = static_cast<int64_t>(positions.size());
  BackendTensor held_q(backend, q, dtype), held_k(backend, k, dtype), held_v(backend, v, dtype),
      out(backend, Tensor(B, H, T, D, Storage::contiguous, kNaN), dtype);
  const auto lse = backend.upload(std::vector<float>(static_cast<size_t>(B * H * T), kNaN), DType::f32);
  ASSERT_NO_THROW(run_forward(backend, kc, dtype, *cached_layout(T, kc.block, kc.patterns()), held_q, held_k,
                              held_v, out, *lse));
  out.read_back();
  const std::vector<float> lse_values = lse->read();
  out_rows.resize(static_cast<size_t>(B * H * P * D));
  lse_rows.resize(static_cast<size_t>(B * H * P));
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t e = 0; e < P; ++e) {
      lse_rows[bh * P + e] = lse_values[bh * T + positions[e]];
      for (int64_t x = 0; x < D; ++x)
        out_rows[(bh * P + e) * D + x] = out.host.at(bh / H, bh % H, positions[e], x);
    }
}

// Decodes the positions on every backend and checks each decoded row against the reference's row and,
// with compare_with_forward, against the same backend's full forward.
void expect_decode_matches(const CaseInDtype& param, const std::vector<const Backend*>& backends,
                           const std::vector<int64_t>& positions, bool compare_with_forward) {
  // given random q, k, v of the whole sequence in the dtype
  const AttentionCase& kc = param.shape;
  const DType dtype = param.dtype;
  const int64_t B = kc.batch, H = kc.heads, T = kc.seq_len, D = kc.head_dim;
  const int64_t P = static_cast<int64_t>(positions.size());
  const std::vector<HeadPattern> patterns = kc.patterns();
  std::mt19937 rng = case_rng(kc, 3);
  auto random_input = [&] {
    Tensor t(B, H, T, D, kc.storage, kNaN);
    t.fill_normal(rng);
    return as_held_by(*backends.back(), t, dtype);
  };
  const Tensor q = random_input(), k = random_input(), v = random_input();

  // and the reference's rows at the positions, [B, H, P, D] and [B, H, P]
  const std::vector<double> qd = q.to_double(), kd = k.to_double(), vd = v.to_double();
  const double scale = ReferenceShape{B, H, T, D, kc.scale}.resolved_scale();
  std::vector<double> ref_out(static_cast<size_t>(B * H * P * D)), ref_lse(static_cast<size_t>(B * H * P));
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t e = 0; e < P; ++e) {
      const size_t head = static_cast<size_t>(bh * T * D);
      ref_lse[bh * P + e] = reference_forward_row(patterns[bh % H], positions[e], D, scale, &qd[head],
                                                  &kd[head], &vd[head], &ref_out[(bh * P + e) * D]);
    }

  for (const Backend* backend : backends) {
    SCOPED_TRACE(backend->name());
    // when decoding position after position
    Decoded decoded;
    decode_positions(*backend, kc, dtype, q, k, v, positions, decoded);
    if (::testing::Test::HasFatalFailure()) return;

    // then every decoded row equals the reference's, and the full forward's row
    const Tolerances tol = backend->tolerances(dtype);
    EXPECT_TRUE(matches_reference("decode out vs reference", decoded.out, ref_out, {B, H, P, D}, tol.values));
    EXPECT_TRUE(matches_reference("decode lse vs reference", decoded.lse, ref_lse, {B, H, P}, tol.lse));
    if (compare_with_forward) {
      std::vector<double> forward_out, forward_lse;
      forward_rows(*backend, kc, dtype, q, k, v, positions, forward_out, forward_lse);
      if (::testing::Test::HasFatalFailure()) return;
      EXPECT_TRUE(
          matches_reference("decode out vs forward", decoded.out, forward_out, {B, H, P, D}, tol.values));
      EXPECT_TRUE(matches_reference("decode lse vs forward", decoded.lse, forward_lse, {B, H, P}, tol.lse));
    }
    // and lse is optional: without it, out is the same
    std::vector<double> last_with_lse(static_cast<size_t>(B * H * D));
    for (int64_t bh = 0; bh < B * H; ++bh)
      for (int64_t x = 0; x < D; ++x) last_with_lse[bh * D + x] = decoded.out[(bh * P + P - 1) * D + x];
    EXPECT_TRUE(matches_reference("decode out without lse", decoded.last_out_without_lse, last_with_lse,
                                  {B, H, D}, tol.values));
    // and a position the kernel reads from memory gives the same row; one past the capacity is refused
    // on the CPU, NaN on CUDA (where it cannot be checked before the launch)
    EXPECT_TRUE(matches_reference("decode out, position from memory", decoded.last_out_from_memory,
                                  last_with_lse, {B, H, D}, tol.values));
    EXPECT_TRUE(decoded.past_capacity_refused);
  }
}

// The decode cases, at every position of the sequence: decoding gives what the forward gives.
class DecodeEveryPosition : public CaseTest {};

TEST_P(DecodeEveryPosition, MatchesForwardAndReference) {
  std::vector<int64_t> positions(static_cast<size_t>(GetParam().shape.seq_len));
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int64_t>(i);
  expect_decode_matches(GetParam(), backends(), positions, true);
}

INSTANTIATE_TEST_SUITE_P(Cases, DecodeEveryPosition, ::testing::ValuesIn(in_every_dtype(decode_cases())),
                         case_in_dtype_name);

// The forward cases, at the first, second, middle and last position: their sizes reach 4097, where decoding
// every position would cost a full reference forward.
class DecodeFourPositions : public CaseTest {};

TEST_P(DecodeFourPositions, MatchesReference) {
  const int64_t n = GetParam().shape.seq_len;
  std::vector<int64_t> positions = {0, std::min<int64_t>(1, n - 1), n / 2, n - 1};
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  expect_decode_matches(GetParam(), backends(), positions, false);
}

INSTANTIATE_TEST_SUITE_P(Cases, DecodeFourPositions, ::testing::ValuesIn(in_every_dtype(attention_cases())),
                         case_in_dtype_name);

}  // namespace
}  // namespace stx::test
