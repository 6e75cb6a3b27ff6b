// Automatic's device for generation: the faster candidate by measurement, the CPU without a GPU, and the
// reason carried to the sampler's events and result.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "stx/engine/device.h"
#include "stx/engine/generation_device.h"
#include "stx/engine/sampler.h"
#include "tiny_model.h"

namespace {

using stx::engine::DeviceChoice;
using stx::engine::DeviceKind;

// A candidate that takes `per_step` a step and records the step counts it was asked for.
stx::engine::ProbeCandidate sleeper(DeviceKind kind, std::chrono::microseconds per_step,
                                    std::vector<int>& calls) {
  return {kind, [per_step, &calls](int steps) {
            calls.push_back(steps);
            std::this_thread::sleep_for(per_step * steps);
            return steps;
          }};
}

TEST(ChooseFaster, KeepsTheCandidateWithMoreBytesPerSecondAndNamesBothRates) {
  std::vector<int> slow_calls, fast_calls;
  // The slower one first, so that the order cannot be what decides.
  const std::vector<stx::engine::ProbeCandidate> candidates{
      sleeper(DeviceKind::cpu, std::chrono::microseconds(2000), slow_calls),
      sleeper(DeviceKind::cuda, std::chrono::microseconds(200), fast_calls)};
  const stx::engine::GenerationDevice chosen = stx::engine::choose_faster(candidates, 2, 10, 4);
  EXPECT_EQ(chosen.kind, DeviceKind::cuda);
  EXPECT_EQ(slow_calls, (std::vector<int>{2, 10}));  // the warm-up, then the timed steps
  EXPECT_EQ(fast_calls, (std::vector<int>{2, 10}));
  EXPECT_EQ(chosen.reason.rfind("automatic, measured ", 0), 0u) << chosen.reason;
  EXPECT_NE(chosen.reason.find("bytes/s (CPU vs CUDA, 4 samples)"), std::string::npos) << chosen.reason;

  const std::vector<stx::engine::ProbeCandidate> swapped{
      sleeper(DeviceKind::cpu, std::chrono::microseconds(200), slow_calls),
      sleeper(DeviceKind::cuda, std::chrono::microseconds(2000), fast_calls)};
  EXPECT_EQ(stx::engine::choose_faster(swapped, 1, 10, 1).kind, DeviceKind::cpu);
}

TEST(MeasureGenerationDevices, TimesTheModelsDecoderHalfwayThroughTheRequest) {
  // The probe's own path on CPU decoders (a GPU machine runs it against CUDA): the decoders are built for the
  // request, moved halfway through it, stepped and timed.
  stx::models::SparseTransformer audio(stx::test::tiny_model_config(stx::models::DataKind::audio));
  stx::engine::SampleRequest request;
  request.count = 2;
  request.length = 200;
  request.prompt.assign(10, 128);
  const stx::engine::GenerationDevice measured =
      stx::engine::measure_generation_devices(audio, request, {DeviceKind::cpu, DeviceKind::cpu});
  EXPECT_EQ(measured.kind, DeviceKind::cpu);
  EXPECT_EQ(measured.reason.rfind("automatic, measured ", 0), 0u) << measured.reason;
  EXPECT_NE(measured.reason.find("bytes/s (CPU vs CPU, 2 samples)"), std::string::npos) << measured.reason;
  // A request shorter than the probe, on a model whose context is too: it times what fits.
  stx::models::SparseTransformer text(stx::test::tiny_model_config(stx::models::DataKind::text));
  request.length = 16;
  request.prompt.clear();
  EXPECT_EQ(stx::engine::measure_generation_devices(text, request, {DeviceKind::cpu}).kind, DeviceKind::cpu);
}

TEST(ChooseGenerationDevice, ANamedDeviceNeedsNoReasonAndAutomaticWithoutAGpuSaysWhy) {
  stx::models::SparseTransformer model(stx::test::tiny_model_config(stx::models::DataKind::text));
  stx::engine::SampleRequest request;
  request.device = DeviceChoice::cpu;
  const stx::engine::GenerationDevice named = stx::engine::choose_generation_device(model, request);
  EXPECT_EQ(named.kind, DeviceKind::cpu);
  EXPECT_TRUE(named.reason.empty());
  if (stx::engine::cuda_available())
    GTEST_SKIP() << "a CUDA device is present: Automatic measures it (gpu-check)";
  request.device = DeviceChoice::automatic;
  const stx::engine::GenerationDevice automatic = stx::engine::choose_generation_device(model, request);
  EXPECT_EQ(automatic.kind, DeviceKind::cpu);
  EXPECT_EQ(automatic.reason, "automatic, as " + stx::engine::cuda_unavailable_reason());
}

TEST(ChooseGenerationDevice, TheSamplerSaysWhereAndWhyInItsEventAndResult) {
  stx::models::SparseTransformer model(stx::test::tiny_model_config(stx::models::DataKind::text));
  stx::engine::SampleRequest request;
  request.length = 8;
  request.seed = 3;
  std::string started_device, started_reason;
  const stx::engine::SampleResult result = stx::engine::sample(
      model, request,
      [&](const stx::engine::Event& e) {
        if (const auto* s = std::get_if<stx::engine::SampleStarted>(&e)) {
          started_device = s->device;
          started_reason = s->device_reason;
        }
      },
      nullptr);
  EXPECT_FALSE(result.device_reason.empty());
  EXPECT_EQ(started_reason, result.device_reason);
  EXPECT_EQ(started_device, result.device);
  EXPECT_EQ(result.device_reason.rfind("automatic", 0), 0u) << result.device_reason;
}

}  // namespace
