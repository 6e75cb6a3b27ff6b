// The decode step's small kernels on CUDA against their CPU loops, which the other suites hold to the host's
// originals (the sampler's pick_byte, LinearPredictor, a naive product): draw_bytes for every sampling rule,
// with and without the expert's product; the linear expert's predict and push on an awkward state; and
// fused_linear with every option, rows across its chunk of 8.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend.h"
#include "stx/kernels/fused_linear.h"
#include "stx/kernels/linear_expert.h"
#include "stx/kernels/sampling.h"

namespace {

using namespace stx::kernels;

// A device copy of a host vector, freed at the end of the scope.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& values) : count_(values.size()) {
    EXPECT_EQ(cudaMalloc(&data_, std::max<size_t>(1, count_) * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(data_, values.data(), count_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* data() const { return data_; }
  std::vector<T> read() const {
    std::vector<T> out(count_);
    EXPECT_EQ(cudaMemcpy(out.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  T* data_ = nullptr;
  size_t count_ = 0;
};

template <class T>
std::vector<T> zeros(int64_t count) {
  return std::vector<T>(static_cast<size_t>(count), T{});
}

#define STX_SKIP_WITHOUT_CUDA_DEVICE()                               \
  do {                                                               \
    const std::string why = stx::test::cuda_backend().unavailable(); \
    if (!why.empty()) GTEST_SKIP() << why;                           \
  } while (false)

TEST(CudaDraw, DrawsTheCpusBytesForEveryRule) {
  STX_SKIP_WITHOUT_CUDA_DEVICE();
  constexpr int64_t kRows = 240;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::uniform_int_distribution<int> level(0, 3);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<float> logits(kRows * 256), expert(kRows * 256);
  for (int64_t r = 0; r < kRows; ++r)
    for (int i = 0; i < 256; ++i) {
      // every third row has ties: logits from a few levels
      logits[r * 256 + i] = r % 3 == 2 ? static_cast<float>(level(rng)) : normal(rng);
      expert[r * 256 + i] = -std::fabs(normal(rng)) * 3.0f;
    }
  std::vector<double> u(kRows);
  for (double& x : u) x = uniform(rng);
  const std::vector<float> weights = {0.7f, 1.1f};
  const DeviceArray<float> d_logits(logits), d_expert(expert), d_weights(weights);
  const DeviceArray<double> d_u(u);
  const DeviceArray<int64_t> d_bytes(std::vector<int64_t>(kRows, -1));
  int rules = 0;
  for (const double temperature : {0.0, 0.7, 1.3})
    for (const int64_t top_k : {int64_t{0}, int64_t{1}, int64_t{40}})
      for (const double top_p : {1.0, 0.9})
        for (const double min_p : {0.0, 0.05})
          for (const bool mixed : {false, true}) {
            SCOPED_TRACE("T " + std::to_string(temperature) + " k " + std::to_string(top_k) + " p " +
                         std::to_string(top_p) + " min_p " + std::to_string(min_p) + (mixed ? " mixed" : ""));
            DrawParams p;
            p.rows = kRows;
            p.temperature = temperature;
            p.top_k = top_k;
            p.top_p = top_p;
            p.min_p = min_p;
            std::vector<int64_t> want(kRows, -1);
            p.logits = logits.data();
            p.uniforms = u.data();
            p.bytes = want.data();
            if (mixed) {
              p.mix_log_probs = expert.data();
              p.network_weight = &weights[0];
              p.expert_weight = &weights[1];
            }
            draw_bytes(p);
            p.logits = d_logits.data();
            p.uniforms = d_u.data();
            p.bytes = d_bytes.data();
            if (mixed) {
              p.mix_log_probs = d_expert.data();
              p.network_weight = d_weights.data();
              p.expert_weight = d_weights.data() + 1;
            }
            p.device = Device::cuda;
            draw_bytes(p);
            ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
            EXPECT_EQ(d_bytes.read(), want);
            ++rules;
          }
  EXPECT_EQ(rules, 72);
}

// Tables like the mu-law ones: sorted amplitudes in (-1, 1), edges half-way between (+-inf at the ends),
// and the least scale of a prediction a fraction of its bin.
struct Tables {
  std::vector<double> amplitudes, edges, half_widths;
  Tables() : amplitudes(256), edges(257), half_widths(256) {
    for (int b = 0; b < 256; ++b) amplitudes[b] = std::sinh(3.0 * (b - 127.5) / 127.5) / std::sinh(3.0);
    edges[0] = -std::numeric_limits<double>::infinity();
    edges[256] = std::numeric_limits<double>::infinity();
    for (int k = 1; k < 256; ++k) edges[k] = 0.5 * (amplitudes[k - 1] + amplitudes[k]);
    for (int b = 0; b < 256; ++b) {
      const int bin = std::clamp(b, 1, 254);
      half_widths[b] = 0.5 * (edges[bin + 1] - edges[bin]);
    }
  }
};

TEST(CudaLinearExpert, PredictAndPushMatchTheCpu) {
  STX_SKIP_WITHOUT_CUDA_DEVICE();
  // Samples at counts 0 (nothing read), 3 (fewer than the order), 37 (past the 20 errors the window holds)
  // and 900; an order and a d that are not multiples of the block of 256 threads.
  const std::vector<int64_t> counts = {0, 3, 37, 900};
  const int64_t batch = 4, order = 300, window = 20, capacity = 1000, d = 70;
  std::mt19937 rng(8);
  std::uniform_real_distribution<double> amplitude(-0.6, 0.6), small(-0.01, 0.01), error(0.0, 0.05);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<double> history(batch * (order + capacity), 0.0), coefficients(batch * order),
      errors(batch * window, 0.0);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < counts[b]; ++t) history[b * (order + capacity) + order + t] = amplitude(rng);
    for (int64_t k = 0; k < order; ++k) coefficients[b * order + k] = (k == 0 ? 0.9 : 0.0) + small(rng);
    for (int64_t k = 0; k < std::min(counts[b], window); ++k) errors[b * window + k] = error(rng);
  }
  std::vector<float> byte_embedding(256 * d), scale_map(d);
  for (float& v : byte_embedding) v = normal(rng);
  for (float& v : scale_map) v = normal(rng);
  const Tables tables;
  const std::vector<int64_t> bytes = {17, 128, 250, 3};

  auto params = [&](double* h, double* c, double* e, int64_t* n, double* mean, double* scale,
                    int64_t* predicted, float* feature, float* log_probs, float* rows, const float* emb,
                    const float* map, const double* amp, const double* edges, const double* widths,
                    const int64_t* drawn) {
    ExpertStepParams p;
    p.batch = batch;
    p.order = order;
    p.scale_window = window;
    p.capacity = capacity;
    p.d = d;
    p.history = h;
    p.coefficients = c;
    p.errors = e;
    p.counts = n;
    p.mean = mean;
    p.scale = scale;
    p.predicted = predicted;
    p.feature = feature;
    p.log_probs = log_probs;
    p.embedding_rows = rows;
    p.byte_embedding = emb;
    p.scale_map = map;
    p.amplitudes = amp;
    p.edges = edges;
    p.half_widths = widths;
    p.bytes = drawn;
    p.min_scale = 5e-5;
    p.initial_scale = 0.01;
    p.probability_floor = 1e-7;
    p.feature_shift = 6.0;
    p.feature_divisor = 3.0;
    return p;
  };
  // The CPU.
  std::vector<double> h = history, e = errors, mean(batch), scale(batch);
  std::vector<int64_t> n = counts, predicted(batch);
  std::vector<float> feature(batch), log_probs(batch * 256), rows(batch * d);
  ExpertStepParams cpu =
      params(h.data(), coefficients.data(), e.data(), n.data(), mean.data(), scale.data(), predicted.data(),
             feature.data(), log_probs.data(), rows.data(), byte_embedding.data(), scale_map.data(),
             tables.amplitudes.data(), tables.edges.data(), tables.half_widths.data(), bytes.data());
  linear_expert_predict(cpu);
  linear_expert_push(cpu);
  // CUDA.
  const DeviceArray<double> g_h(history), g_c(coefficients), g_e(errors), g_mean(zeros<double>(batch)),
      g_scale(zeros<double>(batch)), g_amp(tables.amplitudes), g_edges(tables.edges),
      g_widths(tables.half_widths);
  const DeviceArray<int64_t> g_n(counts), g_predicted(zeros<int64_t>(batch)), g_bytes(bytes);
  const DeviceArray<float> g_feature(zeros<float>(batch)), g_log_probs(zeros<float>(batch * 256)),
      g_rows(zeros<float>(batch * d)), g_emb(byte_embedding), g_map(scale_map);
  ExpertStepParams gpu =
      params(g_h.data(), g_c.data(), g_e.data(), g_n.data(), g_mean.data(), g_scale.data(),
             g_predicted.data(), g_feature.data(), g_log_probs.data(), g_rows.data(), g_emb.data(),
             g_map.data(), g_amp.data(), g_edges.data(), g_widths.data(), g_bytes.data());
  gpu.device = Device::cuda;
  linear_expert_predict(gpu);
  // The outputs of predict, before push changes the state.
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<double> got_mean = g_mean.read(), got_scale = g_scale.read();
  const std::vector<int64_t> got_predicted = g_predicted.read();
  const std::vector<float> got_feature = g_feature.read(), got_log_probs = g_log_probs.read(),
                           got_rows = g_rows.read();
  linear_expert_push(gpu);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (int64_t b = 0; b < batch; ++b) {
    SCOPED_TRACE("sample " + std::to_string(b));
    // The taps are summed in another order on the GPU: rounding.
    EXPECT_NEAR(got_mean[b], mean[b], 1e-12);
    EXPECT_NEAR(got_scale[b], scale[b], 1e-15);
    EXPECT_EQ(got_predicted[b], predicted[b]);
    EXPECT_NEAR(got_feature[b], feature[b], 1e-6);
    for (int k = 0; k < 256; ++k)
      ASSERT_NEAR(got_log_probs[b * 256 + k], log_probs[b * 256 + k], 1e-5) << "byte " << k;
    for (int64_t i = 0; i < d; ++i)
      ASSERT_NEAR(got_rows[b * d + i], rows[b * d + i], 1e-6) << "row element " << i;
  }
  EXPECT_EQ(g_n.read(), n);
  const std::vector<double> got_h = g_h.read(), got_e = g_e.read();
  for (size_t i = 0; i < h.size(); ++i) ASSERT_NEAR(got_h[i], h[i], 1e-15) << "history " << i;
  for (size_t i = 0; i < e.size(); ++i) ASSERT_NEAR(got_e[i], e[i], 1e-12) << "error " << i;
}

TEST(CudaFusedLinear, EqualsTheCpuLoop) {
  STX_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(6);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random = [&](size_t count, float spread, float offset) {
    std::vector<float> v(count);
    for (float& x : v) x = offset + spread * normal(rng);
    return v;
  };
  for (const int64_t rows : {1, 8, 13})
    for (const int64_t in : {192, 768, 1000})
      for (const int64_t out : {7, 576})
        for (int options = 0; options < 8; ++options) {
          SCOPED_TRACE("rows " + std::to_string(rows) + " in " + std::to_string(in) + " out " +
                       std::to_string(out) + " options " + std::to_string(options));
          const std::vector<float> x = random(static_cast<size_t>(rows * in), 2.0f, 0.5f);
          const std::vector<float> gamma = random(static_cast<size_t>(in), 0.3f, 1.0f),
                                   beta = random(static_cast<size_t>(in), 0.3f, 0.0f);
          const std::vector<float> w = random(static_cast<size_t>(out * in), 0.05f, 0.0f);
          const std::vector<float> bias = random(static_cast<size_t>(out), 0.5f, 0.0f);
          const std::vector<float> residual = random(static_cast<size_t>(rows * out), 1.0f, 0.0f);
          std::vector<float> want(static_cast<size_t>(rows * out));
          FusedLinearParams p;
          p.rows = rows;
          p.in = in;
          p.out = out;
          p.activation = (options & 4) != 0 ? Activation::gelu : Activation::none;
          p.x = x.data();
          p.gamma = (options & 1) != 0 ? gamma.data() : nullptr;
          p.beta = (options & 1) != 0 ? beta.data() : nullptr;
          p.weight = w.data();
          p.bias = bias.data();
          p.residual = (options & 2) != 0 ? residual.data() : nullptr;
          p.y = want.data();
          fused_linear(p);
          const DeviceArray<float> g_x(x), g_gamma(gamma), g_beta(beta), g_w(w), g_bias(bias),
              g_residual(residual), g_y(zeros<float>(rows * out));
          p.x = g_x.data();
          p.gamma = (options & 1) != 0 ? g_gamma.data() : nullptr;
          p.beta = (options & 1) != 0 ? g_beta.data() : nullptr;
          p.weight = g_w.data();
          p.bias = g_bias.data();
          p.residual = (options & 2) != 0 ? g_residual.data() : nullptr;
          p.y = g_y.data();
          p.device = Device::cuda;
          fused_linear(p);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          const std::vector<float> got = g_y.read();
          for (size_t k = 0; k < got.size(); ++k) {
            ASSERT_NEAR(got[k], want[k], 3e-5f * (1.0f + std::fabs(want[k]))) << "element " << k;
          }
        }
}

}  // namespace
