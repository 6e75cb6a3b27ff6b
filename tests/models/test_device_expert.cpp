// DeviceLinearExpert (models/device_expert.h), the linear-prediction expert as tensor operations on the
// decoder's device, against LinearPredictor on the host: after a prompt read on the host, step after step
// across refits (one of them guarded), the same prediction, scale, byte, feature and log probabilities, and
// with the network's device-resident step the logits of ExpertDecoder. On the CPU here; on CUDA where there
// is a device (CudaDeviceExpert.*, which skip otherwise).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "decoder_test_support.h"
#include "stx/kernels/attention.h"
#include "stx/models/device_expert.h"
#include "stx/models/expert_decoder.h"
#include "stx/models/linear_predictor.h"
#include "stx/models/torch_decoder.h"

namespace stx::models {
namespace {

// The small strided model with an expert that refits every 8 bytes over 24, no amplitude inputs (the
// device path's models).
ModelConfig device_expert_config() {
  ModelConfig c = stx::test::small_decoder_config(kernels::Pattern::strided);
  c.kind = DataKind::audio;
  c.expert.order = 5;
  c.expert.refit_interval = 8;
  c.expert.window = 24;
  c.expert.scale_window = 4;
  return c;
}

// Two samples of a slow wave with noise that share their first `shared` bytes, the second with a burst at
// full scale (which the level guard must catch) from byte 40.
at::Tensor audio_bytes(int64_t length, int64_t shared) {
  at::manual_seed(5);
  const at::Tensor t =
      at::arange(length, at::kDouble).unsqueeze(0) + at::tensor({0.0, 17.0}, at::kDouble).unsqueeze(1);
  at::Tensor x = 50 * at::sin(t * 0.35) + at::randn({2, length}, at::kDouble) * 5 + 128;
  x.narrow(1, 0, shared).select(0, 1).copy_(x.narrow(1, 0, shared).select(0, 0));
  x.select(0, 1).narrow(0, 40, 6).copy_(at::tensor({255.0, 0.0, 255.0, 0.0, 250.0, 5.0}, at::kDouble));
  return x.round().clamp(0, 255).to(at::kLong);
}

void expect_device_expert_follows_the_host(const at::Device& device) {
  const ModelConfig config = device_expert_config();
  SparseTransformer model = stx::test::random_model(config);
  const int64_t length = config.context, prompt = 12;
  const at::Tensor bytes = audio_bytes(length, prompt);
  // The host's decoder, and the one whose network steps on the device, both after the same prompt.
  ExpertDecoder host(model, std::make_unique<TorchDecoder>(model, 2, 0, kernels::DType::f32, device));
  ExpertDecoder handed(model, std::make_unique<TorchDecoder>(model, 2, 0, kernels::DType::f32, device));
  std::vector<int32_t> prompt_inputs = {256};
  for (int64_t i = 0; i + 1 < prompt; ++i)
    prompt_inputs.push_back(static_cast<int32_t>(bytes[0][i].item<int64_t>()));
  host.step_common_prefix(prompt_inputs.data(), prompt);
  handed.step_common_prefix(prompt_inputs.data(), prompt);
  auto& network = dynamic_cast<TorchDecoder&>(handed.network());
  DeviceLinearExpert expert(model, 2, 0, device);
  expert.load(handed);
  EXPECT_EQ(expert.count(), prompt - 1);
  std::vector<LinearPredictor> reference(2, LinearPredictor(config.expert));
  for (LinearPredictor& p : reference)
    for (int64_t i = 0; i + 1 < prompt; ++i) p.push(static_cast<int>(bytes[0][i].item<int64_t>()));

  const at::Tensor on_device = bytes.to(device);
  std::vector<int32_t> inputs(2);
  std::vector<float> host_logits(2 * 256), want(256);
  bool guarded = false;
  for (int64_t i = prompt; i < length; ++i) {
    expert.catch_up(i, on_device.select(1, i - 1));
    ASSERT_EQ(expert.count(), i);
    expert.predict();
    const at::Tensor logits =
        expert.mix(network.step_on_device(on_device.select(1, i - 1), expert.embedding_rows())).to(at::kCPU);
    for (int64_t b = 0; b < 2; ++b) inputs[b] = static_cast<int32_t>(bytes[b][i - 1].item<int64_t>());
    host.step(inputs.data(), host_logits.data());
    const at::Tensor mean = expert.mean().to(at::kCPU), scale = expert.scale().to(at::kCPU);
    const at::Tensor predicted = expert.predicted_byte().to(at::kCPU),
                     feature = expert.scale_feature().to(at::kCPU);
    const at::Tensor log_probs = expert.log_probs().to(at::kCPU);
    for (int64_t b = 0; b < 2; ++b) {
      LinearPredictor& p = reference[static_cast<size_t>(b)];
      p.push(inputs[b]);
      guarded = guarded || p.last_fit_was_guarded();
      SCOPED_TRACE("position " + std::to_string(i) + ", sample " + std::to_string(b));
      ASSERT_NEAR(mean[b].item<double>(), p.mean(), 1e-9);
      ASSERT_NEAR(scale[b].item<double>(), p.scale(), 1e-9 * p.scale());
      ASSERT_EQ(predicted[b].item<int64_t>(), p.predicted_byte());
      ASSERT_NEAR(feature[b].item<float>(), p.scale_feature(), 1e-5);
      p.log_probs(want.data());
      for (int64_t k = 0; k < 256; ++k)
        ASSERT_NEAR(log_probs[b][k].item<float>(), want[k], 2e-5) << "byte " << k;
      for (int64_t k = 0; k < 256; ++k) {
        ASSERT_NEAR(logits[b][k].item<float>(), host_logits[b * 256 + k], 1e-4) << "logit " << k;
      }
    }
    expert.push(on_device.select(1, i));
  }
  EXPECT_TRUE(guarded) << "the burst should have made a guarded fit";
  EXPECT_EQ(expert.count(), length);
}

TEST(DeviceExpert, FollowsTheHostPredictorsOnTheCpu) {
  expect_device_expert_follows_the_host(at::Device(at::kCPU));
}

TEST(CudaDeviceExpert, FollowsTheHostPredictors) {
  if (!torch::cuda::is_available() || !kernels::cuda_device_available()) {
    GTEST_SKIP() << "no CUDA device: the device expert was compiled but not run on one";
  }
  expect_device_expert_follows_the_host(at::Device(at::kCUDA, 0));
}

// Blocks of steps must end at the fits: the first fit comes at count 16 (2 x order 5 = 10, rounded up to the
// interval of 8), then every 8.
TEST(DeviceExpert, KnowsWhereTheFitsFall) {
  const ModelConfig config = device_expert_config();
  SparseTransformer model = stx::test::random_model(config);
  DeviceLinearExpert expert(model, 1, 0, at::Device(at::kCPU));
  EXPECT_EQ(expert.steps_before_refit(0), 16);
  EXPECT_EQ(expert.steps_before_refit(9), 7);
  EXPECT_EQ(expert.steps_before_refit(16), 8);
  EXPECT_EQ(expert.steps_before_refit(21), 3);
  EXPECT_FALSE(expert.refit_due_within(16));  // count 0: the fit at 16 ends the block
  EXPECT_TRUE(expert.refit_due_within(17));
  // A block must start where the expert is: at its count, or one past it (the last input byte unread).
  const at::Tensor first = at::full({1}, 256, at::kLong);
  EXPECT_THROW(expert.catch_up(3, first), std::logic_error);
  expert.catch_up(0, first);
  EXPECT_EQ(expert.count(), 0);
  EXPECT_THROW(DeviceLinearExpert(model, 0, 0, at::Device(at::kCPU)), std::invalid_argument);
  SparseTransformer plain =
      stx::test::random_model(stx::test::small_decoder_config(kernels::Pattern::strided));
  EXPECT_THROW(DeviceLinearExpert(plain, 1, 0, at::Device(at::kCPU)), std::invalid_argument);
}

}  // namespace
}  // namespace stx::models
