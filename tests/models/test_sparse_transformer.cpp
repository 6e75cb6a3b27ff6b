// The Sparse Transformer model: shapes, parameter count, causality, sparse = dense when the pattern
// covers everything, recomputation, and the config's JSON form.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stx/models/model_config.h"
#include "stx/models/sparse_transformer.h"
#include "tiny_model.h"

namespace {

using stx::models::ModelConfig;
using stx::models::SparseTransformer;

ModelConfig tiny(stx::kernels::Pattern pattern, int64_t context = 40, int64_t stride = 6) {
  ModelConfig c = stx::test::tiny_model_config(stx::models::DataKind::text);
  c.context = context;
  c.pattern = pattern;
  c.stride = stride;
  c.summary = 2;
  return c;
}

at::Tensor random_bytes(int64_t batch, int64_t length, uint64_t seed) {
  at::manual_seed(seed);
  return at::randint(0, 256, {batch, length}, at::kLong);
}

TEST(SparseTransformer, ShapesAndParameterCount) {
  const ModelConfig c = tiny(stx::kernels::Pattern::strided);
  SparseTransformer model(c);
  const at::Tensor logits = model->forward(random_bytes(3, 40, 1));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 40, 256}));
  // Shorter sequences than the context are fine.
  EXPECT_EQ(model->forward(random_bytes(1, 7, 2)).sizes(), (std::vector<int64_t>{1, 7, 256}));

  const int64_t d = c.d_model, f = c.d_ff;
  const int64_t embeddings = 257 * d + (7 + 6) * d;  // tokens + start; position rows ceil(40/6) = 7, columns 6
  const int64_t per_block = 2 * (2 * d) + (d * 3 * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d);
  const int64_t head = 2 * d + d * 256 + 256;
  EXPECT_EQ(model->parameter_count(), embeddings + c.layers * per_block + head);
}

TEST(SparseTransformer, PresetsAreBetweenOneAndTenMillionParameters) {
  for (const std::string& name : stx::models::preset_names()) {
    SparseTransformer model(stx::models::preset(name));
    EXPECT_GE(model->parameter_count(), 1'000'000) << name;
    EXPECT_LE(model->parameter_count(), 10'000'000) << name;
  }
}

// A loader sizes a model from its config before building it: the count must be the built model's.
TEST(SparseTransformer, TheConfigCountsTheParametersTheModelHas) {
  for (const std::string name : {"image-small", "text-small", "audio-small", "audio-long"}) {
    stx::models::ModelConfig c = stx::models::preset(name);
    EXPECT_EQ(c.parameter_count(), stx::models::SparseTransformer(c)->parameter_count()) << name;
    c.d_ff = 3 * c.d_model + 8;
    c.layers = 3;
    EXPECT_EQ(c.parameter_count(), stx::models::SparseTransformer(c)->parameter_count()) << name << ", changed";
  }
}

TEST(SparseTransformer, ImagePositionsAreRowColumnChannel) {
  ModelConfig c = tiny(stx::kernels::Pattern::strided, 4 * 5 * 3, 15);
  c.kind = stx::models::DataKind::image;
  c.image_height = 4;
  c.image_width = 5;
  c.image_channels = 3;
  c.validate();
  EXPECT_EQ(c.position_axes(), (std::vector<int64_t>{4, 5, 3}));
  EXPECT_EQ(c.position_coordinates(0), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(c.position_coordinates(17), (std::vector<int64_t>{1, 0, 2}));  // row 1 starts at byte 15
  EXPECT_EQ(c.position_coordinates(59), (std::vector<int64_t>{3, 4, 2}));
  SparseTransformer model(c);
  EXPECT_EQ(model->forward(random_bytes(1, 60, 3)).sizes(), (std::vector<int64_t>{1, 60, 256}));
}

class Causality : public ::testing::TestWithParam<stx::kernels::Pattern> {};

TEST_P(Causality, ChangingByteJNeverChangesEarlierLogits) {
  at::manual_seed(11);
  SparseTransformer model(tiny(GetParam()));
  model->eval();
  at::NoGradGuard no_grad;
  const at::Tensor bytes = random_bytes(1, 40, 5);
  const at::Tensor base = model->forward(bytes);
  for (int64_t j : {0, 1, 13, 25, 39}) {
    at::Tensor changed = bytes.clone();
    changed[0][j] = (changed[0][j].item<int64_t>() + 101) % 256;
    const at::Tensor logits = model->forward(changed);
    // logits[i] predicts byte i from bytes < i, so positions 0..j must not move, and j+1 must.
    EXPECT_TRUE(at::equal(logits.narrow(1, 0, j + 1), base.narrow(1, 0, j + 1))) << "byte " << j;
    if (j + 1 < 40) {
      EXPECT_FALSE(at::allclose(logits.select(1, j + 1), base.select(1, j + 1))) << "byte " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Patterns, Causality,
                         ::testing::Values(stx::kernels::Pattern::dense, stx::kernels::Pattern::strided,
                                           stx::kernels::Pattern::fixed));

// With l >= n, strided A1 already holds every earlier position, and a fixed block spans the sequence.
TEST(SparseTransformer, SparseEqualsDenseWhenTheStrideCoversTheSequence) {
  for (stx::kernels::Pattern pattern : {stx::kernels::Pattern::strided, stx::kernels::Pattern::fixed}) {
    ModelConfig sparse_config = tiny(pattern, 40, 40);
    sparse_config.summary = 5;
    ModelConfig dense_config = sparse_config;
    dense_config.pattern = stx::kernels::Pattern::dense;
    at::manual_seed(2);
    SparseTransformer sparse(sparse_config);
    at::manual_seed(2);
    SparseTransformer dense(dense_config);
    const at::Tensor bytes = random_bytes(2, 40, 9);
    const at::Tensor a = sparse->forward(bytes), b = dense->forward(bytes);
    EXPECT_TRUE(at::allclose(a, b, 1e-5, 1e-5)) << stx::kernels::to_string(pattern);
    // Gradients flow through the op the same way on both paths.
    at::cross_entropy_loss(a.reshape({-1, 256}), bytes.reshape({-1})).backward();
    at::cross_entropy_loss(b.reshape({-1, 256}), bytes.reshape({-1})).backward();
    const auto ps = sparse->parameters(), pd = dense->parameters();
    ASSERT_EQ(ps.size(), pd.size());
    for (size_t i = 0; i < ps.size(); ++i) {
      ASSERT_TRUE(ps[i].grad().defined());
      EXPECT_TRUE(at::allclose(ps[i].grad(), pd[i].grad(), 1e-4, 1e-6)) << "parameter " << i;
    }
    EXPECT_GT(sparse->block_list[0]->qkv->weight.grad().abs().sum().item<double>(), 0.0);
  }
}

TEST(SparseTransformer, RecomputationGivesTheSameLossAndGradients) {
  ModelConfig plain_config = tiny(stx::kernels::Pattern::fixed);
  plain_config.dropout = 0.1;  // recomputation must replay the same dropout masks
  ModelConfig recompute_config = plain_config;
  recompute_config.recompute = true;
  at::manual_seed(4);
  SparseTransformer plain(plain_config);
  at::manual_seed(4);
  SparseTransformer recomputed(recompute_config);
  const at::Tensor bytes = random_bytes(2, 40, 8);
  at::manual_seed(99);
  const at::Tensor loss_a = at::cross_entropy_loss(plain->forward(bytes).reshape({-1, 256}), bytes.reshape({-1}));
  at::manual_seed(99);
  const at::Tensor loss_b = at::cross_entropy_loss(recomputed->forward(bytes).reshape({-1, 256}), bytes.reshape({-1}));
  EXPECT_NEAR(loss_a.item<double>(), loss_b.item<double>(), 1e-6);
  loss_a.backward();
  loss_b.backward();
  const auto pa = plain->parameters(), pb = recomputed->parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    ASSERT_TRUE(pb[i].grad().defined()) << "parameter " << i;
    EXPECT_TRUE(at::allclose(pa[i].grad(), pb[i].grad(), 1e-4, 1e-6)) << "parameter " << i;
  }
}

// The amplitude inputs: row i holds bytes i - taps .. i - 1 as amplitudes, oldest first, zero before 0.
TEST(AmplitudeInputs, RowIHoldsTheAmplitudesOfTheTapsBytesBeforeI) {
  const at::Tensor amplitudes = stx::models::mulaw_amplitudes(at::tensor({0, 255, 128, 127}, at::kLong));
  EXPECT_FLOAT_EQ(amplitudes[0].item<float>(), -1.0f);
  EXPECT_FLOAT_EQ(amplitudes[1].item<float>(), 1.0f);
  EXPECT_NEAR(amplitudes[2].item<float>(), 8.6e-5, 1e-6);  // no byte is exactly 0 (engine/mulaw.h)
  EXPECT_NEAR(amplitudes[3].item<float>(), -8.6e-5, 1e-6);

  const at::Tensor bytes = random_bytes(2, 9, 4);
  const int64_t taps = 3;
  const at::Tensor inputs = stx::models::amplitude_inputs(bytes, taps);
  ASSERT_EQ(inputs.sizes(), (std::vector<int64_t>{2, 9, taps}));
  const at::Tensor expected_amplitudes = stx::models::mulaw_amplitudes(bytes);
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t i = 0; i < 9; ++i) {
      for (int64_t k = 0; k < taps; ++k) {
        const int64_t byte = i - taps + k;
        const float expected = byte < 0 ? 0.0f : expected_amplitudes[b][byte].item<float>();
        EXPECT_EQ(inputs[b][i][k].item<float>(), expected) << "sample " << b << " row " << i << " tap " << k;
      }
    }
  }
}

ModelConfig tiny_audio_with_amplitudes() {
  ModelConfig c = tiny(stx::kernels::Pattern::strided);
  c.kind = stx::models::DataKind::audio;
  c.amplitude_taps = 5;
  c.validate();
  return c;
}

// A model given amplitude inputs starts as the same function as one without (the map starts at zero), so
// that an existing model can be fine-tuned with them; once trained, they still see no later byte.
TEST(AmplitudeInputs, StartAsTheSameFunctionAndStayCausal) {
  const ModelConfig with = tiny_audio_with_amplitudes();
  ModelConfig without = with;
  without.amplitude_taps = 0;
  EXPECT_EQ(with.parameter_count(), SparseTransformer(with)->parameter_count());
  EXPECT_EQ(with.parameter_count(), without.parameter_count() + 5 * with.d_model);

  SparseTransformer a(with);
  SparseTransformer b(without);
  a->eval();
  b->eval();
  at::NoGradGuard no_grad;
  const auto b_parameters = b->named_parameters();
  for (auto& item : a->named_parameters()) {
    if (item.key() != "amplitude.weight") item.value().copy_(b_parameters[item.key()]);
  }
  const at::Tensor bytes = random_bytes(2, 40, 6);
  EXPECT_TRUE(at::equal(a->forward(bytes), b->forward(bytes)));

  a->amplitude->weight.normal_(0.0, 0.5);
  const at::Tensor base = a->forward(bytes);
  EXPECT_FALSE(at::allclose(base, b->forward(bytes)));
  for (int64_t j : {0, 17, 38}) {
    at::Tensor changed = bytes.clone();
    changed[1][j] = (changed[1][j].item<int64_t>() + 101) % 256;
    const at::Tensor logits = a->forward(changed);
    EXPECT_TRUE(at::equal(logits.narrow(1, 0, j + 1), base.narrow(1, 0, j + 1))) << "byte " << j;
    EXPECT_FALSE(at::allclose(logits.select(1, j + 1), base.select(1, j + 1))) << "byte " << j;
  }
}

TEST(ModelConfig, JsonRoundTripAndPresets) {
  for (const std::string& name : stx::models::preset_names()) {
    const ModelConfig c = stx::models::preset(name);
    const ModelConfig back = stx::models::model_config_from_json(stx::models::to_json(c));
    EXPECT_EQ(stx::models::to_json(back), stx::models::to_json(c)) << name;
  }
  EXPECT_THROW(stx::models::preset("huge"), stx::models::ConfigError);
}

TEST(ModelConfig, BadFieldsAreNamed) {
  nlohmann::json j = stx::models::to_json(stx::models::preset("text-small"));
  auto expect_error = [](const nlohmann::json& json, const std::string& needle) {
    try {
      stx::models::model_config_from_json(json);
      ADD_FAILURE() << "accepted " << json.dump();
    } catch (const stx::models::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  nlohmann::json bad = j;
  bad["heads"] = 3;
  expect_error(bad, "heads");
  bad = j;
  bad["attention"]["summary"] = 0;
  expect_error(bad, "summary");
  bad = j;
  bad.erase("d_model");
  expect_error(bad, "d_model");
  bad = j;
  bad["context"] = "long";
  expect_error(bad, "context");
  bad = j;
  bad["attention"]["pattern"] = "banded";
  expect_error(bad, "banded");
  bad = j;
  bad["data"]["kind"] = "video";
  expect_error(bad, "video");
  bad = j;
  bad["data"]["amplitude_taps"] = 8;  // a text model has no amplitudes
  expect_error(bad, "amplitude_taps");
  nlohmann::json audio = stx::models::to_json(stx::models::preset("audio-small"));
  EXPECT_FALSE(audio["data"].contains("amplitude_taps"));  // files without the field stay as they were
  audio["data"]["amplitude_taps"] = 32;
  EXPECT_EQ(stx::models::model_config_from_json(audio).amplitude_taps, 32);
  EXPECT_EQ(stx::models::to_json(stx::models::model_config_from_json(audio)), audio);
  audio["data"]["amplitude_taps"] = -1;
  expect_error(audio, "amplitude_taps");
}

}  // namespace

namespace {

// The fused GELU against the same formula in LibTorch ops, values and gradients, on a non-contiguous
// input (a transposed view) so that the binding's contiguity handling is exercised.
TEST(GeluSigmoid, FusedKernelMatchesLibTorchOpsAndTheirGradient) {
  at::manual_seed(3);
  const at::Tensor base = (at::randn({37, 53}) * 4.0).t();
  const at::Tensor x1 = base.detach().clone().requires_grad_(true);
  const at::Tensor x2 = base.detach().clone().requires_grad_(true);
  const at::Tensor y1 = stx::models::gelu_sigmoid(x1);
  const at::Tensor y2 = x2 * at::sigmoid(1.702 * x2);
  EXPECT_TRUE(at::allclose(y1, y2, 1e-5, 1e-6));
  const at::Tensor dy = at::randn(y1.sizes());
  y1.backward(dy);
  y2.backward(dy);
  EXPECT_TRUE(at::allclose(x1.grad(), x2.grad(), 1e-5, 1e-6));
  // bf16 in and out, as under CPU autocast: the float32 result rounded by LibTorch's own cast, bit for
  // bit, forward and backward.
  const at::Tensor xb = (at::randn({129, 67}) * 4.0).to(at::kBFloat16).requires_grad_(true);
  const at::Tensor xf = xb.detach().to(at::kFloat).requires_grad_(true);
  const at::Tensor yb = stx::models::gelu_sigmoid(xb);
  const at::Tensor yf = stx::models::gelu_sigmoid(xf);
  EXPECT_EQ(yb.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::equal(yb, yf.to(at::kBFloat16)));
  const at::Tensor dyb = at::randn(yb.sizes()).to(at::kBFloat16);
  yb.backward(dyb);
  yf.backward(dyb.to(at::kFloat));
  EXPECT_EQ(xb.grad().scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::equal(xb.grad(), xf.grad().to(at::kBFloat16)));
  // Tensors the kernel does not take still work, through the same formula.
  const at::Tensor d = base.to(at::kDouble);
  EXPECT_TRUE(at::allclose(stx::models::gelu_sigmoid(d), d * at::sigmoid(1.702 * d)));
}

}  // namespace
