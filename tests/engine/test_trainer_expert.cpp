// Training with the linear-prediction expert and with noisy histories: a fine-tune that adds the expert
// starts as the expert alone, the refusals name their option, and the noise is drawn per crop, within its
// bounds, the same on every run; a crop's past comes from the stream before it.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "engine_test_support.h"
#include "stx/engine/checkpoint.h"
#include "stx/engine/data/crops.h"
#include "stx/engine/data/dataset.h"
#include "stx/engine/evaluate.h"
#include "stx/engine/export/export.h"
#include "stx/engine/model_data.h"
#include "stx/engine/mulaw.h"
#include "stx/engine/trainer.h"
#include "stx/models/linear_predictor.h"

namespace {

using namespace stx::engine;
namespace fs = std::filesystem;

// Four 2 s decaying tones at 12 kHz: audio a linear predictor does well on.
fs::path tone_corpus(const fs::path& folder) {
  fs::create_directories(folder);
  for (int file = 0; file < 4; ++file) {
    std::vector<uint8_t> bytes(24000);
    for (size_t i = 0; i < bytes.size(); ++i) {
      const double t = static_cast<double>(i) / 12000.0;
      bytes[i] = mulaw_encode(static_cast<float>(0.5 * std::exp(-t) * std::sin(2 * M_PI * (220.0 + 55 * file) * t)));
    }
    write_wav(folder / ("tone-" + std::to_string(file) + ".wav"), bytes.data(), bytes.size(), 12000, ExportInfo{});
  }
  return folder;
}

TrainOptions tiny_audio_options(const fs::path& data, const fs::path& out) {
  TrainOptions o = stx::test::tiny_train_options(data, out);
  o.model.kind = stx::models::DataKind::audio;
  return o;
}

TEST(TrainerExpert, AFineTuneThatAddsTheExpertStartsAsTheExpertAlone) {
  stx::test::TempFolder tmp;
  const fs::path data = tone_corpus(tmp / "audio");
  TrainOptions base = tiny_audio_options(data, tmp / "base");
  base.steps = 2;
  ASSERT_EQ(stx::engine::train(base, nullptr, std::atomic<bool>{false}).outcome, JobEnded::Outcome::completed);

  TrainOptions tune = tiny_audio_options(data, tmp / "tuned");
  tune.init_from = tmp / "base";
  tune.expert_order = 8;
  tune.noise_share = 0.5;
  tune.noise_steps = 2;
  tune.steps = 1;
  tune.learning_rate = 1e-9;  // an Adam step moves each weight by about lr (lambda and w by 50 lr)
  tune.warmup_steps = 0;
  tune.weight_decay = 0;
  const JobEnded end = stx::engine::train(tune, nullptr, std::atomic<bool>{false});
  ASSERT_EQ(end.outcome, JobEnded::Outcome::completed) << end.message;
  ModelBundle tuned = load_checkpoint(resolve_checkpoint(tmp / "tuned"));
  ASSERT_EQ(tuned.config.expert.order, 8);
  EXPECT_EQ(tuned.config.expert.window, stx::models::LinearExpertConfig{}.window);
  EXPECT_LT(tuned.model->network_weight.abs().item<double>(), 1e-6);
  EXPECT_NEAR(tuned.model->expert_weight.item<double>(), 1.0, 1e-6);
  EXPECT_LT(tuned.model->expert_byte->weight.abs().max().item<double>(), 1e-6);
  EXPECT_EQ(tuned.training["noise_share"], 0.5);
  EXPECT_EQ(tuned.training["noise_steps"], 2);

  // Its bits/byte on the validation split are the expert's, each window read from its start.
  const Dataset split = open_dataset(data, [&] {
    DatasetOptions d = dataset_options_for(tuned.config);
    d.validation_fraction = tune.validation_fraction;
    return d;
  }());
  const EvaluationResult model_bits =
      evaluate_bits_per_byte(tuned.model, split.validation, tuned.config.context, 1, 4);
  const auto windows = evaluation_windows(split.validation.size(), static_cast<size_t>(tuned.config.context), 1, 4);
  double bits = 0;
  int64_t count = 0;
  std::vector<float> lp(256);
  for (const auto& [begin, finish] : windows) {
    stx::models::LinearPredictor p(tuned.config.expert);
    for (size_t i = begin; i < finish; ++i) {
      p.log_probs(lp.data());
      bits -= lp[split.validation[i]] / std::log(2.0);
      p.push(split.validation[i]);
      ++count;
    }
  }
  EXPECT_NEAR(model_bits.bits_per_byte, bits / static_cast<double>(count), 1e-4);

  // A model that has an expert keeps it; a text model cannot have one; a resumed run cannot add one.
  TrainOptions other = tiny_audio_options(data, tmp / "other");
  other.init_from = tmp / "tuned";
  other.expert_order = 16;
  const JobEnded kept = stx::engine::train(other, nullptr, std::atomic<bool>{false});
  EXPECT_EQ(kept.outcome, JobEnded::Outcome::failed);
  EXPECT_NE(kept.message.find("already has a linear-prediction expert of order 8"), std::string::npos) << kept.message;
  EXPECT_EQ(kept.settings, std::vector<std::string>{"expert_order"});
  TrainOptions text = stx::test::tiny_train_options(stx::test::make_text_corpus(tmp / "text"), tmp / "text-run");
  text.expert_order = 8;
  const JobEnded refused = stx::engine::train(text, nullptr, std::atomic<bool>{false});
  EXPECT_EQ(refused.outcome, JobEnded::Outcome::failed);
  EXPECT_NE(refused.message.find("audio models only"), std::string::npos) << refused.message;
  EXPECT_EQ(refused.settings, std::vector<std::string>{"expert_order"});
  TrainOptions resumed;
  resumed.resume = tmp / "tuned";
  resumed.expert_order = 8;
  EXPECT_EQ(stx::engine::train(resumed, nullptr, std::atomic<bool>{false}).settings,
            std::vector<std::string>{"expert_order"});
  TrainOptions noisy = tiny_audio_options(data, tmp / "noisy");
  noisy.noise_share = 1.5;
  EXPECT_EQ(stx::engine::train(noisy, nullptr, std::atomic<bool>{false}).settings,
            std::vector<std::string>{"noise_share"});
}

TEST(TrainerExpert, NoisyRunsRepeatThemselvesAndLearn) {
  stx::test::TempFolder tmp;
  const fs::path data = tone_corpus(tmp / "audio");
  auto run = [&](const fs::path& out) {
    TrainOptions o = tiny_audio_options(data, out);
    o.expert_order = 4;
    o.noise_share = 0.5;
    o.noise_steps = 3;
    o.steps = 4;
    o.deterministic = true;
    const JobEnded end = stx::engine::train(o, nullptr, std::atomic<bool>{false});
    EXPECT_EQ(end.outcome, JobEnded::Outcome::completed) << end.message;
    return load_checkpoint(resolve_checkpoint(out));
  };
  const ModelBundle a = run(tmp / "a"), b = run(tmp / "b");
  auto other = b.model->named_parameters();
  for (const auto& item : a.model->named_parameters()) EXPECT_TRUE(item.value().equal(other[item.key()])) << item.key();
  // lambda moved off zero: the network has begun to take part
  EXPECT_GT(a.model->network_weight.abs().item<double>(), 1e-4);
}

TEST(CropNoise, EachCropIsNoisyByItsIndexWithinItsStepsAndClamped) {
  EXPECT_FALSE(crop_is_noisy(1, 5, 0.0));
  EXPECT_TRUE(crop_is_noisy(1, 5, 1.0));
  int noisy = 0;
  for (uint64_t i = 0; i < 10000; ++i) noisy += crop_is_noisy(7, i, 0.3) ? 1 : 0;
  EXPECT_NEAR(noisy / 10000.0, 0.3, 0.02);
  std::vector<uint8_t> bytes(4000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i % 256);
  std::vector<uint8_t> a = bytes, b = bytes;
  add_crop_noise(7, 42, 3, a.data(), a.size());
  add_crop_noise(7, 42, 3, b.data(), b.size());
  EXPECT_EQ(a, b);
  std::vector<int> seen(7, 0);
  for (size_t i = 0; i < bytes.size(); ++i) {
    const int shift = static_cast<int>(a[i]) - static_cast<int>(bytes[i]);
    if (bytes[i] >= 3 && bytes[i] <= 252) {
      ASSERT_GE(shift, -3);
      ASSERT_LE(shift, 3);
      seen[static_cast<size_t>(shift + 3)] += 1;
    } else {
      ASSERT_LE(std::abs(shift), 3);  // clamped at 0 and 255
    }
  }
  for (int count : seen) EXPECT_GT(count, 400);  // every shift drawn, about 1 in 7
  std::vector<uint8_t> other = bytes;
  add_crop_noise(7, 43, 3, other.data(), other.size());
  EXPECT_NE(other, a);
  std::vector<uint8_t> none = bytes;
  add_crop_noise(7, 42, 0, none.data(), none.size());
  EXPECT_EQ(none, bytes);
}

TEST(CropSampler, APastComesFromTheStreamBeforeTheCrop) {
  std::vector<uint8_t> stream(5000);
  for (size_t i = 0; i < stream.size(); ++i) stream[i] = static_cast<uint8_t>((i * 7) % 251);
  const CropSampler crops(stream, 100, 1, 3);
  for (uint64_t index = 0; index < 50; ++index) {
    std::vector<uint8_t> out(1100);
    const size_t before = crops.copy_with_past(index, 1000, out.data());
    const size_t start = crops.start_of(index);
    ASSERT_EQ(before, std::min<size_t>(1000, start));
    for (size_t i = 0; i < before + 100; ++i) ASSERT_EQ(out[i], stream[start - before + i]);
  }
}

}  // namespace
