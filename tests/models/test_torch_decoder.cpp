// TorchDecoder, the decoder of the GPU path, against the full forward pass on the same device: on the CPU
// here and in CI (TorchDecoder.*), and on CUDA where there is a device (CudaDecoder.*, which skip otherwise).
// Also that it agrees with IncrementalDecoder, the CPU decoder, on logits, prompts and the attention probe.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <vector>

#include "decoder_test_support.h"
#include "stx/kernels/attention.h"
#include "stx/kernels/pattern.h"
#include "stx/models/cpu_decoder.h"
#include "stx/models/model_config.h"
#include "stx/models/sparse_transformer.h"
#include "stx/models/torch_decoder.h"

namespace {

using stx::kernels::DType;
using stx::kernels::Pattern;
using stx::models::IncrementalDecoder;
using stx::models::ModelConfig;
using stx::models::SparseTransformer;
using stx::models::TokenDecoder;
using stx::models::TorchDecoder;
using stx::test::decoded_logits;
using stx::test::random_model;

#define STX_SKIP_WITHOUT_CUDA()                                                  \
  if (!torch::cuda::is_available() || !stx::kernels::cuda_device_available()) {  \
    GTEST_SKIP() << "no CUDA device: the CUDA decoder was compiled but not run"; \
  }

const at::Device kCpu(at::kCPU);
const at::Device kCuda(at::kCUDA, 0);

// [B, T, 256] logits of the forward pass on `device`, on the host.
at::Tensor forward_logits(SparseTransformer& model, const at::Tensor& bytes, const at::Device& device) {
  at::NoGradGuard no_grad;
  model->to(device);
  at::Tensor logits = model->forward(bytes.to(device)).to(kCpu);
  model->to(kCpu);
  return logits;
}

// float32 caches: the forward's attention to float rounding, the products one row at a time instead of
// over the sequence (measured about 1e-6 on the CPU). float16 rounds keys, values and, on CUDA, queries
// (2^-11 relative each): IncrementalDecoder's tests measured 2.6e-4 to 4.1e-4 for the first two.
double tolerance_for(DType cache) { return cache == DType::f16 ? 3e-3 : 2e-4; }

void expect_decode_equals_forward(const ModelConfig& config, DType cache, const at::Device& device) {
  SparseTransformer model = random_model(config);
  at::manual_seed(3);
  const at::Tensor bytes = at::randint(0, 256, {3, config.context}, at::kLong);
  const at::Tensor want = forward_logits(model, bytes, device);
  const auto wrapped =
      stx::models::with_history_inputs(model, std::make_unique<TorchDecoder>(model, 3, 0, cache, device));
  stx::models::TokenDecoder& decoder = *wrapped;
  const at::Tensor got = decoded_logits(decoder, bytes);
  const double worst = (got - want).abs().max().item<double>();
  EXPECT_LT(worst, tolerance_for(cache)) << "decode differs from the forward pass on " << device;
  const double same_argmax = got.argmax(2).eq(want.argmax(2)).to(at::kDouble).mean().item<double>();
  EXPECT_GT(same_argmax, 0.99);
  std::printf("%s, %s cache: largest logit difference %.2e\n", device.str().c_str(),
              stx::kernels::to_string(cache), worst);
  std::vector<int32_t> inputs(3, 0);
  std::vector<float> logits(3 * 256);
  EXPECT_THROW(decoder.step(inputs.data(), logits.data()), std::out_of_range);  // past the context
}

void expect_every_pattern_equals_forward(const at::Device& device) {
  for (const Pattern pattern : {Pattern::dense, Pattern::strided, Pattern::fixed}) {
    for (const DType cache : {DType::f32, DType::f16}) {
      SCOPED_TRACE(std::string(stx::kernels::to_string(pattern)) + " " + stx::kernels::to_string(cache));
      expect_decode_equals_forward(stx::test::small_decoder_config(pattern), cache, device);
    }
  }
  expect_decode_equals_forward(stx::test::image_decoder_config(), DType::f32, device);
  expect_decode_equals_forward(stx::test::audio_decoder_config(), DType::f32, device);
}

// A shared prompt read once (in uneven chunks), then each sample's own steps: the logits of every sample
// equal the forward pass over prompt + its own bytes, amplitude inputs reaching back into the prompt too.
void expect_prefix_then_steps_equal_forward(const at::Device& device) {
  const ModelConfig config = stx::test::audio_decoder_config();  // strided, with amplitude inputs
  SparseTransformer model = random_model(config);
  at::manual_seed(5);
  const int64_t prompt = 23;
  at::Tensor bytes = at::randint(0, 256, {3, config.context}, at::kLong);
  bytes.narrow(1, 0, prompt).copy_(bytes.narrow(1, 0, prompt).select(0, 0).unsqueeze(0).expand({3, prompt}));
  const at::Tensor want = forward_logits(model, bytes, device);
  const auto wrapped = stx::models::with_history_inputs(
      model, std::make_unique<TorchDecoder>(model, 3, 0, DType::f32, device));
  stx::models::TokenDecoder& decoder = *wrapped;
  std::vector<int32_t> inputs;
  for (int64_t i = 0; i < prompt; ++i)
    inputs.push_back(i == 0 ? 256 : static_cast<int32_t>(bytes[0][i - 1].item<int64_t>()));
  decoder.step_common_prefix(inputs.data(), 10);
  decoder.step_common_prefix(inputs.data() + 10, prompt - 10);
  EXPECT_EQ(decoder.position(), prompt);
  const at::Tensor got = decoded_logits(decoder, bytes, prompt);
  const double worst =
      (got.narrow(1, prompt, config.context - prompt) - want.narrow(1, prompt, config.context - prompt))
          .abs()
          .max()
          .item<double>();
  EXPECT_LT(worst, tolerance_for(DType::f32));
  // A prefix after a sample's own step would break "every sample is the same there".
  decoder.rewind(prompt + 1);
  EXPECT_THROW(decoder.step_common_prefix(inputs.data(), 1), std::logic_error);
}

void expect_rewind_replays(const at::Device& device) {
  const ModelConfig config = stx::test::small_decoder_config(Pattern::fixed);
  SparseTransformer model = random_model(config);
  at::manual_seed(9);
  const at::Tensor bytes = at::randint(0, 256, {2, config.context}, at::kLong);
  TorchDecoder decoder(model, 2, 0, DType::f32, device);
  const at::Tensor first = decoded_logits(decoder, bytes);
  decoder.rewind(31);
  const at::Tensor again = decoded_logits(decoder, bytes, 31);
  EXPECT_TRUE(at::equal(again.narrow(1, 31, config.context - 31), first.narrow(1, 31, config.context - 31)));
  EXPECT_THROW(decoder.rewind(config.context + 1), std::out_of_range);
}

// The probe gives the attended set and softmax weights that agree with the CPU decoder's.
void expect_probe_agrees_with_cpu_decoder(const at::Device& device) {
  const ModelConfig config = stx::test::small_decoder_config(Pattern::strided);
  SparseTransformer model = random_model(config);
  TorchDecoder decoder(model, 2, 0, DType::f32, device);
  IncrementalDecoder reference(model, 2, 0, DType::f32);
  decoder.set_probe(1, 2);
  reference.set_probe(1, 2);
  EXPECT_THROW(decoder.set_probe(3, 0), std::out_of_range);
  std::vector<int32_t> inputs = {256, 256};
  std::vector<float> logits(2 * 256);
  for (int64_t i = 0; i < 40; ++i) {
    decoder.step(inputs.data(), logits.data());
    reference.step(inputs.data(), logits.data());
    inputs = {static_cast<int32_t>((i * 37) % 256), static_cast<int32_t>((i * 11 + 5) % 256)};
  }
  for (int64_t sample : {0, 1}) {
    std::vector<int64_t> positions, want_positions;
    std::vector<float> weights, want_weights;
    decoder.probe(sample, positions, weights);
    reference.probe(sample, want_positions, want_weights);
    EXPECT_EQ(positions, want_positions);
    ASSERT_EQ(weights.size(), want_weights.size());
    double total = 0;
    for (size_t j = 0; j < weights.size(); ++j) {
      EXPECT_NEAR(weights[j], want_weights[j], 1e-5) << "sample " << sample << " key " << positions[j];
      total += weights[j];
    }
    EXPECT_NEAR(total, 1.0, 1e-4);
  }
}

// The device-resident step gives the logits of the host step for the same tokens (fused or through the
// modules), and refuses what it cannot do without the host.
void expect_device_steps_equal_host_steps(const at::Device& device) {
  const ModelConfig config = stx::test::small_decoder_config(Pattern::fixed);
  SparseTransformer model = random_model(config);
  at::manual_seed(6);
  const at::Tensor bytes = at::randint(0, 256, {2, config.context}, at::kLong);
  TorchDecoder host(model, 2, 0, DType::f32, device);
  TorchDecoder resident(model, 2, 0, DType::f32, device);
  std::vector<int32_t> inputs(2);
  std::vector<float> logits(2 * 256);
  for (int64_t i = 0; i < config.context; ++i) {
    for (int64_t b = 0; b < 2; ++b)
      inputs[b] = i == 0 ? 256 : static_cast<int32_t>(bytes[b][i - 1].item<int64_t>());
    host.step(inputs.data(), logits.data());
    const at::Tensor tokens =
        at::tensor(std::vector<int64_t>(inputs.begin(), inputs.end()), at::kLong).to(device);
    const at::Tensor got = resident.step_on_device(tokens);
    ASSERT_EQ(got.device(), device);
    // step_on_device runs the fused products: the same sums to float rounding.
    const at::Tensor want = at::from_blob(logits.data(), {2, 256}, at::kFloat);
    ASSERT_TRUE(at::allclose(got.to(kCpu), want, 1e-5, 1e-5))
        << "position " << i << ": " << (got.to(kCpu) - want).abs().max().item<float>();
  }
  EXPECT_THROW(resident.step_on_device(at::zeros({2}, at::kLong).to(device)), std::out_of_range);
  resident.rewind(0);
  EXPECT_THROW(resident.step_on_device(at::zeros({3}, at::kLong).to(device)), std::invalid_argument);
  std::vector<float> rows(2 * config.d_model, 0.0f);
  resident.add_to_next_embedding(rows.data());
  EXPECT_THROW(resident.step_on_device(at::zeros({2}, at::kLong).to(device)), std::logic_error);
}

TEST(TorchDecoder, DeviceResidentStepsEqualHostStepsOnTheCpu) {
  expect_device_steps_equal_host_steps(kCpu);
  ::setenv("STX_FUSED_DECODE", "0", 1);  // the modules' path, which gpu-check's comparisons can choose
  expect_device_steps_equal_host_steps(kCpu);
  ::unsetenv("STX_FUSED_DECODE");
}

// The device-resident step's position lives on the device: host steps, a prompt, a rewind and device
// steps mixed on one decoder give the host decoder's logits (the device's position follows each host
// move), rows added on the device are the host's add_to_next_embedding, the probe reads the same weights,
// and replayed() moves the host's count as a graph replay moves the device's.
void expect_device_position_follows_the_host(const at::Device& device, DType cache) {
  const ModelConfig config = stx::test::small_decoder_config(Pattern::strided);
  SparseTransformer model = random_model(config);
  at::manual_seed(8);
  const int64_t d = config.d_model;
  const at::Tensor bytes = at::randint(0, 256, {2, config.context}, at::kLong);
  const at::Tensor added = at::randn({config.context, 2, d});
  TorchDecoder host(model, 2, 0, cache, device), mixed(model, 2, 0, cache, device);
  host.set_probe(1, 0);
  mixed.set_probe(1, 0);
  std::vector<int32_t> inputs(2);
  std::vector<float> want(2 * 256), got(2 * 256);
  const auto inputs_at = [&](int64_t i) {
    for (int64_t b = 0; b < 2; ++b)
      inputs[b] = i == 0 ? 256 : static_cast<int32_t>(bytes[b][i - 1].item<int64_t>());
  };
  // A shared prompt of 3 positions, then positions 3..context-1 alternating runs of host and device steps.
  std::vector<int32_t> prompt = {256, 7, 9};
  host.step_common_prefix(prompt.data(), 3);
  mixed.step_common_prefix(prompt.data(), 3);
  for (int64_t i = 3; i < config.context; ++i) {
    inputs_at(i);
    const at::Tensor rows = added[i].contiguous();
    host.add_to_next_embedding(rows.data_ptr<float>());
    host.step(inputs.data(), want.data());
    if ((i / 5) % 2 == 0) {  // five host steps, then five device steps
      mixed.add_to_next_embedding(rows.data_ptr<float>());
      mixed.step(inputs.data(), got.data());
    } else {
      const at::Tensor tokens = at::tensor(std::vector<int64_t>(inputs.begin(), inputs.end()), at::kLong);
      const at::Tensor logits =
          mixed.step_on_device(tokens.to(device), rows.to(device)).to(kCpu).contiguous();
      std::copy_n(logits.data_ptr<float>(), 2 * 256, got.begin());
      ASSERT_EQ(mixed.device_position().to(kCpu).item<int64_t>(), i + 1);
    }
    ASSERT_EQ(mixed.position(), i + 1);
    // The device steps run the fused products: float rounding over three layers of weights far from their
    // initialisation (about 1e-5 relative); a term missed or a position wrong moves logits by about 1.
    for (int64_t k = 0; k < 2 * 256; ++k) {
      ASSERT_NEAR(got[k], want[k], 5e-5 * (1.0 + std::fabs(want[k]))) << "position " << i << " logit " << k;
    }
    std::vector<int64_t> positions, want_positions;
    std::vector<float> weights, want_weights;
    mixed.probe(1, positions, weights);
    host.probe(1, want_positions, want_weights);
    ASSERT_EQ(positions, want_positions) << "position " << i;
    for (size_t j = 0; j < weights.size(); ++j) ASSERT_NEAR(weights[j], want_weights[j], 1e-5);
  }
  // A rewind moves the device's position back too; replayed() moves only the host's count, and keeps it
  // within the capacity.
  mixed.rewind(4);
  mixed.prepare_device_steps();
  EXPECT_EQ(mixed.device_position().to(kCpu).item<int64_t>(), 4);
  mixed.replayed(3);
  EXPECT_EQ(mixed.position(), 7);
  EXPECT_THROW(mixed.replayed(config.context), std::out_of_range);
  EXPECT_THROW(mixed.step_on_device(at::zeros({2}, at::kLong).to(device), at::zeros({2, d + 1}).to(device)),
               std::invalid_argument);
}

TEST(TorchDecoder, DevicePositionFollowsTheHostOnTheCpu) {
  expect_device_position_follows_the_host(kCpu, DType::f32);
  expect_device_position_follows_the_host(kCpu, DType::f16);
}

TEST(TorchDecoder, EqualsForwardOnTheCpu) { expect_every_pattern_equals_forward(kCpu); }
TEST(TorchDecoder, APromptThenStepsEqualForwardOnTheCpu) { expect_prefix_then_steps_equal_forward(kCpu); }
TEST(TorchDecoder, RewindReplaysOnTheCpu) { expect_rewind_replays(kCpu); }
TEST(TorchDecoder, ProbeAgreesWithTheCpuDecoder) { expect_probe_agrees_with_cpu_decoder(kCpu); }

TEST(TorchDecoder, RefusesBadInput) {
  SparseTransformer model = random_model(stx::test::small_decoder_config(Pattern::dense));
  EXPECT_THROW(TorchDecoder(model, 0, 0, DType::f32, kCpu), std::invalid_argument);
  EXPECT_THROW(TorchDecoder(model, 1, 71, DType::f32, kCpu), std::invalid_argument);
  EXPECT_THROW(TorchDecoder(model, 1, 0, DType::bf16, kCpu), std::invalid_argument);
  TorchDecoder decoder(model, 1, 4, DType::f32, kCpu);
  std::vector<float> logits(256);
  const int32_t bad = 257;
  EXPECT_THROW(decoder.step(&bad, logits.data()), std::invalid_argument);
  const int32_t start = 256;
  EXPECT_THROW(decoder.step_common_prefix(&start, 5), std::out_of_range);  // past the capacity of 4
}

TEST(TorchDecoder, MakeDecoderPicksTheCpuDecoderOnTheCpu) {
  SparseTransformer model = random_model(stx::test::small_decoder_config(Pattern::dense));
  const std::unique_ptr<TokenDecoder> decoder = stx::models::make_decoder(model, 2, 0, DType::f16, kCpu);
  EXPECT_NE(dynamic_cast<IncrementalDecoder*>(decoder.get()), nullptr);
  EXPECT_EQ(decoder->batch(), 2);
}

TEST(CudaDecoder, EqualsTheCudaForward) {
  STX_SKIP_WITHOUT_CUDA();
  expect_every_pattern_equals_forward(kCuda);
}
TEST(CudaDecoder, APromptThenStepsEqualTheCudaForward) {
  STX_SKIP_WITHOUT_CUDA();
  expect_prefix_then_steps_equal_forward(kCuda);
}
TEST(CudaDecoder, DeviceResidentStepsEqualHostSteps) {
  STX_SKIP_WITHOUT_CUDA();
  expect_device_steps_equal_host_steps(kCuda);
}
TEST(CudaDecoder, DevicePositionFollowsTheHost) {
  STX_SKIP_WITHOUT_CUDA();
  expect_device_position_follows_the_host(kCuda, DType::f32);
  expect_device_position_follows_the_host(kCuda, DType::f16);
}
TEST(CudaDecoder, RewindReplays) {
  STX_SKIP_WITHOUT_CUDA();
  expect_rewind_replays(kCuda);
}
TEST(CudaDecoder, ProbeAgreesWithTheCpuDecoder) {
  STX_SKIP_WITHOUT_CUDA();
  expect_probe_agrees_with_cpu_decoder(kCuda);
}

// CUDA decoding against CPU decoding of the same model and bytes: float32 caches agree to the forward's
// tolerance, the devices' products summing in another order.
TEST(CudaDecoder, EqualsTheCpuDecoder) {
  STX_SKIP_WITHOUT_CUDA();
  const ModelConfig config = stx::test::small_decoder_config(Pattern::strided);
  SparseTransformer model = random_model(config);
  at::manual_seed(4);
  const at::Tensor bytes = at::randint(0, 256, {2, config.context}, at::kLong);
  IncrementalDecoder cpu(model, 2, 0, DType::f32);
  TorchDecoder cuda(model, 2, 0, DType::f32, kCuda);
  const double worst = (decoded_logits(cuda, bytes) - decoded_logits(cpu, bytes)).abs().max().item<double>();
  std::printf("CUDA against CPU decoding: largest logit difference %.2e\n", worst);
  EXPECT_LT(worst, tolerance_for(DType::f32));
  const std::unique_ptr<TokenDecoder> made = stx::models::make_decoder(model, 1, 0, DType::f16, kCuda);
  EXPECT_NE(dynamic_cast<TorchDecoder*>(made.get()), nullptr);
}

}  // namespace
