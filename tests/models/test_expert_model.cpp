// The audio model's linear-prediction expert inside the model: a new model is the expert alone, the
// forward's expert inputs are the predictor's, and both decoders (through ExpertDecoder) give the forward's
// logits, with a shared prompt, steps of their own and a rewind; the config's round trip and checks.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "decoder_test_support.h"
#include "stx/models/cpu_decoder.h"
#include "stx/models/expert_decoder.h"
#include "stx/models/linear_expert.h"
#include "stx/models/linear_predictor.h"
#include "stx/models/model_config.h"
#include "stx/models/sparse_transformer.h"
#include "stx/models/torch_decoder.h"

namespace stx::models {
namespace {

// The small audio decoder model with an expert small enough to refit many times within its 70 positions.
ModelConfig expert_config() {
  ModelConfig c = stx::test::audio_decoder_config();
  c.expert.order = 5;
  c.expert.refit_interval = 8;
  c.expert.window = 24;
  c.expert.scale_window = 4;
  return c;
}

// Audio-like bytes: a slow wave with noise, so that the expert's fits mean something.
at::Tensor wave_bytes(int64_t batch, int64_t length, uint64_t seed) {
  at::manual_seed(static_cast<int64_t>(seed));
  const at::Tensor t = at::arange(length, at::kDouble).unsqueeze(0) + at::rand({batch, 1}, at::kDouble) * 50;
  const at::Tensor x = 60 * at::sin(t * 0.3) + at::randn({batch, length}, at::kDouble) * 6 + 128;
  return x.round().clamp(0, 255).to(at::kLong);
}

TEST(ExpertModel, ANewModelIsTheExpertAlone) {
  const ModelConfig config = expert_config();
  at::manual_seed(1);
  SparseTransformer model(config);
  model->eval();
  EXPECT_EQ(model->parameter_count(), config.parameter_count());
  const at::Tensor bytes = wave_bytes(2, config.context, 2);
  at::NoGradGuard no_grad;
  const at::Tensor logits = model->forward(bytes);
  const ExpertInputs expert = linear_expert_inputs(config.expert, bytes, 0);
  EXPECT_TRUE(at::equal(logits, expert.log_probs));
  // So its bits/byte are the expert's: softmax of the log-probabilities gives them back.
  EXPECT_TRUE(at::allclose(at::log_softmax(logits, -1), expert.log_probs, 1e-5, 1e-5));
}

TEST(ExpertModel, TheExpertInputsAreThePredictorsAfterThePastAndTheEarlierBytes) {
  const ModelConfig config = expert_config();
  const at::Tensor bytes = wave_bytes(3, 61, 3);
  const int64_t history = 17;
  const ExpertInputs in = linear_expert_inputs(config.expert, bytes, history);
  ASSERT_EQ(in.log_probs.sizes(), (std::vector<int64_t>{3, 61 - history, 256}));
  std::vector<float> want(256);
  for (int64_t b = 0; b < 3; ++b) {
    LinearPredictor p(config.expert);
    for (int64_t i = 0; i < history; ++i) p.push(static_cast<int>(bytes[b][i].item<int64_t>()));
    for (int64_t i = 0; i < 61 - history; ++i) {
      p.log_probs(want.data());
      const at::Tensor row = in.log_probs[b][i].contiguous();
      ASSERT_TRUE(std::equal(want.begin(), want.end(), row.data_ptr<float>())) << "row " << b << " position " << i;
      ASSERT_EQ(in.predicted[b][i].item<int64_t>(), p.predicted_byte());
      ASSERT_EQ(in.scale_feature[b][i].item<float>(), p.scale_feature());
      p.push(static_cast<int>(bytes[b][history + i].item<int64_t>()));
    }
  }
  EXPECT_THROW(linear_expert_inputs(config.expert, bytes, 61), std::invalid_argument);
}

// Every weight random, lambda and w too, so that a term missed by a decoder cannot hide.
void expect_decoder_equals_forward(const at::Device& device, bool torch_decoder, kernels::DType cache) {
  const ModelConfig config = expert_config();
  SparseTransformer model = stx::test::random_model(config);
  const at::Tensor bytes = wave_bytes(3, config.context, 4);
  at::Tensor want;
  {
    at::NoGradGuard no_grad;
    want = model->forward(bytes);
  }
  std::unique_ptr<TokenDecoder> decoder;
  if (torch_decoder) {
    decoder = with_history_inputs(model, std::make_unique<TorchDecoder>(model, 3, 0, cache, device));
    ASSERT_NE(dynamic_cast<ExpertDecoder*>(decoder.get()), nullptr);
  } else {
    decoder = make_decoder(model, 3, 0, cache, device);
    ASSERT_NE(dynamic_cast<ExpertDecoder*>(decoder.get()), nullptr);
  }
  const at::Tensor got = stx::test::decoded_logits(*decoder, bytes);
  const double tolerance = cache == kernels::DType::f16 ? 3e-3 : 3e-4;
  const double diff = (got - want).abs().max().item<double>();
  const double size = want.abs().max().item<double>();
  std::printf("%s decoder, %s cache: largest logit difference %.2e of %.2e\n", torch_decoder ? "torch" : "incremental",
              kernels::to_string(cache), diff, size);
  EXPECT_LT(diff, tolerance * std::max(1.0, size));
}

TEST(ExpertDecoder, TheIncrementalDecoderGivesTheForwardLogits) {
  expect_decoder_equals_forward(at::Device(at::kCPU), false, kernels::DType::f32);
  expect_decoder_equals_forward(at::Device(at::kCPU), false, kernels::DType::f16);
}

TEST(ExpertDecoder, TheTorchDecoderGivesTheForwardLogits) {
  expect_decoder_equals_forward(at::Device(at::kCPU), true, kernels::DType::f32);
}

TEST(ExpertDecoder, APromptSharedThenStepsAndARewindGiveEachSampleItsOwnLogits) {
  const ModelConfig config = expert_config();
  SparseTransformer model = stx::test::random_model(config);
  const int64_t batch = 3, prompt = 29, length = 60;
  at::Tensor bytes = wave_bytes(batch, length, 5);
  bytes.narrow(1, 0, prompt).copy_(bytes.narrow(0, 0, 1).narrow(1, 0, prompt).expand({batch, prompt}));
  auto each = make_decoder(model, batch, 0, kernels::DType::f32, at::Device(at::kCPU));
  const at::Tensor want = stx::test::decoded_logits(*each, bytes);

  auto shared = make_decoder(model, batch, 0, kernels::DType::f32, at::Device(at::kCPU));
  std::vector<int32_t> inputs(static_cast<size_t>(prompt));
  for (int64_t i = 0; i < prompt; ++i) inputs[i] = i == 0 ? 256 : static_cast<int32_t>(bytes[0][i - 1].item<int64_t>());
  int64_t read = 0;
  for (const int64_t chunk : {1, 9, 12, 7}) {  // across refits of the expert (every 8 bytes)
    shared->step_common_prefix(inputs.data() + read, chunk);
    read += chunk;
  }
  const at::Tensor got = stx::test::decoded_logits(*shared, bytes, prompt);
  EXPECT_TRUE(at::allclose(got.narrow(1, prompt, length - prompt), want.narrow(1, prompt, length - prompt), 1e-5, 1e-5));
  // A refused prefix (the samples have stepped on their own) leaves the expert as it was.
  EXPECT_THROW(shared->step_common_prefix(inputs.data(), 1), std::logic_error);
  // Rewound to the middle of the samples' own steps, each sample's expert replays its own bytes.
  shared->rewind(44);
  const at::Tensor again = stx::test::decoded_logits(*shared, bytes, 44);
  EXPECT_TRUE(at::equal(again.narrow(1, 44, length - 44), got.narrow(1, 44, length - 44)));
  // And rewound into the prompt, a shared prompt may follow again.
  shared->rewind(prompt - 6);
  shared->step_common_prefix(inputs.data() + prompt - 6, 6);
  const at::Tensor third = stx::test::decoded_logits(*shared, bytes, prompt);
  EXPECT_TRUE(at::equal(third.narrow(1, prompt, length - prompt), got.narrow(1, prompt, length - prompt)));
}

// Rows a wrapping decoder asked to add serve the next call only, even one that is refused: a later step must not
// read them (the wrapper's buffer may be gone by then).
TEST(ExpertDecoder, RowsAddedBeforeARefusedCallAreNotAddedToALaterOne) {
  const ModelConfig config = expert_config();
  SparseTransformer model = stx::test::random_model(config);
  const at::Tensor bytes = wave_bytes(1, 20, 7);
  auto clean = make_decoder(model, 1, 0, kernels::DType::f32, at::Device(at::kCPU));
  const at::Tensor want = stx::test::decoded_logits(*clean, bytes);

  auto decoder = make_decoder(model, 1, 0, kernels::DType::f32, at::Device(at::kCPU));
  std::vector<float> rows(static_cast<size_t>(config.d_model), 1000.0f), logits(256);
  const int32_t bad = 999;
  decoder->add_to_next_embedding(rows.data());
  EXPECT_THROW(decoder->step(&bad, logits.data()), std::invalid_argument);
  decoder->add_to_next_embedding(rows.data());
  EXPECT_THROW(decoder->step_common_prefix(&bad, 1), std::invalid_argument);
  rows.assign(rows.size(), std::nanf(""));  // what a stale pointer would now read
  EXPECT_TRUE(at::equal(stx::test::decoded_logits(*decoder, bytes), want));
}

TEST(ExpertConfig, RoundTripsThroughJsonAndRefusesWhatCannotWork) {
  ModelConfig c = expert_config();
  c.expert.ridge = 3e-4;
  const ModelConfig back = model_config_from_json(to_json(c));
  EXPECT_TRUE(back.expert == c.expert);
  EXPECT_EQ(to_json(c)["expert"]["kind"], "linear_prediction");
  // Without an expert nothing is written, and an old config reads as none.
  ModelConfig plain = stx::test::audio_decoder_config();
  EXPECT_FALSE(to_json(plain).contains("expert"));
  EXPECT_FALSE(model_config_from_json(to_json(plain)).expert.enabled());
  auto refused = [](ModelConfig bad, const char* why) {
    EXPECT_THROW(bad.validate(), ConfigError) << why;
  };
  ModelConfig text = stx::test::small_decoder_config(kernels::Pattern::strided);
  text.expert.order = 4;
  refused(text, "a text model");
  ModelConfig big = c;
  big.expert.order = 1025;
  refused(big, "order past 1024");
  ModelConfig narrow = c;
  narrow.expert.window = narrow.expert.order;
  refused(narrow, "a window no longer than the order");
  ModelConfig wide_scale = c;
  wide_scale.expert.scale_window = wide_scale.expert.refit_interval + 1;
  refused(wide_scale, "a scale window past the refit interval");
  nlohmann::json json = to_json(c);
  json["expert"]["kind"] = "neural";
  EXPECT_THROW(model_config_from_json(json), ConfigError);
  json["expert"] = 5;
  EXPECT_THROW(model_config_from_json(json), ConfigError);
}

}  // namespace
}  // namespace stx::models
