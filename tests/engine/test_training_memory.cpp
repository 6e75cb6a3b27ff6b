// A training step's memory is known before it runs: the estimate follows the peak resident memory measured
// on real shapes, and a run that cannot fit is refused with its size before anything is written, instead of
// being killed by the OOM killer part-way (as `stx train --init-from audio` was at the default batch of 8).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "engine_test_support.h"
#include "stx/engine/error.h"
#include "stx/engine/trainer.h"
#include "stx/engine/training_estimate.h"
#include "stx/engine/training_memory.h"
#include "stx/models/model_config.h"

namespace {

using namespace stx::engine;
namespace fs = std::filesystem;

constexpr double kGB = 1e9;

// The bundled audio model's shape: 4 layers, d_model 192, d_ff 768, 65,536 samples.
stx::models::ModelConfig audio_shape() {
  stx::models::ModelConfig c = stx::models::preset("audio-long");
  c.recompute = false;
  return c;
}

TEST(TrainingMemory, FollowsThePeakMeasuredOnRealShapes) {
  // Measured peak resident memory of `stx train` on the bundled audio recipe, batch 1: about 5.5 GB.
  const double audio = static_cast<double>(training_step_bytes(audio_shape(), 1)) / kGB;
  EXPECT_GT(audio, 4.5);
  EXPECT_LT(audio, 6.5);
  // stx-bench train --context 65536 --pattern strided --recompute (d_model 256, d_ff 1024): 2.3 GB.
  stx::models::ModelConfig recomputed = stx::models::preset("text-small");
  recomputed.context = 65536;
  recomputed.stride = 128;
  recomputed.pattern = stx::kernels::Pattern::strided;
  recomputed.recompute = true;
  const double with_recompute = static_cast<double>(training_step_bytes(recomputed, 1)) / kGB;
  EXPECT_GT(with_recompute, 1.9);
  EXPECT_LT(with_recompute, 3.0);
  recomputed.recompute = false;
  EXPECT_GT(static_cast<double>(training_step_bytes(recomputed, 1)) / kGB, 2 * with_recompute);
}

TEST(TrainingMemory, GrowsWithTheSequencesOfAPass) {
  const uint64_t one = training_step_bytes(audio_shape(), 1), eight = training_step_bytes(audio_shape(), 8);
  EXPECT_GT(static_cast<double>(eight), 7.9 * static_cast<double>(one));
  EXPECT_LE(eight, 8 * one);
}

TEST(TrainingMemory, AStepThatCannotFitIsRefusedWithItsSizeAndTheFix) {
  ASSERT_GT(available_memory_bytes(), 0u) << "/proc/meminfo has no MemAvailable";
  const std::string message = stx::test::error_of([] { check_training_memory(audio_shape(), 100000); });
  EXPECT_NE(message.find("needs about"), std::string::npos) << message;
  EXPECT_NE(message.find("available"), std::string::npos) << message;
  EXPECT_NE(message.find("lower the batch"), std::string::npos) << message;
  EXPECT_NE(message.find("100000 sequences of 65536 bytes"), std::string::npos) << message;
  EXPECT_EQ(stx::test::error_of([] { check_training_memory(stx::test::tiny_text_config(), 1); }), "");
}

// At one sequence per pass the batch cannot help: the advice names only what can.
TEST(TrainingMemory, AtOneSequenceAPassTheAdviceLeavesOutTheBatch) {
  stx::models::ModelConfig huge = audio_shape();
  huge.context = 1 << 22;
  huge.stride = 2048;
  huge.d_model = 4096;
  huge.d_ff = 4 * 4096;
  const std::string message = stx::test::error_of([&] { check_training_memory(huge, 1); });
  ASSERT_NE(message.find("needs about"), std::string::npos) << message;
  EXPECT_EQ(message.find("lower the batch"), std::string::npos) << message;
  EXPECT_NE(message.find("\"recompute\": true"), std::string::npos) << message;
  EXPECT_NE(message.find("shorter context"), std::string::npos) << message;
  EXPECT_NE(message.find("smaller model"), std::string::npos) << message;
}

TEST(TrainingMemory, TheTrainerRefusesBeforeWritingAnything) {
  stx::test::TempFolder tmp;
  TrainOptions o = stx::test::tiny_train_options(stx::test::make_text_corpus(tmp / "data"), tmp / "run");
  o.model.context = 1 << 20;
  o.model.stride = 1024;
  o.batch = 4096;  // terabytes of activations
  std::atomic<bool> cancel{false};
  const JobEnded end = train(o, {}, cancel);
  EXPECT_EQ(end.outcome, JobEnded::Outcome::failed);
  EXPECT_NE(end.message.find("needs about"), std::string::npos) << end.message;
  EXPECT_FALSE(fs::exists(tmp / "run" / "latest.json"));
  EXPECT_FALSE(fs::exists(tmp / "run" / "checkpoints"));

  // The wizard's estimate runs real steps, so it checks first too.
  const std::string estimate = stx::test::error_of([&] { estimate_training(o, 1, nullptr); });
  EXPECT_NE(estimate.find("needs about"), std::string::npos) << estimate;
}

}  // namespace
