// The models that ship in models/bundled/, found by name.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <cmath>
#include <functional>

#include "engine_test_support.h"
#include "stx/engine/bundled_models.h"
#include "stx/engine/checkpoint.h"
#include "stx/engine/error.h"
#include "stx/engine/model_session.h"
#include "stx/models/cpu_decoder.h"

namespace {

using namespace stx::engine;
namespace fs = std::filesystem;

using stx::test::error_of;

// What a user with no internet gets: an image, an audio and a text model, found by name.
struct Shipped {
  std::string name;
  stx::models::DataKind kind;
  stx::kernels::Pattern pattern;
  friend void PrintTo(const Shipped& s, std::ostream* os) { *os << s.name; }
};

class BundledModel : public ::testing::TestWithParam<Shipped> {};

TEST_P(BundledModel, IsFoundByNameLoadsAndMatchesItsCard) {
  const Shipped& s = GetParam();
  const auto folder = find_bundled_model(s.name);
  ASSERT_TRUE(folder.has_value()) << "models/bundled/" << s.name << " is missing";
  EXPECT_EQ(resolve_checkpoint(s.name), *folder);  // --model image

  EXPECT_LE(fs::file_size(*folder / "model.safetensors"), 16u << 20);
  EXPECT_TRUE(fs::exists(*folder / "MODEL_CARD.md"));
  ModelBundle bundle = load_checkpoint(*folder);
  const stx::models::ModelConfig& c = bundle.config;
  EXPECT_EQ(c.kind, s.kind);
  EXPECT_EQ(c.pattern, s.pattern);
  if (s.pattern == stx::kernels::Pattern::fixed) {
    EXPECT_EQ(c.mode, stx::kernels::Combination::merged);
  }
  if (s.kind == stx::models::DataKind::audio) {
    EXPECT_GE(c.context, 16384);
  }
  ASSERT_TRUE(bundle.state.has_value());
  EXPECT_GT(bundle.state->step, 0);
  EXPECT_TRUE(std::isfinite(bundle.state->last_bits_per_byte));
  // What the studio and `stx info` show is the figure measured on every held-out byte (held_out.json).
  const ModelSummary summary = describe_model(*folder);
  EXPECT_TRUE(summary.bits_per_byte_held_out);
  ASSERT_TRUE(summary.bits_per_byte.has_value());
  EXPECT_GT(*summary.bits_per_byte, 0.5);
  EXPECT_LT(*summary.bits_per_byte, 8.0);

  // A trained model: on a short sequence its logits are finite and not uniform.
  at::NoGradGuard no_grad;
  const at::Tensor bytes = at::randint(0, 256, {1, 64}, at::kLong);
  const at::Tensor logits = bundle.model->forward(bytes);
  EXPECT_TRUE(at::isfinite(logits).all().item<bool>());
  EXPECT_GT(logits.std().item<double>(), 0.1);

  // Shipped in fp16, so generation reads every weight matrix as halves: half the bytes a step reads.
  stx::models::IncrementalDecoder decoder(bundle.model, 1, 64);
  EXPECT_EQ(decoder.half_weight_matrices(), 4 * c.layers + 1);
}

INSTANTIATE_TEST_SUITE_P(Shipped, BundledModel,
                         ::testing::Values(Shipped{"image", stx::models::DataKind::image, stx::kernels::Pattern::strided},
                                           Shipped{"audio", stx::models::DataKind::audio, stx::kernels::Pattern::strided},
                                           Shipped{"text", stx::models::DataKind::text, stx::kernels::Pattern::fixed}),
                         [](const auto& info) { return info.param.name; });

TEST(BundledModels, AnUnknownNameListsTheBundledOnes) {
  EXPECT_EQ(bundled_model_names(), (std::vector<std::string>{"audio", "image", "text"}));
  const std::string message = error_of([] { resolve_checkpoint("no-such-model"); });
  EXPECT_NE(message.find("no-such-model"), std::string::npos) << message;
  EXPECT_NE(message.find("audio, image, text"), std::string::npos) << message;
  EXPECT_FALSE(find_bundled_model("../bundled/image").has_value());  // names only, never paths
  EXPECT_FALSE(find_bundled_model("..").has_value());
}

}  // namespace
