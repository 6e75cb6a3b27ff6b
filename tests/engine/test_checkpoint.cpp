// Checkpoint folders: round trip, and every way a checkpoint on disk can disagree with itself.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "engine_test_support.h"
#include "stx/engine/io/atomic_file.h"
#include "stx/engine/checkpoint.h"
#include "stx/engine/error.h"
#include "stx/engine/io/safetensors.h"

namespace {

using namespace stx::engine;
namespace fs = std::filesystem;

fs::path save_tiny(const fs::path& folder, bool fp16 = false) {
  at::manual_seed(1);
  stx::models::SparseTransformer model(stx::test::tiny_text_config());
  fs::create_directories(folder);
  write_checkpoint_files(folder, model->config(), {{"steps", 10}}, {}, model, nullptr, nullptr, fp16);
  return folder;
}

void expect_error(const fs::path& folder, const std::string& needle) {
  try {
    load_checkpoint(folder);
    ADD_FAILURE() << "loaded a bad checkpoint; expected an error mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// Rewrites model.safetensors with `edit` applied to its tensors.
void rewrite_weights(const fs::path& folder, const std::function<void(std::vector<TensorWrite>&)>& edit) {
  const SafetensorsFile file = SafetensorsFile::open(folder / "model.safetensors");
  std::vector<TensorWrite> tensors;
  std::vector<std::vector<uint8_t>> copies;
  copies.reserve(file.tensors().size());
  for (const TensorInfo& t : file.tensors()) {
    copies.emplace_back(file.data(t), file.data(t) + t.nbytes());
    tensors.push_back(TensorWrite{t.name, t.dtype, t.shape, copies.back().data(), t.nbytes()});
  }
  edit(tensors);
  write_safetensors(folder / "model.safetensors", tensors);
}

TEST(Checkpoint, RoundTripGivesTheSameModel) {
  stx::test::TempFolder tmp;
  save_tiny(tmp / "m");
  at::manual_seed(1);
  stx::models::SparseTransformer original(stx::test::tiny_text_config());
  ModelBundle loaded = load_checkpoint(tmp / "m");
  EXPECT_EQ(stx::models::to_json(loaded.config), stx::models::to_json(original->config()));
  EXPECT_EQ(loaded.training["steps"], 10);
  EXPECT_FALSE(loaded.state.has_value());
  EXPECT_EQ(loaded.weights_hash.size(), 16u);
  const at::Tensor bytes = at::randint(0, 256, {2, 50}, at::kLong);
  at::NoGradGuard no_grad;
  EXPECT_TRUE(at::equal(loaded.model->forward(bytes), original->forward(bytes)));
}

TEST(Checkpoint, Fp16WeightsLoadWithinHalfPrecision) {
  stx::test::TempFolder tmp;
  save_tiny(tmp / "m", /*fp16=*/true);
  at::manual_seed(1);
  stx::models::SparseTransformer original(stx::test::tiny_text_config());
  const ModelBundle loaded = load_checkpoint(tmp / "m");
  const auto a = loaded.model->named_parameters();
  for (const auto& item : original->named_parameters()) {
    EXPECT_TRUE(at::allclose(a[item.key()], item.value(), 1e-3, 1e-4)) << item.key();
  }
}

TEST(Checkpoint, AConfigThatDisagreesWithTheTensorsIsRefused) {
  stx::test::TempFolder tmp;
  const fs::path folder = save_tiny(tmp / "m");
  nlohmann::json config = nlohmann::json::parse(std::ifstream(folder / "config.json"));
  config["d_ff"] = 96;
  write_file_atomic(folder / "config.json", config.dump());
  expect_error(folder, "shape");
}

TEST(Checkpoint, AMissingTensorIsNamed) {
  stx::test::TempFolder tmp;
  const fs::path folder = save_tiny(tmp / "m");
  rewrite_weights(folder, [](std::vector<TensorWrite>& t) { t.pop_back(); });
  expect_error(folder, "missing");
}

TEST(Checkpoint, AnExtraTensorIsRefused) {
  stx::test::TempFolder tmp;
  const fs::path folder = save_tiny(tmp / "m");
  static const float extra[2] = {1, 2};
  rewrite_weights(folder, [](std::vector<TensorWrite>& t) {
    t.push_back(TensorWrite{"surprise.weight", DType::F32, {2}, extra, sizeof extra});
  });
  expect_error(folder, "surprise.weight");
}

TEST(Checkpoint, NaNWeightsAreRefused) {
  stx::test::TempFolder tmp;
  const fs::path folder = save_tiny(tmp / "m");
  rewrite_weights(folder, [](std::vector<TensorWrite>& t) {
    float* values = static_cast<float*>(const_cast<void*>(t.front().data));
    values[3] = std::nanf("");
  });
  expect_error(folder, "NaN");
}

TEST(Checkpoint, AnIntegerWeightTensorIsRefused) {
  stx::test::TempFolder tmp;
  const fs::path folder = save_tiny(tmp / "m");
  rewrite_weights(folder, [](std::vector<TensorWrite>& t) { t.front().dtype = DType::I32; });
  expect_error(folder, "dtype");
}

TEST(Checkpoint, TruncatedWeightsAndBrokenJsonNameTheFile) {
  stx::test::TempFolder tmp;
  const fs::path folder = save_tiny(tmp / "m");
  fs::resize_file(folder / "model.safetensors", fs::file_size(folder / "model.safetensors") - 10);
  expect_error(folder, "model.safetensors");
  const fs::path other = save_tiny(tmp / "n");
  write_file_atomic(other / "config.json", "{\"name\": ");
  expect_error(other, "config.json");
}

// A FIFO where the weights belong would block a reader that opened it for ever: every reader refuses it
// from the opened descriptor, before reading.
TEST(Checkpoint, AFifoAsTheWeightsIsRefusedNotRead) {
  stx::test::TempFolder tmp;
  const fs::path folder = save_tiny(tmp / "m");
  fs::remove(folder / "model.safetensors");
  ASSERT_EQ(::mkfifo((folder / "model.safetensors").c_str(), 0600), 0);
  expect_error(folder, (folder / "model.safetensors").string() + ": not a regular file");
  try {
    weights_hash_of(folder);
    ADD_FAILURE() << "hashed a FIFO";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.safetensors: not a regular file"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, ResolveFindsModelAndRunFoldersAndExplainsOtherwise) {
  stx::test::TempFolder tmp;
  save_tiny(tmp / "m");
  EXPECT_EQ(resolve_checkpoint(tmp / "m"), tmp / "m");
  fs::create_directories(tmp / "nothing");
  EXPECT_THROW(resolve_checkpoint(tmp / "nothing"), Error);
  EXPECT_THROW(resolve_checkpoint(tmp / "absent"), Error);
  // latest.json may only point inside its own run.
  fs::create_directories(tmp / "run");
  write_file_atomic(tmp / "run" / "latest.json", R"({"latest": "../../etc"})");
  EXPECT_THROW(resolve_checkpoint(tmp / "run"), Error);
}

// A field of the wrong kind is named with what it held, not reported by a JSON library code or truncated.
TEST(Checkpoint, BadFieldsAreNamedNotConverted) {
  stx::test::TempFolder tmp;
  const fs::path folder = save_tiny(tmp / "m");
  const auto config = [&] {
    const std::vector<uint8_t> bytes = read_file(folder / "config.json", 1 << 20);
    return nlohmann::json::parse(bytes.begin(), bytes.end());
  };
  const nlohmann::json good = config();
  nlohmann::json edited = good;
  edited["d_ff"] = 1.5;  // nlohmann would turn it into 1
  write_file_atomic(folder / "config.json", edited.dump());
  expect_error(folder, "d_ff must be a whole number, got 1.5");
  edited = good;
  edited["format"] = "stx-checkpoint-99";
  write_file_atomic(folder / "config.json", edited.dump());
  expect_error(folder, "format \"stx-checkpoint-99\" is not one this stx reads");
  write_file_atomic(folder / "config.json", good.dump());

  const nlohmann::json state = {{"step", "x"},         {"samples_drawn", 0},          {"seed", 1},
                                {"best_bits_per_byte", nullptr}, {"best_step", 0}, {"last_bits_per_byte", nullptr},
                                {"train_seconds", 1.0}};
  write_file_atomic(folder / "train_state.json", state.dump());
  expect_error(folder, "'step' must be a whole number, got \"x\"");
  nlohmann::json huge = state;
  huge["step"] = 1e30;
  write_file_atomic(folder / "train_state.json", huge.dump());
  expect_error(folder, "'step' must be a whole number");
  nlohmann::json no_seed = state;
  no_seed["step"] = 3;
  no_seed.erase("seed");
  write_file_atomic(folder / "train_state.json", no_seed.dump());
  expect_error(folder, "'seed' is missing");
  no_seed["seed"] = 1;
  write_file_atomic(folder / "train_state.json", no_seed.dump());
  EXPECT_EQ(load_checkpoint(folder).state->step, 3);

  // latest.json must name its checkpoint as a string: anything else is said, not taken for "no run".
  fs::create_directories(tmp / "run");
  write_file_atomic(tmp / "run" / "latest.json", R"({"latest": 5})");
  try {
    resolve_checkpoint(tmp / "run");
    ADD_FAILURE() << "a latest.json naming no checkpoint was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'latest' must name a checkpoint"), std::string::npos) << e.what();
  }
}

// A model's own sampling defaults travel in config.json ("sampling"), only the fields that differ from the
// plain defaults, and come back as they were; a model without them samples at the plain defaults.
TEST(Checkpoint, SamplingDefaultsRoundTripAndOnlyTheChangedFieldsAreWritten) {
  stx::test::TempFolder tmp;
  EXPECT_EQ(load_checkpoint(save_tiny(tmp / "plain")).sampling.temperature, 1.0);
  at::manual_seed(1);
  stx::models::SparseTransformer model(stx::test::tiny_text_config());
  fs::create_directories(tmp / "m");
  SamplingSettings chosen;
  chosen.temperature = 1.05;
  chosen.min_p = 0.02;
  write_checkpoint_files(tmp / "m", model->config(), {}, chosen, model, nullptr, nullptr);
  const std::vector<uint8_t> bytes = read_file(tmp / "m" / "config.json", 1 << 20);
  const nlohmann::json written = nlohmann::json::parse(bytes.begin(), bytes.end());
  EXPECT_EQ(written["sampling"], (nlohmann::json{{"temperature", 1.05}, {"min_p", 0.02}}));
  const ModelBundle loaded = load_checkpoint(tmp / "m");
  EXPECT_EQ(loaded.sampling.temperature, 1.05);
  EXPECT_EQ(loaded.sampling.min_p, 0.02);
  EXPECT_EQ(loaded.sampling.top_k, 0);
  EXPECT_EQ(loaded.sampling.top_p, 1.0);
  EXPECT_EQ(read_checkpoint_info(tmp / "m").sampling.temperature, 1.05);
}

// config.json is untrusted: a sampling block of the wrong shape, type or range is refused by name, with
// the file, before any weights are read.
TEST(Checkpoint, BadSamplingDefaultsAreNamedWithTheFile) {
  stx::test::TempFolder tmp;
  const fs::path folder = save_tiny(tmp / "m");
  const std::vector<uint8_t> bytes = read_file(folder / "config.json", 1 << 20);
  const nlohmann::json good = nlohmann::json::parse(bytes.begin(), bytes.end());
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {"warm", "sampling must be an object"},
      {{{"temperature", "hot"}}, "sampling.temperature must be a number, got \"hot\""},
      {{{"temperature", -1}}, "temperature must be in [0, 100]"},
      {{{"top_k", 3.5}}, "sampling.top_k must be a whole number in 0..256, got 3.5"},
      {{{"top_k", 300}}, "sampling.top_k must be a whole number in 0..256"},
      {{{"top_p", 0}}, "top-p must be in (0, 1]"},
      {{{"min_p", 1}}, "min-p must be in [0, 1)"},
      {{{"temprature", 1.1}}, "sampling.temprature is not a sampling setting"},
  };
  for (const auto& [sampling, needle] : cases) {
    nlohmann::json edited = good;
    edited["sampling"] = sampling;
    write_file_atomic(folder / "config.json", edited.dump());
    expect_error(folder, needle);
    expect_error(folder, "config.json");
    EXPECT_THROW(read_checkpoint_info(folder), Error);
  }
}

}  // namespace

namespace {

// Leftovers of a process killed mid-save (its staging folder and temporaries) and of a retention delete
// cut short are cleared at the next commit; a live process's staging folder is left alone.
TEST(RunFolderCleanup, StaleStagingFoldersOfDeadProcessesAreRemovedAtTheNextCommit) {
  stx::test::TempFolder tmp;
  stx::engine::RunFolder run(tmp / "run");
  auto write_one = [](const std::filesystem::path& staging) {
    stx::engine::write_file_atomic(staging / "model.safetensors", "weights");
  };
  run.commit(1, false, 3, write_one);
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  waitpid(dead, nullptr, 0);  // its pid now names no process
  const std::filesystem::path checkpoints = tmp / "run" / "checkpoints";
  const std::string dead_suffix = ".tmp-" + std::to_string(dead) + "-0badf00d";
  const std::string live_suffix = ".tmp-" + std::to_string(getpid()) + "-0badf00d";
  std::filesystem::create_directories(checkpoints / (".step-00000002" + dead_suffix));
  std::filesystem::create_directories(checkpoints / ".deleting-step-00000000");
  std::filesystem::create_directories(checkpoints / (".step-00000003" + live_suffix));
  std::ofstream(tmp / "run" / (".latest.json" + dead_suffix)) << "{";
  run.commit(4, false, 3, write_one);
  EXPECT_FALSE(std::filesystem::exists(checkpoints / (".step-00000002" + dead_suffix)));
  EXPECT_FALSE(std::filesystem::exists(checkpoints / ".deleting-step-00000000"));
  EXPECT_FALSE(std::filesystem::exists(tmp / "run" / (".latest.json" + dead_suffix)));
  EXPECT_TRUE(std::filesystem::exists(checkpoints / (".step-00000003" + live_suffix)));
  EXPECT_TRUE(std::filesystem::exists(checkpoints / "step-00000001" / "model.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(checkpoints / "step-00000004" / "model.safetensors"));
}

// On a full disk a killed save's staging folder holds the room the next save needs: it is cleared before
// the next save writes anything, even when that save then fails too.
TEST(RunFolderCleanup, LeftoversAreClearedBeforeASaveThatFails) {
  stx::test::TempFolder tmp;
  stx::engine::RunFolder run(tmp / "run");
  run.commit(1, false, 3, [](const std::filesystem::path& staging) {
    stx::engine::write_file_atomic(staging / "model.safetensors", "weights");
  });
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  waitpid(dead, nullptr, 0);
  const std::filesystem::path leftover =
      tmp / "run" / "checkpoints" / (".step-00000002.tmp-" + std::to_string(dead) + "-0badf00d");
  std::filesystem::create_directories(leftover);
  EXPECT_THROW(run.commit(3, false, 3,
                          [](const std::filesystem::path&) { throw stx::engine::Error("No space left on device"); }),
               stx::engine::Error);
  EXPECT_FALSE(std::filesystem::exists(leftover));
  EXPECT_TRUE(std::filesystem::exists(tmp / "run" / "checkpoints" / "step-00000001" / "model.safetensors"));
}

}  // namespace
