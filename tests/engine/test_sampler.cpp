// The sampler: seeds, prompts, stop strings, cancellation, the attention probe, and the sampling controls.
// Two tiny models are overfit here, in a few seconds, so that what they generate is known exactly.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/optim/adamw.h>

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "stx/engine/error.h"
#include "stx/engine/sampler.h"
#include "stx/kernels/pattern.h"
#include "stx/models/model_config.h"
#include "stx/models/sparse_transformer.h"
#include "tiny_model.h"

namespace {

using stx::engine::Event;
using stx::engine::SampleRequest;
using stx::engine::SampleResult;
using stx::models::ModelConfig;
using stx::models::SparseTransformer;

ModelConfig tiny_image() { return stx::test::tiny_model_config(stx::models::DataKind::image); }

ModelConfig tiny_text() {
  ModelConfig c = tiny_image();
  c.name = "tiny-text";
  c.kind = stx::models::DataKind::text;
  c.context = 48;
  c.pattern = stx::kernels::Pattern::fixed;
  c.stride = 8;
  c.summary = 2;
  return c;
}

// Trains `model` on the one sequence `bytes` until it has learned it by heart.
void overfit(SparseTransformer& model, const std::vector<uint8_t>& bytes, int steps) {
  at::manual_seed(1);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0.0));
  const at::Tensor x =
      at::tensor(std::vector<int64_t>(bytes.begin(), bytes.end()), at::kLong).view({1, static_cast<int64_t>(bytes.size())});
  model->train();
  for (int s = 0; s < steps; ++s) {
    optimizer.zero_grad();
    at::cross_entropy_loss(model->forward(x).view({-1, 256}), x.view({-1})).backward();
    optimizer.step();
  }
  model->eval();
  at::NoGradGuard no_grad;
  const double bits = stx::models::total_bits(model->forward(x), x) / static_cast<double>(bytes.size());
  ASSERT_LT(bits, 0.01) << "the tiny model did not learn its one sequence";
}

std::vector<uint8_t> gradient_image() {
  std::vector<uint8_t> image(64);
  for (int i = 0; i < 64; ++i) image[i] = static_cast<uint8_t>((i / 8) * 30 + (i % 8) * 3);
  return image;
}

SparseTransformer& image_model() {
  static SparseTransformer model = [] {
    SparseTransformer m(tiny_image());
    overfit(m, gradient_image(), 800);
    return m;
  }();
  return model;
}

const std::string kText = "the cat sat. the cat sat. the cat sat. the cat s";  // 48 bytes

SparseTransformer& text_model() {
  static SparseTransformer model = [] {
    SparseTransformer m(tiny_text());
    overfit(m, std::vector<uint8_t>(kText.begin(), kText.end()), 600);
    return m;
  }();
  return model;
}

// A listener that presses Stop once progress reaches `position`, as the studio's button would.
stx::engine::EventSink stop_from(int64_t position, std::atomic<bool>& cancel) {
  return [position, &cancel](const Event& e) {
    if (auto* p = std::get_if<stx::engine::SampleProgress>(&e); p && p->position >= position) cancel = true;
  };
}

SampleRequest request_for(int64_t length, uint64_t seed, int64_t count = 1) {
  SampleRequest r;
  r.length = length;
  r.count = count;
  r.seed = seed;
  return r;
}

TEST(Sampler, AModelOverfitToOneImageReturnsThatImage) {
  SampleRequest r = request_for(64, 9, 3);
  const SampleResult out = stx::engine::sample(image_model(), r, nullptr);
  ASSERT_EQ(out.samples.size(), 3u);
  for (const auto& s : out.samples) EXPECT_EQ(s, gradient_image());
  EXPECT_EQ(out.generated_bytes, 3 * 64);
  EXPECT_FALSE(out.cancelled);
}

TEST(Sampler, ImageCompletionKeepsThePromptRowsByteForByte) {
  // A prompt the model never saw: its rows must come back untouched, and the rest is generated.
  std::vector<uint8_t> prompt(24);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<uint8_t>(250 - i);
  SampleRequest r = request_for(64, 4, 2);
  r.prompt = prompt;
  const SampleResult out = stx::engine::sample(image_model(), r, nullptr);
  for (const auto& s : out.samples) {
    ASSERT_EQ(s.size(), 64u);
    EXPECT_TRUE(std::equal(prompt.begin(), prompt.end(), s.begin()));
  }
  EXPECT_EQ(out.generated_bytes, 2 * 40);
}

TEST(Sampler, AFixedSeedReproducesAndTheSeedUsedIsReported) {
  SparseTransformer model(tiny_text());  // untrained: every byte is a real draw
  model->eval();
  SampleRequest r;
  r.length = 40;
  r.count = 3;
  uint64_t started_seed = 0;
  const SampleResult first = stx::engine::sample(model, r, [&](const Event& e) {
    if (auto* s = std::get_if<stx::engine::SampleStarted>(&e)) started_seed = s->seed;
  });
  EXPECT_EQ(started_seed, first.seed);  // reported before the first byte, and the one used
  r.seed = first.seed;
  const SampleResult again = stx::engine::sample(model, r, nullptr);
  EXPECT_EQ(again.samples, first.samples);
  EXPECT_NE(first.samples[0], first.samples[1]);  // samples in a batch draw independently
  r.seed = first.seed + 1;
  EXPECT_NE(stx::engine::sample(model, r, nullptr).samples, first.samples);
  // float32 caches (exact keys and values) reproduce too
  r.half_precision_cache = false;
  const SampleResult exact = stx::engine::sample(model, r, nullptr);
  EXPECT_EQ(stx::engine::sample(model, r, nullptr).samples, exact.samples);
}

TEST(Sampler, BothCacheTypesCompleteTheOverfitImage) {
  for (const bool half : {true, false}) {
    SampleRequest r = request_for(64, 5, 2);
    r.half_precision_cache = half;
    const SampleResult out = stx::engine::sample(image_model(), r, nullptr);
    for (const auto& s : out.samples) EXPECT_EQ(s, gradient_image()) << (half ? "float16" : "float32") << " cache";
  }
}

TEST(Sampler, StreamedBytesAddUpToTheResult) {
  SampleRequest r = request_for(48, 3, 2);
  r.prompt = {'t', 'h', 'e'};
  r.event_interval_seconds = 0.0;
  std::map<int64_t, std::string> streamed;
  int progress_events = 0;
  const SampleResult out = stx::engine::sample(text_model(), r, [&](const Event& e) {
    if (auto* b = std::get_if<stx::engine::SampleBytes>(&e)) {
      EXPECT_EQ(b->position, static_cast<int64_t>(3 + streamed[b->sample].size()));
      streamed[b->sample] += b->bytes;
    }
    if (std::get_if<stx::engine::SampleProgress>(&e)) ++progress_events;
  });
  for (int64_t k = 0; k < 2; ++k) {
    EXPECT_EQ("the" + streamed[k], std::string(out.samples[k].begin(), out.samples[k].end()));
  }
  EXPECT_EQ(std::string(out.samples[0].begin(), out.samples[0].end()), kText);
  EXPECT_GT(progress_events, 10);
}

// A model with room for a prompt of several of the sampler's 64-position chunks. Untrained: only the
// progress and the timing are looked at.
SparseTransformer& long_model() {
  static SparseTransformer model = [] {
    ModelConfig c = tiny_text();
    c.context = 320;
    c.pattern = stx::kernels::Pattern::strided;
    SparseTransformer m(c);
    m->eval();
    return m;
  }();
  return model;
}

// A long prompt (a clip to continue) is read before anything is drawn, 64 positions a call for all the
// samples at once: its progress is shown as it goes, and its time is kept apart from the generation's,
// whose rate would otherwise look slower.
TEST(Sampler, APromptShowsItsProgressAndItsTimeIsToldApart) {
  std::vector<uint8_t> prompt(200);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<uint8_t>(250 - i);
  SampleRequest r = request_for(240, 4, 2);
  r.prompt = prompt;
  r.event_interval_seconds = 0.0;
  std::vector<stx::engine::SampleProgress> during_prompt, after_prompt;
  const SampleResult out = stx::engine::sample(long_model(), r, [&](const Event& e) {
    if (auto* p = std::get_if<stx::engine::SampleProgress>(&e)) {
      (p->position <= 200 ? during_prompt : after_prompt).push_back(*p);
    }
  });
  std::vector<int64_t> positions;
  for (const auto& p : during_prompt) positions.push_back(p.position);
  EXPECT_EQ(positions, (std::vector<int64_t>{64, 128, 192, 200})) << "progress while the prompt was read";
  // The prompt is read for one sample, many positions a call, which tells nothing of generating's pace.
  for (const auto& p : during_prompt) EXPECT_LT(p.eta_seconds, 0.0) << "position " << p.position;
  EXPECT_GT(during_prompt.back().tokens_per_second, 0.0) << "the prompt's reading rate";
  ASSERT_GE(after_prompt.size(), 40u);  // a step each, and the last again when done
  for (const auto& p : after_prompt) EXPECT_GE(p.eta_seconds, 0.0) << "position " << p.position;
  EXPECT_EQ(after_prompt.back().position, 240);
  EXPECT_EQ(after_prompt.back().eta_seconds, 0.0);
  EXPECT_EQ(out.generated_bytes, 2 * 40);
  for (const auto& s : out.samples) EXPECT_TRUE(std::equal(prompt.begin(), prompt.end(), s.begin()));
  EXPECT_GT(out.prompt_seconds, 0.0);
  EXPECT_LT(out.prompt_seconds, out.seconds);
  EXPECT_NEAR(out.tokens_per_second, 80.0 / (out.seconds - out.prompt_seconds), 1e-6 * out.tokens_per_second);

  // Stopped while the prompt is read: nothing drawn, all the time was the prompt's, and no rate is made up.
  std::atomic<bool> cancel{false};
  const SampleResult stopped = stx::engine::sample(long_model(), r, stop_from(64, cancel), &cancel);
  EXPECT_TRUE(stopped.cancelled);
  EXPECT_EQ(stopped.generated_bytes, 0);
  EXPECT_EQ(stopped.prompt_seconds, stopped.seconds);
  EXPECT_EQ(stopped.tokens_per_second, 0.0);
  for (const auto& s : stopped.samples) EXPECT_EQ(s, prompt);
}

TEST(Sampler, AStopStringEndsASampleAndIsLeftOut) {
  SampleRequest r = request_for(48, 5);
  r.prompt = {'t', 'h', 'e'};
  r.stop_strings = {"sat."};
  r.event_interval_seconds = 0.0;
  std::string streamed;
  const SampleResult out = stx::engine::sample(text_model(), r, [&](const Event& e) {
    if (auto* b = std::get_if<stx::engine::SampleBytes>(&e)) streamed += b->bytes;
  });
  EXPECT_EQ(std::string(out.samples[0].begin(), out.samples[0].end()), "the cat ");
  EXPECT_EQ(streamed, " cat ");  // the stop string was never shown
}

TEST(Sampler, StopMidSampleReturnsThePartialResult) {
  SampleRequest r = request_for(64, 8, 2);
  r.event_interval_seconds = 0.0;
  std::atomic<bool> cancel{false};
  const SampleResult out = stx::engine::sample(image_model(), r, stop_from(20, cancel), &cancel);
  EXPECT_TRUE(out.cancelled);
  const std::vector<uint8_t> whole = gradient_image();
  for (const auto& s : out.samples) {
    EXPECT_GE(s.size(), 20u);
    EXPECT_LT(s.size(), 64u);
    EXPECT_TRUE(std::equal(s.begin(), s.end(), whole.begin()));  // what was generated is kept as it was
  }
}

TEST(Sampler, TheAttentionProbeGivesExactlyTheAttendedSet) {
  const ModelConfig config = tiny_text();
  SampleRequest r = request_for(48, 2);
  r.probe_layer = 1;
  r.probe_head = 1;
  r.event_interval_seconds = 0.0;
  const auto patterns = config.layer_patterns(1);
  int probes = 0;
  stx::engine::sample(text_model(), r, [&](const Event& e) {
    if (auto* p = std::get_if<stx::engine::AttentionProbe>(&e)) {
      ++probes;
      EXPECT_EQ(p->positions, stx::kernels::attended_set(patterns[1], p->position));
      double total = 0;
      for (float w : p->weights) total += w;
      if (!p->positions.empty()) {
        EXPECT_NEAR(total, 1.0, 1e-4);
      }
    }
  });
  EXPECT_GE(probes, 40);
  r.probe_layer = 2;  // the model has 2 layers
  EXPECT_THROW(stx::engine::sample(text_model(), r, nullptr), stx::engine::Error);
}

TEST(Sampler, RegenerateKeepsTheFirstBytes) {
  SparseTransformer model(tiny_text());
  model->eval();
  const SampleResult first = stx::engine::sample(model, request_for(40, 1), nullptr);
  const SampleResult second = stx::engine::regenerate(model, first.samples[0], 25, request_for(40, 2), nullptr);
  ASSERT_EQ(second.samples[0].size(), 40u);
  EXPECT_TRUE(std::equal(first.samples[0].begin(), first.samples[0].begin() + 25, second.samples[0].begin()));
  EXPECT_NE(first.samples[0], second.samples[0]);
  EXPECT_THROW(stx::engine::regenerate(model, first.samples[0], 41, request_for(40, 2), nullptr), stx::engine::Error);
}

TEST(Sampler, BadRequestsAreRefusedBeforeAnythingStarts) {
  SparseTransformer model(tiny_text());
  int events = 0;
  auto count_events = [&](const Event&) { ++events; };
  SampleRequest r = request_for(49, 1);  // past the context of 48
  EXPECT_THROW(stx::engine::sample(model, r, count_events), stx::engine::Error);
  r = request_for(10, 1);
  r.prompt.assign(10, 'a');  // nothing left to generate
  EXPECT_THROW(stx::engine::sample(model, r, count_events), stx::engine::Error);
  r = request_for(10, 1);
  r.settings.top_p = 0.0;
  EXPECT_THROW(stx::engine::sample(model, r, count_events), stx::engine::Error);
  r.settings.top_p = 1.0;
  r.settings.top_k = 300;
  EXPECT_THROW(stx::engine::sample(model, r, count_events), stx::engine::Error);
  r.settings.top_k = 0;
  r.settings.temperature = -1;
  EXPECT_THROW(stx::engine::sample(model, r, count_events), stx::engine::Error);
  EXPECT_EQ(events, 0);
}

TEST(PickByte, TemperatureTopKAndTopPFollowTheirDefinitions) {
  std::vector<float> logits(256, -10.0f);
  logits[7] = 2.0f;
  logits[9] = 1.0f;
  logits[200] = 0.0f;
  stx::engine::SamplingSettings greedy;
  greedy.temperature = 0.0;
  EXPECT_EQ(stx::engine::pick_byte(logits.data(), greedy, 0.99), 7);
  stx::engine::SamplingSettings top1;
  top1.top_k = 1;
  EXPECT_EQ(stx::engine::pick_byte(logits.data(), top1, 0.99), 7);
  // Frequencies over an even sweep of u follow the tempered softmax of the kept bytes.
  auto frequencies = [&](const stx::engine::SamplingSettings& s) {
    std::map<int, double> f;
    const int n = 20000;
    for (int i = 0; i < n; ++i) f[stx::engine::pick_byte(logits.data(), s, (i + 0.5) / n)] += 1.0 / n;
    return f;
  };
  stx::engine::SamplingSettings top2;
  top2.top_k = 2;
  auto f = frequencies(top2);
  EXPECT_NEAR(f[7], std::exp(2.0) / (std::exp(2.0) + std::exp(1.0)), 1e-3);
  EXPECT_EQ(f.count(200), 0u);
  stx::engine::SamplingSettings hot;
  hot.temperature = 2.0;
  f = frequencies(hot);
  const double z = std::exp(1.0) + std::exp(0.5) + 1.0 + 253 * std::exp(-5.0);
  EXPECT_NEAR(f[7], std::exp(1.0) / z, 1e-3);
  EXPECT_NEAR(f[200], 1.0 / z, 1e-3);
  // top-p 0.7: byte 7 alone has about 0.67 of the mass, so byte 9 joins and byte 200 does not.
  stx::engine::SamplingSettings nucleus;
  nucleus.top_p = 0.7;
  f = frequencies(nucleus);
  EXPECT_GT(f[9], 0.2);
  EXPECT_EQ(f.count(200), 0u);
  // min-p 0.3: byte 9 (e^-1 = 0.37 of byte 7's probability) stays, byte 200 (0.14) and the tail go, and the
  // rest keep their proportions.
  stx::engine::SamplingSettings floor;
  floor.min_p = 0.3;
  f = frequencies(floor);
  EXPECT_EQ(f.size(), 2u);
  EXPECT_NEAR(f[7], std::exp(2.0) / (std::exp(2.0) + std::exp(1.0)), 1e-3);
  // u at the very end never lands on a dropped byte
  EXPECT_EQ(stx::engine::pick_byte(logits.data(), floor, 1.0), 9);
  floor.min_p = 1.0;
  EXPECT_THROW(floor.validate(), stx::engine::Error);
  floor.min_p = -0.1;
  EXPECT_THROW(floor.validate(), stx::engine::Error);
}

}  // namespace
