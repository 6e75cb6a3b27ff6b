// IncrementalDecoder against the full forward pass: every position of a short sequence, for the dense,
// strided and fixed patterns and an image model (three position axes); rewinding; the attention probe.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "decoder_test_support.h"
#include "stx/kernels/pattern.h"
#include "stx/models/cpu_decoder.h"
#include "stx/models/model_config.h"
#include "stx/models/sparse_transformer.h"

namespace {

using stx::kernels::Pattern;
using stx::models::IncrementalDecoder;
using stx::models::ModelConfig;
using stx::models::SparseTransformer;
using stx::test::decoded_logits;
using stx::test::random_model;

// [B, T, 256] logits of the full forward pass.
at::Tensor full_logits(SparseTransformer& model, const at::Tensor& bytes) {
  at::NoGradGuard no_grad;
  return model->forward(bytes);
}

// With float16 caches the keys and values are rounded (relative error up to 2^-11), so the logits drift by
// about that much of their size (measured: 2.6e-4 to 4.1e-4 here, against about 1e-6 with float32 caches).
double tolerance_for(stx::kernels::DType cache) { return cache == stx::kernels::DType::f16 ? 2e-3 : 2e-4; }

void expect_decode_equals_forward(const ModelConfig& config,
                                  stx::kernels::DType cache = stx::kernels::DType::f32) {
  SparseTransformer model = random_model(config);
  at::manual_seed(3);
  const at::Tensor bytes = at::randint(0, 256, {3, config.context}, at::kLong);
  const at::Tensor want = full_logits(model, bytes);
  auto network = std::make_unique<IncrementalDecoder>(model, 3, 0, cache);
  EXPECT_EQ(network->cache_dtype(), cache);
  // The amplitude inputs of the audio config come from their own decoder, around the network's.
  const std::unique_ptr<stx::models::TokenDecoder> wrapped = stx::models::with_history_inputs(model, std::move(network));
  stx::models::TokenDecoder& decoder = *wrapped;
  const at::Tensor got = decoded_logits(decoder, bytes);
  double worst = 0;
  for (int64_t i = 0; i < config.context; ++i) {
    const double diff = (got.select(1, i) - want.select(1, i)).abs().max().item<double>();
    ASSERT_LT(diff, tolerance_for(cache)) << "position " << i << ": decode differs from the forward pass";
    worst = std::max(worst, diff);
  }
  // the same most likely byte nearly everywhere: what sampling at low temperature sees
  const double same_argmax = got.argmax(2).eq(want.argmax(2)).to(at::kDouble).mean().item<double>();
  EXPECT_GT(same_argmax, 0.99);
  std::printf("%s cache: largest logit difference %.2e, same argmax %.4f\n", stx::kernels::to_string(cache),
              worst, same_argmax);
  EXPECT_EQ(decoder.position(), config.context);
  std::vector<int32_t> inputs(3, 0);
  std::vector<float> logits(3 * 256);
  EXPECT_THROW(decoder.step(inputs.data(), logits.data()), std::out_of_range);  // past the context
}

TEST(IncrementalDecoder, EqualsForwardDense) {
  expect_decode_equals_forward(stx::test::small_decoder_config(Pattern::dense));
}
TEST(IncrementalDecoder, EqualsForwardStrided) {
  expect_decode_equals_forward(stx::test::small_decoder_config(Pattern::strided));
}
TEST(IncrementalDecoder, EqualsForwardFixed) {
  expect_decode_equals_forward(stx::test::small_decoder_config(Pattern::fixed));
}
TEST(IncrementalDecoder, EqualsForwardFixedInterleaved) {
  expect_decode_equals_forward(
      stx::test::small_decoder_config(Pattern::fixed, stx::kernels::Combination::interleaved));
}
// A refused step (a token outside 0..256, a position past the capacity) records nothing: the amplitude
// inputs of later steps are those of a decoder that never saw it.
TEST(AmplitudeDecoder, ARefusedStepLeavesTheInputsAsTheyWere) {
  const ModelConfig config = stx::test::audio_decoder_config();
  SparseTransformer model = random_model(config);
  at::manual_seed(4);
  const at::Tensor bytes = at::randint(0, 256, {2, config.context}, at::kLong);
  const auto clean = stx::models::make_decoder(model, 2, 0, stx::kernels::DType::f32, at::Device(at::kCPU));
  const at::Tensor want = decoded_logits(*clean, bytes);
  const auto refused = stx::models::make_decoder(model, 2, 0, stx::kernels::DType::f32, at::Device(at::kCPU));
  std::vector<int32_t> inputs = {256, 256};
  std::vector<float> logits(2 * 256);
  for (int64_t i = 0; i < 12; ++i) {
    refused->step(inputs.data(), logits.data());
    for (int64_t b = 0; b < 2; ++b) inputs[static_cast<size_t>(b)] = static_cast<int32_t>(bytes[b][i].item<int64_t>());
  }
  const std::vector<int32_t> bad = {inputs[0], 300};
  EXPECT_THROW(refused->step(bad.data(), logits.data()), std::invalid_argument);
  EXPECT_EQ(refused->position(), 12);
  const at::Tensor got = decoded_logits(*refused, bytes, 12);
  EXPECT_TRUE(at::equal(got.narrow(1, 12, config.context - 12), want.narrow(1, 12, config.context - 12)));
}

TEST(IncrementalDecoder, EqualsForwardAudioWithAmplitudeInputs) {
  expect_decode_equals_forward(stx::test::audio_decoder_config());
  expect_decode_equals_forward(stx::test::audio_decoder_config(), stx::kernels::DType::f16);
}
TEST(IncrementalDecoder, EqualsForwardImage) {
  expect_decode_equals_forward(stx::test::image_decoder_config());
}
TEST(IncrementalDecoder, HalfCacheStaysCloseToForward) {
  for (const Pattern pattern : {Pattern::strided, Pattern::fixed, Pattern::dense}) {
    SCOPED_TRACE(stx::kernels::to_string(pattern));
    expect_decode_equals_forward(stx::test::small_decoder_config(pattern), stx::kernels::DType::f16);
  }
  expect_decode_equals_forward(stx::test::image_decoder_config(), stx::kernels::DType::f16);
  SparseTransformer model = random_model(stx::test::small_decoder_config(Pattern::strided));
  EXPECT_THROW(IncrementalDecoder(model, 1, 0, stx::kernels::DType::bf16), std::invalid_argument);
}

// A model whose weights are halves already (exported in fp16, as the bundled models are) keeps its matrices
// as halves, and its logits are bit for bit those of float32 weights: widening a half is exact. A model
// with other weights keeps float32.
TEST(IncrementalDecoder, HalfWeightsGiveTheLogitsOfTheirFloats) {
  const int threads_before = at::get_num_threads();
  for (const Pattern pattern : {Pattern::strided, Pattern::fixed}) {
    SCOPED_TRACE(stx::kernels::to_string(pattern));
    const ModelConfig config = stx::test::small_decoder_config(pattern);
    SparseTransformer model = random_model(config);
    {
      IncrementalDecoder unrounded(model, 1);
      EXPECT_EQ(unrounded.half_weight_matrices(), 0);
    }
    {
      at::NoGradGuard no_grad;
      for (at::Tensor p : model->parameters()) p.copy_(p.to(at::kHalf).to(at::kFloat));
    }
    at::manual_seed(8);
    const int64_t batch = 19, length = 40;  // split over two threads below, with partial row tiles
    const at::Tensor bytes = at::randint(0, 256, {batch, length}, at::kLong);
    at::set_num_threads(2);
    omp_set_num_threads(2);
    for (const int64_t samples : {int64_t{1}, batch}) {
      IncrementalDecoder halves(model, samples, 0, stx::kernels::DType::f16);
      IncrementalDecoder floats(model, samples, 0, stx::kernels::DType::f16, /*half_weights=*/false);
      EXPECT_EQ(halves.half_weight_matrices(), 4 * config.layers + 1);
      EXPECT_EQ(floats.half_weight_matrices(), 0);
      const at::Tensor rows = bytes.narrow(0, 0, samples);
      const at::Tensor got = decoded_logits(halves, rows);
      EXPECT_TRUE(at::equal(got, decoded_logits(floats, rows))) << samples << " sample(s)";
      EXPECT_LT((got - full_logits(model, rows)).abs().max().item<double>(),
                tolerance_for(stx::kernels::DType::f16));
    }
  }
  at::set_num_threads(threads_before);
  omp_set_num_threads(threads_before);
}

TEST(IncrementalDecoder, RewindReplaysTheSameLogits) {
  const ModelConfig config = stx::test::small_decoder_config(Pattern::strided);
  SparseTransformer model = random_model(config);
  at::manual_seed(4);
  const at::Tensor bytes = at::randint(0, 256, {2, 40}, at::kLong);
  IncrementalDecoder decoder(model, 2, 40);
  const at::Tensor first = decoded_logits(decoder, bytes);
  decoder.rewind(25);
  const at::Tensor again = decoded_logits(decoder, bytes, 25);
  EXPECT_TRUE(at::allclose(first.narrow(1, 25, 15), again.narrow(1, 25, 15), 0.0, 0.0));
  EXPECT_THROW(decoder.rewind(41), std::out_of_range);
  EXPECT_THROW(IncrementalDecoder(model, 0), std::invalid_argument);
  EXPECT_THROW(IncrementalDecoder(model, 1, config.context + 1), std::invalid_argument);
  std::vector<int32_t> bad = {257, 0};
  std::vector<float> logits(2 * 256);
  decoder.rewind(0);
  EXPECT_THROW(decoder.step(bad.data(), logits.data()), std::invalid_argument);
}

// A batch large enough to be split by samples over threads gives each sample the logits and probe it gets
// decoded alone, bit for bit: the split changes who computes a sample, not how.
TEST(IncrementalDecoder, ABatchSplitOverThreadsMatchesEachSampleAlone) {
  const int threads_before = at::get_num_threads();
  for (const stx::kernels::DType cache : {stx::kernels::DType::f32, stx::kernels::DType::f16}) {
    SCOPED_TRACE(stx::kernels::to_string(cache));
    const ModelConfig config = stx::test::small_decoder_config(Pattern::strided);
    SparseTransformer model = random_model(config);
    at::manual_seed(6);
    const int64_t batch = 19, length = 30;  // slices of 9 and 10 samples: a partial row tile in each
    const at::Tensor bytes = at::randint(0, 256, {batch, length}, at::kLong);
    // A split needs two threads, whatever this machine has. After LibTorch's first op, so that it keeps them.
    at::set_num_threads(2);
    omp_set_num_threads(2);
    IncrementalDecoder together(model, batch, 0, cache);
    together.set_probe(2, 1);
    const at::Tensor got = decoded_logits(together, bytes);
    std::vector<int64_t> positions, alone_positions;
    std::vector<float> weights, alone_weights;
    for (const int64_t b : {int64_t{0}, int64_t{8}, int64_t{9}, batch - 1}) {
      IncrementalDecoder alone(model, 1, 0, cache);
      alone.set_probe(2, 1);
      const at::Tensor want = decoded_logits(alone, bytes.narrow(0, b, 1));
      EXPECT_TRUE(at::equal(got.narrow(0, b, 1), want)) << "sample " << b;
      together.probe(b, positions, weights);
      alone.probe(0, alone_positions, alone_weights);
      EXPECT_EQ(positions, alone_positions) << "sample " << b;
      EXPECT_EQ(weights, alone_weights) << "sample " << b;
      EXPECT_FALSE(weights.empty());
    }
  }
  at::set_num_threads(threads_before);
  omp_set_num_threads(threads_before);
}

// A batch too small to split by samples runs each step in one parallel region, its threads sharing every
// kernel: column tiles of the products, (sample, head) pairs of the attention, which with 3 heads split
// inside a sample. Logits and probe must be bit for bit those of one thread, whatever the team's size.
TEST(IncrementalDecoder, AStepSharedByThreadsGivesTheBitsOfOneThread) {
  const int threads_before = at::get_num_threads();
  for (const Pattern pattern : {Pattern::strided, Pattern::fixed}) {
    for (const stx::kernels::DType cache : {stx::kernels::DType::f32, stx::kernels::DType::f16}) {
      const ModelConfig config = stx::test::small_decoder_config(pattern);
      SparseTransformer model = random_model(config);
      at::manual_seed(9);
      const at::Tensor bytes = at::randint(0, 256, {5, 45}, at::kLong);
      for (const int64_t batch : {int64_t{1}, int64_t{2}, int64_t{5}}) {
        const at::Tensor rows = bytes.narrow(0, 0, batch);
        std::vector<at::Tensor> logits;
        std::vector<std::vector<float>> probes;
        for (const int threads : {1, 2, 3}) {
          SCOPED_TRACE(std::string(stx::kernels::to_string(pattern)) + " " + stx::kernels::to_string(cache) +
                       ", batch " + std::to_string(batch) + ", " + std::to_string(threads) + " threads");
          at::set_num_threads(threads);
          omp_set_num_threads(threads);
          IncrementalDecoder decoder(model, batch, 0, cache);
          decoder.set_probe(1, 1);
          logits.push_back(decoded_logits(decoder, rows));
          std::vector<float> all;
          for (int64_t b = 0; b < batch; ++b) {
            std::vector<int64_t> positions;
            std::vector<float> weights;
            decoder.probe(b, positions, weights);
            EXPECT_EQ(positions, stx::kernels::attended_set(model->block_list[1]->patterns()[1], 44));
            all.insert(all.end(), weights.begin(), weights.end());
          }
          probes.push_back(all);
          EXPECT_TRUE(at::equal(logits.back(), logits.front()));
          EXPECT_EQ(probes.back(), probes.front());
        }
        EXPECT_LT((logits.front() - full_logits(model, rows)).abs().max().item<double>(),
                  tolerance_for(cache));
      }
    }
  }
  at::set_num_threads(threads_before);
  omp_set_num_threads(threads_before);
}

// Far into a long context (once the caches outgrow 8 MB) the threads of a shared step ask, while they wait
// at its barriers, for the strided columns the next step will read. Nothing computed may change and no
// thread may be left waiting: every thread count gives the same bits, in both cache types, for one sample
// and for a few.
TEST(IncrementalDecoder, LateStepsThatAskForTheNextColumnsGiveTheBitsOfOneThread) {
  const int threads_before = at::get_num_threads();
  ModelConfig config = stx::test::small_decoder_config(Pattern::strided);
  config.context = 20000;  // 1,152 bytes of float keys and values per position and sample: 22 MB at 19,000
  SparseTransformer model = random_model(config);
  for (const stx::kernels::DType cache : {stx::kernels::DType::f32, stx::kernels::DType::f16}) {
    for (const int64_t batch : {int64_t{1}, int64_t{3}}) {
      std::vector<std::vector<float>> logits;
      for (const int threads : {1, 2, 3}) {
        SCOPED_TRACE(std::string(stx::kernels::to_string(cache)) + ", batch " + std::to_string(batch) + ", " +
                     std::to_string(threads) + " threads");
        at::set_num_threads(threads);
        omp_set_num_threads(threads);
        IncrementalDecoder decoder(model, batch, 0, cache);
        skip_to_for_timing(decoder, 19000);
        std::vector<float> all;
        std::vector<float> step_logits(static_cast<size_t>(batch * 256));
        std::vector<int32_t> tokens(static_cast<size_t>(batch));
        for (int64_t s = 0; s < 6; ++s) {
          for (int64_t b = 0; b < batch; ++b)
            tokens[static_cast<size_t>(b)] = static_cast<int32_t>((s * 37 + b * 11) % 256);
          decoder.step(tokens.data(), step_logits.data());
          all.insert(all.end(), step_logits.begin(), step_logits.end());
        }
        EXPECT_EQ(decoder.position(), 19006);
        for (const float x : all) ASSERT_TRUE(std::isfinite(x));
        logits.push_back(all);
        EXPECT_EQ(logits.back(), logits.front());
      }
    }
  }
  at::set_num_threads(threads_before);
  omp_set_num_threads(threads_before);
}

// A prompt shared by every sample is read by sample 0 alone, in chunks of positions taken as the rows of
// each product, and its keys and values copied (every 2 positions of this capacity of 70, and before the
// samples' own steps): each sample then continues exactly as if it had stepped through the prompt itself,
// bit for bit, in every threading mode (3 samples share each kernel, 19 are split by samples) and in both
// cache types. The probe after the prompt is sample 0's last position for everyone, which is what each
// would have seen.
TEST(IncrementalDecoder, ACommonPrefixGivesEverySampleTheBitsOfItsOwnSteps) {
  const int threads_before = at::get_num_threads();
  at::set_num_threads(2);
  omp_set_num_threads(2);
  const ModelConfig configs[] = {stx::test::small_decoder_config(Pattern::strided),
                                 stx::test::small_decoder_config(Pattern::fixed), stx::test::audio_decoder_config()};
  for (const ModelConfig& config : configs) {
    for (const stx::kernels::DType cache : {stx::kernels::DType::f32, stx::kernels::DType::f16}) {
      for (const int64_t batch : {int64_t{3}, int64_t{19}}) {
        SCOPED_TRACE(std::string(stx::kernels::to_string(config.pattern)) + " " + stx::models::to_string(config.kind) +
                     " " + stx::kernels::to_string(cache) + ", batch " + std::to_string(batch));
        SparseTransformer model = random_model(config);
        at::manual_seed(8);
        const int64_t prompt = 23, length = 40;  // past the strided window of 7 and its columns
        at::Tensor bytes = at::randint(0, 256, {batch, length}, at::kLong);
        bytes.narrow(1, 0, prompt).copy_(bytes.narrow(0, 0, 1).narrow(1, 0, prompt).expand({batch, prompt}));
        const auto each_decoder = stx::models::make_decoder(model, batch, 0, cache, at::Device(at::kCPU));
        stx::models::TokenDecoder& each = *each_decoder;
        each.set_probe(2, 1);
        const at::Tensor want = decoded_logits(each, bytes);
        const auto shared_decoder = stx::models::make_decoder(model, batch, 0, cache, at::Device(at::kCPU));
        stx::models::TokenDecoder& shared = *shared_decoder;
        shared.set_probe(2, 1);
        std::vector<int32_t> inputs(static_cast<size_t>(prompt));
        for (int64_t i = 0; i < prompt; ++i) {
          inputs[i] = i == 0 ? 256 : static_cast<int32_t>(bytes[0][i - 1].item<int64_t>());
        }
        int64_t read = 0;
        for (const int64_t chunk : {1, 5, 10, 7}) {  // past the window of 7 within one chunk, and across two
          shared.step_common_prefix(inputs.data() + read, chunk);
          read += chunk;
        }
        std::vector<int64_t> positions, first_positions;
        std::vector<float> weights, first_weights;
        shared.probe(0, first_positions, first_weights);
        EXPECT_EQ(first_positions,
                  stx::kernels::attended_set(model->block_list[2]->patterns()[1], prompt - 1));
        shared.probe(batch - 1, positions, weights);
        EXPECT_EQ(positions, first_positions);
        EXPECT_EQ(weights, first_weights);
        EXPECT_EQ(shared.position(), prompt);
        const at::Tensor got = decoded_logits(shared, bytes, prompt);
        EXPECT_TRUE(
            at::equal(got.narrow(1, prompt, length - prompt), want.narrow(1, prompt, length - prompt)));
        for (int64_t b = 0; b < batch; ++b) {
          each.probe(b, positions, weights);
          shared.probe(b, first_positions, first_weights);
          EXPECT_EQ(weights, first_weights) << "sample " << b;
        }
        // Once the samples have stepped on their own they differ: a common prefix can no longer follow.
        EXPECT_THROW(shared.step_common_prefix(inputs.data(), 1), std::logic_error);
        const int32_t bad = 257;
        EXPECT_THROW(shared.step_common_prefix(&bad, 1), std::invalid_argument);
        EXPECT_THROW(shared.step_common_prefix(inputs.data(), 0), std::invalid_argument);
        // Rewound into the prefix, the samples are identical again up to there.
        shared.rewind(prompt - 5);
        shared.step_common_prefix(inputs.data() + prompt - 5, 5);
        EXPECT_THROW(shared.step_common_prefix(inputs.data(), config.context), std::out_of_range);
        const at::Tensor again = decoded_logits(shared, bytes, prompt);
        EXPECT_TRUE(
            at::equal(again.narrow(1, prompt, length - prompt), want.narrow(1, prompt, length - prompt)));
        // stx-bench times a prompt late in the context: a skip keeps identical samples identical.
        IncrementalDecoder timing(model, batch, 0, cache);
        skip_to_for_timing(timing, 30);
        timing.step_common_prefix(inputs.data(), 3);
        EXPECT_EQ(timing.position(), 33);
        std::vector<int32_t> own(static_cast<size_t>(batch), 7);
        std::vector<float> own_logits(static_cast<size_t>(batch * 256));
        timing.step(own.data(), own_logits.data());
        skip_to_for_timing(timing, 50);  // after the samples' own steps they differ, skip or not
        EXPECT_THROW(timing.step_common_prefix(inputs.data(), 1), std::logic_error);
      }
    }
  }
  at::set_num_threads(threads_before);
  omp_set_num_threads(threads_before);
}

// The probe's positions are exactly A(i) of the head's pattern, and its weights are the softmax of that
// head's scores, computed here from the model's own modules.
// Strided layers keep their cache in column order (DecodeParams::cache_columns); fixed ones in natural order.
TEST(IncrementalDecoder, ProbeGivesTheAttendedSetAndItsSoftmaxWeights) {
  for (const auto& [pattern, cache] : {std::pair{Pattern::fixed, stx::kernels::DType::f32},
                                       std::pair{Pattern::strided, stx::kernels::DType::f32},
                                       std::pair{Pattern::strided, stx::kernels::DType::f16}}) {
    SCOPED_TRACE(std::string(stx::kernels::to_string(pattern)) + " " + stx::kernels::to_string(cache));
    const double tolerance = cache == stx::kernels::DType::f16 ? 2e-3 : 1e-5;
    const ModelConfig config = stx::test::small_decoder_config(pattern);
    SparseTransformer model = random_model(config);
    at::manual_seed(5);
    const int64_t length = 50, layer = 1, head = 2, dh = config.head_dim();
    const at::Tensor bytes = at::randint(0, 256, {1, length}, at::kLong);
    at::Tensor q, k;
    {
      at::NoGradGuard no_grad;
      const at::Tensor inputs =
          at::cat({at::full({1, 1}, 256, at::kLong), bytes.narrow(1, 0, length - 1)}, 1);
      at::Tensor h = model->embed(inputs, 0);
      for (int64_t l = 0; l < layer; ++l) h = h + model->block_list[l]->branch(h);
      auto& block = model->block_list[layer];
      const at::Tensor qkv =
          block->qkv->forward(block->norm_attention->forward(h)).view({length, 3, config.heads, dh});
      q = qkv.select(1, 0).select(1, head);
      k = qkv.select(1, 1).select(1, head);
    }
    IncrementalDecoder decoder(model, 1, 0, cache);
    decoder.set_probe(static_cast<int>(layer), static_cast<int>(head));
    std::vector<int32_t> input(1);
    std::vector<float> logits(256);
    std::vector<int64_t> positions;
    std::vector<float> weights;
    const auto patterns = config.layer_patterns(static_cast<int>(layer));
    for (int64_t i = 0; i < length; ++i) {
      input[0] = i == 0 ? 256 : static_cast<int32_t>(bytes[0][i - 1].item<int64_t>());
      decoder.step(input.data(), logits.data());
      decoder.probe(0, positions, weights);
      ASSERT_EQ(positions, stx::kernels::attended_set(patterns[head], i)) << "position " << i;
      ASSERT_EQ(weights.size(), positions.size());
      if (positions.empty()) continue;
      const at::Tensor index = at::tensor(positions, at::kLong);
      const at::Tensor want =
          at::softmax(k.index_select(0, index).matmul(q[i]) / std::sqrt(static_cast<double>(dh)), 0);
      for (size_t j = 0; j < positions.size(); ++j) {
        ASSERT_NEAR(weights[j], want[static_cast<int64_t>(j)].item<float>(), tolerance) << "position " << i;
      }
      double total = 0;
      for (float w : weights) total += w;
      ASSERT_NEAR(total, 1.0, 1e-4) << "position " << i << ": the weights the kernel used sum to 1";
    }
    decoder.set_probe(-1, 0);
    decoder.step(input.data(), logits.data());
    decoder.probe(0, positions, weights);
    EXPECT_TRUE(positions.empty());  // off: nothing recorded
    EXPECT_THROW(decoder.set_probe(3, 0), std::out_of_range);
  }
}

}  // namespace
