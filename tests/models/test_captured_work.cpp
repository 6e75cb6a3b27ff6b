// CapturedWork (models/captured_work.h): a block of decode steps captured as a CUDA graph replays as the
// steps themselves (on a CUDA device: CudaGraph.*, which skip without one), and where no graph can be made
// it says why and runs nothing (here and in CI).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "decoder_test_support.h"
#include "stx/kernels/attention.h"
#include "stx/models/captured_work.h"
#include "stx/models/torch_decoder.h"

namespace {

using stx::kernels::DType;
using stx::models::CapturedWork;
using stx::models::TorchDecoder;

TEST(CapturedWork, OnTheCpuNothingIsCapturedAndTheReasonIsGiven) {
  CapturedWork graph;
  bool ran = false;
  EXPECT_FALSE(graph.capture(at::Device(at::kCPU), [&] { ran = true; }));
  EXPECT_FALSE(ran);
  EXPECT_FALSE(graph.captured());
  EXPECT_NE(graph.failure().find("CUDA device"), std::string::npos) << graph.failure();
  EXPECT_EQ(graph.nodes(), -1);
  EXPECT_THROW(graph.replay(), std::logic_error);
}

TEST(CapturedWork, TheEnvironmentCanTurnGraphsOff) {
  ::setenv("STX_CUDA_GRAPHS", "0", 1);
  CapturedWork graph;
  EXPECT_FALSE(graph.capture(at::Device(at::kCUDA, 0), [] {}));
  ::unsetenv("STX_CUDA_GRAPHS");
  EXPECT_NE(graph.failure().find("STX_CUDA_GRAPHS=0"), std::string::npos) << graph.failure();
}

// k greedy steps (each step's input the previous step's argmax) from `first`: [k, batch, 256] logits.
at::Tensor greedy_steps(TorchDecoder& decoder, const at::Tensor& first, int64_t k) {
  std::vector<at::Tensor> logits;
  at::Tensor tokens = first;
  for (int64_t s = 0; s < k; ++s) {
    logits.push_back(decoder.step_on_device(tokens));
    tokens = logits.back().argmax(1);
  }
  return at::stack(logits);
}

// A graph of k device-resident steps, captured after one eager block and replayed for the next blocks with
// new first tokens copied into its input, gives the logits of stepping eagerly, at every block's positions.
void expect_replays_equal_eager_steps(DType cache) {
  const at::Device cuda(at::kCUDA, 0);
  const stx::models::ModelConfig config = stx::test::small_decoder_config(stx::kernels::Pattern::strided);
  stx::models::SparseTransformer model = stx::test::random_model(config);
  constexpr int64_t kBatch = 2, kSteps = 6, kBlocks = 4;
  ASSERT_LE(kSteps * kBlocks, config.context);
  TorchDecoder eager(model, kBatch, 0, cache, cuda), graphed(model, kBatch, 0, cache, cuda);
  const at::Tensor start = at::full({kBatch}, 256, at::TensorOptions().dtype(at::kLong).device(cuda));
  const at::Tensor want = greedy_steps(eager, start, kSteps * kBlocks).to(at::kCPU);

  at::Tensor tokens = greedy_steps(graphed, start, kSteps).select(0, kSteps - 1).argmax(1);
  const at::Tensor first = at::empty_like(tokens);
  at::Tensor out;
  const int64_t position = graphed.position();
  graphed.prepare_device_steps();
  CapturedWork graph;
  const bool captured = graph.capture(cuda, [&] { out = greedy_steps(graphed, first, kSteps); });
  graphed.rewind(position);
  ASSERT_TRUE(captured) << graph.failure();
  EXPECT_GT(graph.nodes(), kSteps) << "a step is several launches";
  std::printf("a graph of %d steps: %lld nodes\n", static_cast<int>(kSteps),
              static_cast<long long>(graph.nodes()));
  for (int64_t block = 1; block < kBlocks; ++block) {
    first.copy_(tokens);
    graphed.prepare_device_steps();
    graph.replay();
    graphed.replayed(kSteps);
    EXPECT_EQ(graphed.position(), (block + 1) * kSteps);
    const at::Tensor got = out.to(at::kCPU);
    const at::Tensor expected = want.narrow(0, block * kSteps, kSteps);
    EXPECT_TRUE(at::allclose(got, expected, 1e-4, 1e-4))
        << "block " << block << ": max difference " << (got - expected).abs().max().item<float>();
    tokens = out.select(0, kSteps - 1).argmax(1);
  }
  EXPECT_EQ(graphed.device_position().to(at::kCPU).item<int64_t>(), kBlocks * kSteps);
}

TEST(CudaGraph, ReplaysOfDecodeStepsEqualTheStepsThemselves) {
  if (!torch::cuda::is_available() || !stx::kernels::cuda_device_available()) {
    GTEST_SKIP() << "no CUDA device: the graph capture was compiled but not run";
  }
  expect_replays_equal_eager_steps(DType::f32);
  expect_replays_equal_eager_steps(DType::f16);
}

}  // namespace
