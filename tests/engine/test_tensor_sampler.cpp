// pick_bytes (the batched sampler a device-resident decode step runs) against pick_byte (the host sampler
// every generation uses today): given the same logits, settings and uniform, the same byte, for every setting
// and for logits with ties, on CPU tensors (the same operations run on a CUDA device).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "stx/engine/error.h"
#include "stx/engine/sampler.h"
#include "stx/engine/tensor_sampler.h"
#include "stx/models/device_expert.h"
#include "stx/models/expert_decoder.h"
#include "stx/models/sparse_transformer.h"
#include "stx/models/torch_decoder.h"
#include "tiny_model.h"

namespace {

using stx::engine::SamplingSettings;

// Rows of logits of several kinds: spread, peaked, and with ties (values from a handful of levels).
std::vector<float> random_logits(int rows, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> level(0, 3);
  std::vector<float> logits(static_cast<size_t>(rows) * 256);
  for (int r = 0; r < rows; ++r) {
    for (int b = 0; b < 256; ++b) {
      float& x = logits[static_cast<size_t>(r) * 256 + b];
      switch (r % 3) {
        case 0: x = 2.0f * normal(rng); break;
        case 1: x = (b == r % 256 ? 8.0f : 0.0f) + 0.5f * normal(rng); break;
        default: x = static_cast<float>(level(rng)); break;  // many equal logits
      }
    }
  }
  return logits;
}

TEST(PickBytes, EveryRowPicksWhatPickBytePicksForEverySetting) {
  std::mt19937 rng(11);
  constexpr int kRows = 96;
  const std::vector<float> logits = random_logits(kRows, rng);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> u(kRows);
  for (double& x : u) x = uniform(rng);
  u[0] = 0.0;
  u[1] = 0.999999999;
  const at::Tensor logits_tensor = at::from_blob(const_cast<float*>(logits.data()), {kRows, 256}, at::kFloat);
  const at::Tensor u_tensor = at::from_blob(u.data(), {kRows}, at::kDouble);
  int checked = 0;
  for (double temperature : {0.0, 0.7, 1.0, 1.6}) {
    for (int top_k : {0, 1, 5, 40}) {
      for (double top_p : {1.0, 0.9, 0.4}) {
        for (double min_p : {0.0, 0.05}) {
          SamplingSettings s;
          s.temperature = temperature;
          s.top_k = top_k;
          s.top_p = top_p;
          s.min_p = min_p;
          const at::Tensor picked = stx::engine::pick_bytes(logits_tensor, s, u_tensor);
          ASSERT_EQ(picked.scalar_type(), at::kLong);
          ASSERT_EQ(picked.size(0), kRows);
          for (int r = 0; r < kRows; ++r) {
            const int want = stx::engine::pick_byte(logits.data() + static_cast<size_t>(r) * 256, s, u[r]);
            ASSERT_EQ(picked[r].item<int64_t>(), want)
                << "row " << r << " u " << u[r] << " temperature " << temperature << " top_k " << top_k
                << " top_p " << top_p << " min_p " << min_p;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 4 * 3 * 2 * kRows);
}

TEST(PickBytes, AnEvenSweepOfUniformsDrawsTheTemperedDistribution) {
  // One row repeated: the frequencies over u = (i + 0.5) / n follow softmax(logits / T) of the kept bytes.
  std::vector<float> row(256, -10.0f);
  row[7] = 2.0f;
  row[9] = 1.0f;
  constexpr int n = 4000;
  const at::Tensor logits = at::from_blob(row.data(), {1, 256}, at::kFloat).expand({n, 256}).contiguous();
  const at::Tensor u = (at::arange(n, at::kDouble) + 0.5) / n;
  SamplingSettings s;
  s.top_k = 2;
  const at::Tensor picked = stx::engine::pick_bytes(logits, s, u);
  const double share7 = (picked == 7).sum().item<int64_t>() / static_cast<double>(n);
  EXPECT_NEAR(share7, std::exp(2.0) / (std::exp(2.0) + std::exp(1.0)), 1e-3);
  EXPECT_EQ((picked == 7).logical_or(picked == 9).all().item<bool>(), true);
}

// A block drawn on the device (here the CPU, through the same TorchDecoder) is what stepping on the host and
// pick_byte draw with the same uniforms, across two blocks.
TEST(DecodeStepsOnDevice, DrawTheBytesOfTheHostLoop) {
  stx::models::ModelConfig config = stx::test::tiny_model_config(stx::models::DataKind::text);
  at::manual_seed(2);
  stx::models::SparseTransformer model(config);
  model->eval();
  constexpr int64_t kBatch = 3, kSteps = 20;
  stx::models::TorchDecoder host(model, kBatch, 0, stx::kernels::DType::f32, at::Device(at::kCPU));
  stx::models::TorchDecoder device(model, kBatch, 0, stx::kernels::DType::f32, at::Device(at::kCPU));
  SamplingSettings s;
  s.temperature = 0.9;
  s.top_p = 0.95;
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const at::Tensor u = at::empty({2 * kSteps, kBatch}, at::kDouble);
  for (int64_t i = 0; i < u.numel(); ++i) u.data_ptr<double>()[i] = uniform(rng);

  std::vector<int32_t> inputs(kBatch, 256);
  std::vector<float> logits(kBatch * 256);
  std::vector<int64_t> want;
  for (int64_t k = 0; k < 2 * kSteps; ++k) {
    host.step(inputs.data(), logits.data());
    for (int64_t b = 0; b < kBatch; ++b) {
      inputs[b] = stx::engine::pick_byte(logits.data() + b * 256, s, u[k][b].item<double>());
      want.push_back(inputs[b]);
    }
  }
  const at::Tensor first = stx::engine::decode_steps_on_device(device, at::full({kBatch}, 256, at::kLong), s,
                                                               u.narrow(0, 0, kSteps));
  const at::Tensor second =
      stx::engine::decode_steps_on_device(device, first[kSteps - 1], s, u.narrow(0, kSteps, kSteps));
  const at::Tensor got = at::cat({first, second}).contiguous();
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  EXPECT_EQ(std::vector<int64_t>(got.data_ptr<int64_t>(), got.data_ptr<int64_t>() + got.numel()), want);
  EXPECT_EQ(device.position(), 2 * kSteps);
  EXPECT_THROW(
      stx::engine::decode_steps_on_device(device, first[0], s, at::zeros({2, kBatch + 1}, at::kDouble)),
      stx::engine::Error);
}

// The drawer the sampler uses: blocks of 8 with a short last one give the bytes of the host loop; on the
// CPU it makes no graph and says why, and its full blocks run eagerly.
TEST(DeviceBlockDrawer, DrawsTheBytesOfTheHostLoopAndSaysWhyItHasNoGraph) {
  stx::models::ModelConfig config = stx::test::tiny_model_config(stx::models::DataKind::text);
  at::manual_seed(3);
  stx::models::SparseTransformer model(config);
  model->eval();
  constexpr int64_t kBatch = 2, kBlock = 8, kSteps = 3 * kBlock + 5;
  stx::models::TorchDecoder host(model, kBatch, 0, stx::kernels::DType::f32, at::Device(at::kCPU));
  stx::models::TorchDecoder device(model, kBatch, 0, stx::kernels::DType::f32, at::Device(at::kCPU));
  SamplingSettings s;
  s.temperature = 0.8;
  s.top_k = 40;
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const at::Tensor u = at::empty({kSteps, kBatch}, at::kDouble);
  for (int64_t i = 0; i < u.numel(); ++i) u.data_ptr<double>()[i] = uniform(rng);
  std::vector<int32_t> inputs(kBatch, 256);
  std::vector<float> logits(kBatch * 256);
  std::vector<int64_t> want;
  for (int64_t k = 0; k < kSteps; ++k) {
    host.step(inputs.data(), logits.data());
    for (int64_t b = 0; b < kBatch; ++b) {
      inputs[b] = stx::engine::pick_byte(logits.data() + b * 256, s, u[k][b].item<double>());
      want.push_back(inputs[b]);
    }
  }
  stx::engine::DeviceBlockDrawer drawer(device, s, kBlock);
  EXPECT_NE(drawer.graph_status().find("not tried yet"), std::string::npos) << drawer.graph_status();
  std::vector<int64_t> got;
  at::Tensor first = at::full({kBatch}, 256, at::kLong);
  for (int64_t done = 0; done < kSteps;) {
    const int64_t steps = std::min(kBlock, kSteps - done);
    const at::Tensor drawn = drawer.draw(first, u.narrow(0, done, steps)).contiguous();
    got.insert(got.end(), drawn.data_ptr<int64_t>(), drawn.data_ptr<int64_t>() + drawn.numel());
    first = drawn[steps - 1].clone();
    done += steps;
    EXPECT_EQ(device.position(), done);
  }
  EXPECT_EQ(got, want);
  EXPECT_FALSE(drawer.graphed());
  EXPECT_NE(drawer.graph_status().find("CUDA device"), std::string::npos) << drawer.graph_status();
  EXPECT_EQ(drawer.launches_per_step(), -1.0);
  EXPECT_THROW(drawer.draw(first, u.narrow(0, 0, 0)), stx::engine::Error);
  EXPECT_THROW(drawer.draw(first, at::zeros({kBlock + 1, kBatch}, at::kDouble)), stx::engine::Error);
}

// With the linear-prediction expert on the device: after a prompt read on the host, blocks aligned as the
// sampler aligns them (ending on multiples of the block and at the expert's fits) draw the bytes of
// ExpertDecoder's host loop with the same uniforms. The device's fits agree with the host's to rounding, so
// a draw could differ only where a uniform falls within about 1e-9 of a boundary of the CDF.
TEST(DeviceBlockDrawer, DrawsTheBytesOfTheExpertsHostLoop) {
  stx::models::ModelConfig config = stx::test::tiny_model_config(stx::models::DataKind::audio);
  config.expert.order = 8;
  config.expert.refit_interval = 16;
  config.expert.window = 48;
  config.expert.scale_window = 8;
  at::manual_seed(4);
  stx::models::SparseTransformer model(config);
  model->eval();
  {
    at::NoGradGuard no_grad;  // the network a real part of the product, not the expert alone
    model->network_weight.fill_(0.7);
    model->expert_weight.fill_(0.8);
    for (at::Tensor p : {model->expert_byte->weight, model->expert_scale->weight})
      p.copy_(at::randn(p.sizes()) * 0.3);
  }
  constexpr int64_t kBatch = 2, kBlock = 8, kPrompt = 21, kLength = 120;
  const at::Device cpu(at::kCPU);
  auto make = [&] {
    return std::make_unique<stx::models::ExpertDecoder>(
        model,
        std::make_unique<stx::models::TorchDecoder>(model, kBatch, kLength, stx::kernels::DType::f32, cpu));
  };
  const auto host = make(), handed = make();
  std::vector<int32_t> prompt = {256};
  for (int64_t i = 1; i < kPrompt; ++i) prompt.push_back(static_cast<int32_t>(128 + 40 * std::sin(0.4 * i)));
  host->step_common_prefix(prompt.data(), kPrompt);
  handed->step_common_prefix(prompt.data(), kPrompt);
  SamplingSettings s;
  s.temperature = 1.0;
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const at::Tensor u = at::empty({kLength - kPrompt, kBatch}, at::kDouble);
  for (int64_t i = 0; i < u.numel(); ++i) u.data_ptr<double>()[i] = uniform(rng);
  // The host loop: the last prompt byte first.
  std::vector<int32_t> inputs(kBatch, prompt.back());
  std::vector<float> logits(kBatch * 256);
  std::vector<int64_t> want;
  for (int64_t k = 0; k < kLength - kPrompt; ++k) {
    host->step(inputs.data(), logits.data());
    for (int64_t b = 0; b < kBatch; ++b) {
      inputs[b] = stx::engine::pick_byte(logits.data() + b * 256, s, u[k][b].item<double>());
      want.push_back(inputs[b]);
    }
  }
  auto& network = dynamic_cast<stx::models::TorchDecoder&>(handed->network());
  stx::models::DeviceLinearExpert expert(model, kBatch, kLength, cpu);
  expert.load(*handed);
  stx::engine::DeviceBlockDrawer drawer(network, s, kBlock, &expert);
  std::vector<int64_t> got;
  at::Tensor first = at::full({kBatch}, prompt.back(), at::kLong);
  for (int64_t position = kPrompt; position < kLength;) {
    const int64_t steps =
        std::min({kBlock - position % kBlock, kLength - position, expert.steps_before_refit(position)});
    ASSERT_EQ(drawer.next_block_steps(kLength), steps) << "position " << position;
    const at::Tensor drawn = drawer.draw(first, u.narrow(0, position - kPrompt, steps)).contiguous();
    got.insert(got.end(), drawn.data_ptr<int64_t>(), drawn.data_ptr<int64_t>() + drawn.numel());
    first = drawn[steps - 1].clone();
    position += steps;
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(expert.count(), kLength);  // the last drawn byte read too
  // A block that would run through a fit is refused.
  stx::models::TorchDecoder fresh(model, kBatch, kLength, stx::kernels::DType::f32, cpu);
  stx::models::DeviceLinearExpert unaligned(model, kBatch, kLength, cpu);
  stx::engine::DeviceBlockDrawer long_blocks(fresh, s, 40, &unaligned);
  EXPECT_THROW(long_blocks.draw(at::full({kBatch}, 256, at::kLong), u.narrow(0, 0, 40)), std::logic_error);
}

TEST(PickBytes, ShapesThatDoNotFitAreRefused) {
  SamplingSettings s;
  EXPECT_THROW(stx::engine::pick_bytes(at::zeros({2, 255}), s, at::zeros({2})), stx::engine::Error);
  EXPECT_THROW(stx::engine::pick_bytes(at::zeros({2, 256}), s, at::zeros({3})), stx::engine::Error);
}

}  // namespace
