// export_model: a training run's checkpoint turned into a model folder to share or bundle.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <atomic>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "engine_test_support.h"
#include "stx/engine/checkpoint.h"
#include "stx/engine/error.h"
#include "stx/engine/io/safetensors.h"
#include "stx/engine/trainer.h"

namespace {

using namespace stx::engine;
namespace fs = std::filesystem;

using stx::test::error_of;

// A checkpoint folder as a training run leaves it, with its record in train_state.json.
fs::path save_trained(const fs::path& folder, uint64_t seed) {
  at::manual_seed(seed);
  stx::models::SparseTransformer model(stx::test::tiny_text_config());
  TrainState state;
  state.step = 42;
  state.train_seconds = 12.5;
  state.last_bits_per_byte = 2.25;
  state.best_bits_per_byte = 2.0;
  state.best_step = 40;
  fs::create_directories(folder);
  write_checkpoint_files(folder, model->config(), {{"steps", 42}, {"data", "/corpus"}}, {}, model, &state, nullptr);
  return folder;
}

TEST(ExportModel, WritesHalfWeightsAndTheTrainingRecordWithoutOptimiserState) {
  stx::test::TempFolder tmp;
  save_trained(tmp / "run-checkpoint", 3);
  export_model(tmp / "run-checkpoint", tmp / "shared" / "model", /*fp16_weights=*/true, /*replace=*/false);

  const fs::path out = tmp / "shared" / "model";
  EXPECT_TRUE(fs::exists(out / "config.json"));
  EXPECT_TRUE(fs::exists(out / "train_state.json"));
  EXPECT_FALSE(fs::exists(out / "train_state.safetensors"));  // nothing to resume from, and half the size
  const SafetensorsFile weights = SafetensorsFile::open(out / "model.safetensors");
  for (const TensorInfo& t : weights.tensors()) EXPECT_EQ(t.dtype, DType::F16) << t.name;

  const ModelBundle source = load_checkpoint(tmp / "run-checkpoint");
  const ModelBundle exported = load_checkpoint(out);
  ASSERT_TRUE(exported.state.has_value());
  EXPECT_EQ(exported.state->step, 42);
  EXPECT_DOUBLE_EQ(exported.state->train_seconds, 12.5);
  EXPECT_DOUBLE_EQ(exported.state->last_bits_per_byte, 2.25);
  EXPECT_EQ(exported.training["data"], "/corpus");
  const auto loaded = exported.model->named_parameters();
  for (const auto& item : source.model->named_parameters()) {
    EXPECT_TRUE(at::equal(loaded[item.key()], item.value().to(at::kHalf).to(at::kFloat))) << item.key();
  }
}

// A write that fails half-way (here a file-size limit, as a full disk would): the error names the folder
// asked for, never the hidden staging folder, and nothing is left behind.
TEST(ExportModel, AFailedWriteNamesTheDestination) {
  stx::test::TempFolder tmp;
  save_trained(tmp / "run-checkpoint", 3);
  const fs::path out = tmp / "shared" / "model";
  const fs::path message_file = tmp / "message.txt";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the limit and its signal in a child of their own, on one thread (no pool after fork)
    at::set_num_threads(1);
    signal(SIGXFSZ, SIG_IGN);
    const rlimit small{4096, 4096};
    setrlimit(RLIMIT_FSIZE, &small);
    std::string message = "exported";
    try {
      export_model(tmp / "run-checkpoint", out, /*fp16_weights=*/false, /*replace=*/false);
    } catch (const Error& e) {
      message = e.what();
    }
    const rlimit any{RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_FSIZE, &any);
    std::ofstream(message_file) << message;
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::ifstream in(message_file);
  const std::string message((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(message.find("cannot export to " + out.string() + " (nothing was written there): "), std::string::npos)
      << message;
  EXPECT_EQ(message.find(".tmp-"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(out));
  for (const auto& entry : fs::directory_iterator(tmp / "shared")) ADD_FAILURE() << "left behind: " << entry.path();
}

// An export keeps the source's sampling defaults unless given new ones; bad new ones write nothing.
TEST(ExportModel, KeepsOrSetsTheSamplingDefaults) {
  stx::test::TempFolder tmp;
  save_trained(tmp / "a", 3);
  SamplingSettings chosen;
  chosen.temperature = 1.05;
  export_model(tmp / "a", tmp / "tuned", false, false, chosen);
  EXPECT_EQ(load_checkpoint(tmp / "tuned").sampling.temperature, 1.05);
  export_model(tmp / "tuned", tmp / "again", false, false);
  EXPECT_EQ(load_checkpoint(tmp / "again").sampling.temperature, 1.05);
  chosen.min_p = 1.5;
  EXPECT_NE(error_of([&] { export_model(tmp / "a", tmp / "bad", false, false, chosen); }).find("min-p"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(tmp / "bad"));
}

TEST(ExportModel, AnExistingFolderIsKeptUnlessReplacingAModel) {
  stx::test::TempFolder tmp;
  save_trained(tmp / "a", 3);
  save_trained(tmp / "b", 4);
  export_model(tmp / "a", tmp / "out", false, false);
  const std::string hash_a = load_checkpoint(tmp / "out").weights_hash;

  EXPECT_NE(error_of([&] { export_model(tmp / "b", tmp / "out", false, false); }).find("already exists"),
            std::string::npos);
  EXPECT_EQ(load_checkpoint(tmp / "out").weights_hash, hash_a);

  export_model(tmp / "b", tmp / "out", false, /*replace=*/true);
  EXPECT_EQ(load_checkpoint(tmp / "out").weights_hash, load_checkpoint(tmp / "b").weights_hash);
  for (const auto& entry : fs::directory_iterator(tmp.path())) {  // no staging or moved-aside folder is left
    EXPECT_NE(entry.path().filename().string().front(), '.') << entry.path();
  }

  // A folder that is not a model is never moved aside, even when replacing.
  stx::test::write_text(tmp / "notes" / "todo.txt", "keep me");
  EXPECT_NE(error_of([&] { export_model(tmp / "a", tmp / "notes", false, true); }).find("not a model folder"),
            std::string::npos);
  EXPECT_TRUE(fs::exists(tmp / "notes" / "todo.txt"));
  EXPECT_NE(error_of([&] { export_model(tmp / "absent", tmp / "c", false, false); }).find("absent"),
            std::string::npos);
}

// --force must never cost a run its optimiser state: exporting a folder onto itself, or over a training
// checkpoint, is refused and leaves the folder as it was.
TEST(ExportModel, NeverReplacesItsSourceOrATrainingCheckpoint) {
  stx::test::TempFolder tmp;
  save_trained(tmp / "a", 3);
  const std::string hash_a = load_checkpoint(tmp / "a").weights_hash;
  EXPECT_NE(error_of([&] { export_model(tmp / "a", tmp / "a", false, true); }).find("onto itself"), std::string::npos);
  EXPECT_EQ(load_checkpoint(tmp / "a").weights_hash, hash_a);

  save_trained(tmp / "checkpoint", 4);
  stx::test::write_text(tmp / "checkpoint" / "train_state.safetensors", "optimiser state");
  const std::string message = error_of([&] { export_model(tmp / "a", tmp / "checkpoint", false, true); });
  EXPECT_NE(message.find("training checkpoint"), std::string::npos) << message;
  EXPECT_TRUE(fs::exists(tmp / "checkpoint" / "train_state.safetensors"));
  EXPECT_NE(load_checkpoint(tmp / "checkpoint").weights_hash, hash_a);
}

TEST(ExportModel, AnExportedModelIsFineTunedNotResumed) {
  stx::test::TempFolder tmp;
  save_trained(tmp / "checkpoint", 5);
  export_model(tmp / "checkpoint", tmp / "shared", true, false);
  TrainOptions options = stx::test::tiny_train_options(stx::test::make_text_corpus(tmp / "data"), tmp / "run");
  options.resume = tmp / "shared";
  std::atomic<bool> cancel{false};
  const JobEnded end = train(options, {}, cancel);
  EXPECT_EQ(end.outcome, JobEnded::Outcome::failed);
  EXPECT_NE(end.message.find("fine-tune it"), std::string::npos) << end.message;
  EXPECT_EQ(end.settings, std::vector<std::string>{"init_from"});
  EXPECT_FALSE(fs::exists(tmp / "run" / "latest.json"));
}

}  // namespace
