// Bits per byte: plain windows and sliding windows score every byte exactly once.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <random>

#include "engine_test_support.h"
#include "stx/engine/evaluate.h"
#include "stx/models/sparse_transformer.h"

namespace {

using namespace stx::engine;

std::vector<uint8_t> random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(n);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng() % 40 + 60);
  return bytes;
}

// The reference: each byte's bits from the forward pass of the window that holds it with the most earlier
// bytes before it, as the documented plan says, written out position by position.
double reference_sliding_bits(stx::models::SparseTransformer& model, const std::vector<uint8_t>& s, int64_t context) {
  const size_t n = s.size(), length = std::min<size_t>(context, n), hop = std::max<size_t>(1, length / 2);
  at::NoGradGuard no_grad;
  double bits = 0;
  size_t scored_to = 0;
  for (size_t start = 0; scored_to < n; start += hop) {
    start = std::min(start, n - length);
    at::Tensor window = at::empty({1, static_cast<int64_t>(length)}, at::kLong);
    for (size_t t = 0; t < length; ++t) window[0][static_cast<int64_t>(t)] = s[start + t];
    const at::Tensor log_probs = at::log_softmax(model->forward(window)[0], -1);
    for (size_t t = scored_to - start; t < length; ++t) {
      bits -= log_probs[static_cast<int64_t>(t)][s[start + t]].item<double>() / std::log(2.0);
    }
    scored_to = start + length;
  }
  return bits / static_cast<double>(n);
}

TEST(Evaluate, SlidingScoresEveryByteOnceFromTheLongestPrefix) {
  at::manual_seed(2);
  stx::models::SparseTransformer model(stx::test::tiny_text_config(32));
  model->eval();
  for (const size_t n : {1u, 2u, 31u, 32u, 33u, 47u, 80u, 113u}) {
    const std::vector<uint8_t> stream = random_bytes(n, static_cast<unsigned>(n));
    for (const int64_t batch : {1, 3}) {
      const EvaluationResult r = evaluate_bits_per_byte_sliding(model, stream, 32, batch);
      EXPECT_EQ(r.bytes, static_cast<int64_t>(n)) << n;
      EXPECT_NEAR(r.bits_per_byte, reference_sliding_bits(model, stream, 32), 1e-4) << "n " << n << " batch " << batch;
    }
  }
}

TEST(Evaluate, SlidingEqualsPlainWhenTheStreamFitsOneWindow) {
  at::manual_seed(3);
  stx::models::SparseTransformer model(stx::test::tiny_text_config(32));
  const std::vector<uint8_t> stream = random_bytes(29, 9);
  const EvaluationResult plain = evaluate_bits_per_byte(model, stream, 32, 1);
  const EvaluationResult sliding = evaluate_bits_per_byte_sliding(model, stream, 32);
  EXPECT_EQ(sliding.windows, 1);
  EXPECT_NEAR(sliding.bits_per_byte, plain.bits_per_byte, 1e-6);
  EXPECT_EQ(evaluate_bits_per_byte_sliding(model, {}, 32).bytes, 0);
}

}  // namespace
