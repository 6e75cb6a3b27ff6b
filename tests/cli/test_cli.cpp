// The stx CLI end to end on tiny runs: train, info, eval, sample text, layout --png, data-parallel training with two
// Gloo processes, and the one-line errors with their exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli_test_support.h"
#include "stx/engine/checkpoint.h"
#include "stx/engine/io/atomic_file.h"
#include "stx/engine/device.h"
#include "stx/models/model_config.h"

#ifdef STX_CLI_PATH

namespace {

namespace fs = std::filesystem;

using Result = stx::test::CliResult;
using stx::test::slurp;

Result stx(const stx::test::TempFolder& tmp, const std::string& arguments) {
  return stx::test::run_stx(tmp, arguments);
}
size_t lines(const std::string& text) { return stx::test::count_lines(text); }

fs::path write_config(const stx::test::TempFolder& tmp) {
  nlohmann::json config = stx::models::to_json(stx::test::tiny_text_config());
  config["training"] = {{"learning_rate", 3e-3}, {"warmup_steps", 2}, {"eval_windows", 4}, {"validation_fraction", 0.5}};
  const fs::path file = tmp / "tiny.json";
  std::ofstream(file) << config.dump(2);
  return file;
}

TEST(Cli, TrainInfoEvalOnATinyRun) {
  stx::test::TempFolder tmp;
  const fs::path data = stx::test::make_text_corpus(tmp / "data");
  const fs::path config = write_config(tmp);
  const std::string run = (tmp / "run").string();
  Result r = stx(tmp, "train --config " + config.string() + " --data " + data.string() + " --out " + run +
                          " --steps 8 --batch 4 --checkpoint-every 4");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("finished 8 steps"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("step 8/8"), std::string::npos) << r.err;   // the progress line
  EXPECT_NE(r.err.find("ETA"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(tmp / "run" / "latest.json"));
  EXPECT_TRUE(fs::exists(tmp / "run" / "checkpoints" / "step-00000004" / "model.safetensors"));

  r = stx(tmp, "info --model " + run);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("tiny-text"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("8 steps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fixed l=16 c=4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bits/byte"), std::string::npos) << r.out;
  r = stx(tmp, "info --json --model " + run);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto card = nlohmann::json::parse(r.out);
  EXPECT_EQ(card["training_steps"], 8);
  EXPECT_EQ(card["context"], 64);

  r = stx(tmp, "eval --json --model " + run + " --data " + data.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto result = nlohmann::json::parse(r.out);
  EXPECT_GT(result["bits_per_byte"].get<double>(), 0.5);
  EXPECT_LT(result["bits_per_byte"].get<double>(), 8.5);
  EXPECT_EQ(result["bytes"].get<uintmax_t>(), fs::file_size(data / "one.txt") + fs::file_size(data / "two.txt"));
  EXPECT_EQ(result["device"], "CPU") << r.out;
  // --device: auto scores where training would run; cuda on a build or machine without one is refused.
  r = stx(tmp, "eval --json --device auto --model " + run + " --data " + data.string());
  ASSERT_EQ(r.status, 0) << r.err;
  if (!stx::engine::cuda_available()) {
    EXPECT_EQ(nlohmann::json::parse(r.out)["bits_per_byte"], result["bits_per_byte"]);
    r = stx(tmp, "eval --device cuda --model " + run + " --data " + data.string());
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.err.find("cuda"), std::string::npos) << r.err;
  }

  // Resuming continues to the new total and says where it started.
  r = stx(tmp, "train --resume " + run + " --steps 10");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("at step 8"), std::string::npos) << r.err;
  EXPECT_EQ(stx::engine::load_checkpoint(stx::engine::resolve_checkpoint(tmp / "run")).state->step, 10);

  // Without --steps a resumed run keeps its own total (10 now), not the option's default of 1000.
  r = stx(tmp, "train --resume " + run + " --quiet");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(stx::engine::load_checkpoint(stx::engine::resolve_checkpoint(tmp / "run")).state->step, 10);

  // A recipe field of the wrong type: one line naming the file and the field, before any of the card.
  const fs::path checkpoint = stx::engine::resolve_checkpoint(tmp / "run");
  auto edited = nlohmann::json::parse(slurp(checkpoint / "config.json"));
  edited["training"]["data"] = 42;
  std::ofstream(checkpoint / "config.json") << edited.dump(2);
  // A config asking for an absurd model, every field within its limit (hundreds of billions of
  // parameters): every command that reads it refuses at once, naming the file, before allocating anything
  // of that size.
  const fs::path huge = tmp / "huge";
  fs::copy(checkpoint, huge, fs::copy_options::recursive);
  auto absurd = nlohmann::json::parse(slurp(huge / "config.json"));
  absurd.erase("training");
  absurd["d_model"] = 8192;
  absurd["heads"] = 32;
  absurd["layers"] = 512;
  absurd["d_ff"] = 65536;
  absurd["context"] = 4194304;
  std::ofstream(huge / "config.json") << absurd.dump(2);
  const stx::models::ModelConfig absurd_config = stx::models::model_config_from_json(absurd);
  for (const std::string& command : std::vector<std::string>{"info --model " + huge.string(),
                                                             "eval --data " + data.string() + " --model " + huge.string(),
                                    "sample text --prompt hi --max-bytes 4 --out " + (tmp / "h.txt").string() +
                                        " --model " + huge.string(),
                                    "train --data " + data.string() + " --out " + (tmp / "h-run").string() +
                                        " --init-from " + huge.string()}) {
    r = stx(tmp, command);
    EXPECT_EQ(r.status, 1) << command << "\n" << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find((huge / "config.json").string() + ": describes a model of " +
                         std::to_string(absurd_config.parameter_count()) + " parameters"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("nothing was loaded"), std::string::npos) << r.err;
  }

  for (const std::string& command :
       std::vector<std::string>{"info --model ", "info --json --model ", "eval --data " + data.string() + " --model "}) {
    r = stx(tmp, command + run);
    EXPECT_EQ(r.status, 1) << command;
    EXPECT_EQ(r.out, "") << command;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find((checkpoint / "config.json").string() + ": training.data: must be a string, not 42"),
              std::string::npos)
        << r.err;
  }
}

// A fine-tune starts from the recipe the model was trained with, not from the option defaults (batch 8,
// 1000 steps), and the options given change it. The bundled audio model at the default batch would need
// about 40 GB.
TEST(Cli, InitFromStartsFromTheModelsRecipe) {
  stx::test::TempFolder tmp;
  const fs::path data = stx::test::make_text_corpus(tmp / "data");
  const std::string base = (tmp / "base").string();
  Result r = stx(tmp, "train --config " + write_config(tmp).string() + " --data " + data.string() + " --out " +
                          base + " --steps 4 --batch 3 --quiet");
  ASSERT_EQ(r.status, 0) << r.err;

  r = stx(tmp, "train --init-from " + base + " --data " + data.string() + " --out " + (tmp / "tuned").string() +
                   " --quiet");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json recipe = stx::engine::load_checkpoint(stx::engine::resolve_checkpoint(tmp / "tuned")).training;
  EXPECT_EQ(recipe["batch"], 3);
  EXPECT_EQ(recipe["steps"], 4);
  EXPECT_EQ(recipe["warmup_steps"], 2);
  EXPECT_DOUBLE_EQ(recipe["learning_rate"].get<double>(), 3e-3);

  r = stx(tmp, "train --init-from " + base + " --data " + data.string() + " --out " + (tmp / "changed").string() +
                   " --batch 2 --steps 3 --lr 0.001 --warmup-steps 1 --min-lr-ratio 0.25 --quiet");
  ASSERT_EQ(r.status, 0) << r.err;
  recipe = stx::engine::load_checkpoint(stx::engine::resolve_checkpoint(tmp / "changed")).training;
  EXPECT_EQ(recipe["batch"], 2);
  EXPECT_EQ(recipe["steps"], 3);
  EXPECT_DOUBLE_EQ(recipe["learning_rate"].get<double>(), 1e-3);
  // The schedule's shape too: the bundled audio model's later stages changed it (models/recipes/train-bundled.sh).
  EXPECT_EQ(recipe["warmup_steps"], 1);
  EXPECT_DOUBLE_EQ(recipe["min_learning_rate_ratio"].get<double>(), 0.25);

  // A fine-tune too large for the machine is refused before anything is written, saying what it needs.
  r = stx(tmp, "train --init-from " + base + " --data " + data.string() + " --out " + (tmp / "huge").string() +
                   " --batch 65536 --context 1000000");
  EXPECT_EQ(r.status, 2) << r.err;  // --context cannot change when fine-tuning: a usage error
  nlohmann::json config = stx::models::to_json(stx::test::tiny_text_config(1 << 20));
  config["attention"]["stride"] = 1024;
  const fs::path big = tmp / "big.json";
  std::ofstream(big) << config.dump(2);
  r = stx(tmp, "train --config " + big.string() + " --data " + data.string() + " --out " + (tmp / "huge").string() +
                   " --batch 65536");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("needs about"), std::string::npos) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "huge" / "latest.json"));
}

TEST(Cli, SampleTextStreamsWritesNumberedFilesAndReproducesItsSeed) {
  stx::test::TempFolder tmp;
  const fs::path data = stx::test::make_text_corpus(tmp / "data");
  const std::string run = (tmp / "run").string();
  ASSERT_EQ(stx(tmp, "train --config " + write_config(tmp).string() + " --data " + data.string() + " --out " + run +
                         " --steps 2 --batch 2 --quiet").status, 0);

  const std::string out = (tmp / "s.txt").string();
  Result r = stx(tmp, "sample text --model " + run + " --prompt hello --max-bytes 20 --n 2 --seed 42 --out " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("seed 42"), std::string::npos) << r.err;  // the seed used is shown
  const std::string first = slurp(tmp / "s-1.txt"), second = slurp(tmp / "s-2.txt");
  EXPECT_EQ(first.size(), 25u);
  EXPECT_EQ(first.rfind("hello", 0), 0u);
  EXPECT_EQ(r.out, first + "\n");  // sample 1 streamed to the terminal as it came
  EXPECT_TRUE(fs::exists(tmp / "s-2.txt"));

  // An existing output is kept unless --force; the same seed gives the same bytes.
  r = stx(tmp, "sample text --model " + run + " --prompt hello --max-bytes 20 --n 2 --seed 42 --out " + out);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("s-1.txt already exists and is kept"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(--force)"), std::string::npos) << r.err;  // the engine's setting, in the CLI's flag
  EXPECT_EQ(lines(r.err), 1u);
  r = stx(tmp, "sample text --model " + run + " --prompt hello --max-bytes 20 --n 2 --seed 42 --force --out " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(tmp / "s-1.txt"), first);
  EXPECT_EQ(slurp(tmp / "s-2.txt"), second);
  // On one thread: the same bytes (the thread count changes the time, never the sample).
  r = stx(tmp, "sample text --model " + run + " --prompt hello --max-bytes 20 --n 2 --seed 42 --force --threads 1 --out " +
                   out);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(tmp / "s-1.txt"), first);
  EXPECT_EQ(slurp(tmp / "s-2.txt"), second);
  r = stx(tmp, "sample text --model " + run + " --threads 0 --out " + (tmp / "z.txt").string());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(lines(r.err), 1u) << r.err;

  // The wrong kind of model for the task, and a length past the context: one line, exit 2.
  r = stx(tmp, "sample image --model " + run + " --out " + (tmp / "x.png").string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("is a text model; `stx sample image` needs an image model"), std::string::npos) << r.err;
  r = stx(tmp, "sample text --model " + run + " --prompt hello --max-bytes 64 --out " + (tmp / "y.txt").string());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "x.png"));
  EXPECT_FALSE(fs::exists(tmp / "y.txt"));
}

TEST(Cli, BadInputGetsOneLineAndANonZeroExit) {
  stx::test::TempFolder tmp;
  const fs::path config = write_config(tmp);
  const std::string base = "train --config " + config.string() + " --out " + (tmp / "run").string();

  Result r = stx(tmp, base + " --data " + (tmp / "missing").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find((tmp / "missing").string()), std::string::npos) << r.err;

  fs::create_directories(tmp / "empty");
  r = stx(tmp, base + " --data " + (tmp / "empty").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("empty"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "run")) << "a failed run left files behind";

  r = stx(tmp, base + " --data " + (tmp / "empty").string() + " --steps -3");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;

  // The engine's check speaks of settings; the CLI names them by its flags.
  r = stx(tmp, base + " --data " + (tmp / "empty").string() + " --batch 12 --accumulation 5");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("the gradient accumulation must divide the batch size (12) (--accumulation, --batch)"),
            std::string::npos)
      << r.err;

  r = stx(tmp, "train --preset nope --data x --out y");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("nope"), std::string::npos) << r.err;

  r = stx(tmp, "eval --model " + (tmp / "nowhere").string() + " --data " + (tmp / "empty").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(lines(r.err), 1u) << r.err;

  // A corrupt checkpoint: the message names the file.
  const fs::path data = stx::test::make_text_corpus(tmp / "data");
  ASSERT_EQ(stx(tmp, base + " --data " + data.string() + " --steps 2").status, 0);
  const fs::path checkpoint = stx::engine::resolve_checkpoint(tmp / "run");
  fs::resize_file(checkpoint / "model.safetensors", 100);
  r = stx(tmp, "info --model " + (tmp / "run").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("model.safetensors"), std::string::npos) << r.err;
}

// --precision bf16 trains (the linear layers in bf16 where the CPU has AVX512-BF16, else fp32, with a note)
// and the run records it; a fine-tune may set its own, a resumed run may not.
TEST(Cli, TrainPrecisionIsRecordedAndNotChangedOnResume) {
  stx::test::TempFolder tmp;
  const fs::path data = stx::test::make_text_corpus(tmp / "data");
  const fs::path config = write_config(tmp);
  const std::string run = (tmp / "run").string();
  Result r = stx(tmp, "train --config " + config.string() + " --data " + data.string() + " --out " + run +
                          " --steps 4 --batch 2 --precision bf16");
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path checkpoint = stx::engine::resolve_checkpoint(tmp / "run");
  const std::vector<uint8_t> bytes = stx::engine::read_file(checkpoint / "config.json", 1u << 20);
  EXPECT_EQ(nlohmann::json::parse(bytes.begin(), bytes.end())["precision"], "bf16");
  const bool note = r.err.find("runs as fp32 on this CPU") != std::string::npos;
  EXPECT_EQ(note, !stx::models::cpu_has_fast_bf16()) << r.err;
  r = stx(tmp, "info --json --model " + run);  // the model card says what was asked and what runs here
  ASSERT_EQ(r.status, 0) << r.err;
  const auto card = nlohmann::json::parse(r.out);
  EXPECT_EQ(card["precision"], "bf16");
  EXPECT_EQ(card["precision_on_this_cpu"], stx::models::cpu_has_fast_bf16() ? "bf16" : "fp32");

  // A fine-tune may change it: the new run records its own.
  r = stx(tmp, "train --init-from " + run + " --data " + data.string() + " --out " + (tmp / "tuned").string() +
                   " --steps 2 --precision fp32 --quiet");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<uint8_t> tuned =
      stx::engine::read_file(stx::engine::resolve_checkpoint(tmp / "tuned") / "config.json", 1u << 20);
  EXPECT_EQ(nlohmann::json::parse(tuned.begin(), tuned.end())["precision"], "fp32");

  r = stx(tmp, "train --resume " + run + " --steps 6 --precision fp32");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--precision cannot change when resuming"), std::string::npos) << r.err;
  r = stx(tmp, "train --config " + config.string() + " --data " + data.string() + " --out " +
                   (tmp / "other").string() + " --precision int4");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "other"));
}

TEST(Cli, LayoutDrawsTheConnectivityMatrixAsAPng) {
  stx::test::TempFolder tmp;
  const fs::path png = tmp / "fixed.png";
  const Result r = stx(tmp, "layout --pattern fixed --n 300 --stride 30 --c 5 --png " + png.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string bytes = slurp(png);
  ASSERT_GT(bytes.size(), 40u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
  EXPECT_NE(bytes.find("tEXt"), std::string::npos);
  // IHDR holds the width and height: one pixel per position up to 1024.
  const auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(bytes[at])) << 24) | (uint32_t(uint8_t(bytes[at + 1])) << 16) |
           (uint32_t(uint8_t(bytes[at + 2])) << 8) | uint32_t(uint8_t(bytes[at + 3]));
  };
  EXPECT_EQ(be32(16), 300u);
  EXPECT_EQ(be32(20), 300u);

  // An existing file is replaced only with --force, and the refusal comes before anything is printed.
  const Result again = stx(tmp, "layout --pattern fixed --n 300 --stride 30 --c 5 --png " + png.string());
  EXPECT_EQ(again.status, 1);
  EXPECT_TRUE(again.out.empty()) << again.out;
  EXPECT_NE(again.err.find("already exists and is kept: allow replacing files to write over it (--force)"),
            std::string::npos)
      << again.err;
  EXPECT_EQ(slurp(png), bytes);
  ASSERT_EQ(stx(tmp, "layout --pattern strided --n 200 --stride 20 --force --png " + png.string()).status, 0);
  EXPECT_EQ(be32(16), 300u);  // `bytes` is the old file
  EXPECT_NE(slurp(png), bytes);
  const Result empty = stx(tmp, "layout --n 64 --stride 8 --png ''");
  EXPECT_EQ(empty.status, 2);
  EXPECT_NE(empty.err.find("the path names no file"), std::string::npos) << empty.err;
}

// Values CLI11 would let through or misread: NaN against a range, a negative or oversized unsigned seed, an
// empty path, a word that names no command, a word or a fraction where a whole number is asked for (CLI11's
// range said "Value abc not in range"). Each gets one line and exit status 2.
TEST(Cli, OptionValuesCli11WouldLetThroughAreRefused) {
  stx::test::TempFolder tmp;
  const fs::path data = stx::test::make_text_corpus(tmp / "data");
  const fs::path config = write_config(tmp);
  const std::string train = "train --config " + config.string() + " --data " + data.string() + " --out " +
                            (tmp / "run").string() + " --steps 2";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {train + " --lr nan", "--lr: must be a number from 1e-09 to 1, got nan"},
      {train + " --lr 0", "--lr: must be a number from 1e-09 to 1, got 0"},
      {train + " --min-lr-ratio nan", "--min-lr-ratio: must be a number from 0 to 1"},
      {"sample text --model text --prompt In --max-bytes 5 --out x.txt --seed -1",
       "--seed: must be a whole number"},
      {"sample text --model text --prompt In --max-bytes 5 --out x.txt --seed 99999999999999999999999",
       "--seed: must be a whole number"},
      {"sample text --model text --prompt-file '' --max-bytes 5 --out x.txt",
       "--prompt-file: the path names no file"},
      {"sample image --model image --prompt p.png --keep-rows -1 --out x.png",
       "--keep-rows: must be a whole number from 0 to 65535, got '-1'"},
      {"sample image --model image --prompt p.png --keep-rows 1.5 --out x.png",
       "--keep-rows: must be a whole number from 0 to 65535, got '1.5'"},
      {train + " --steps abc", "--steps: must be a whole number from 1 to 100000000, got 'abc'"},
      {train + " --keep 0", "--keep: must be a whole number from 1 to 1000, got '0'"},
      {train + " --seed 9007199254740992", "--seed: must be a whole number from 0 to 9007199254740991"},
      {"sample audio --model audio --seconds 0.00004 --out x.wav", "less than one sample"},
      {"sample audio --model audio --seconds inf --out x.wav", "--seconds must be a number of seconds above 0"},
      {"sample audio --model audio --seconds nan --out x.wav", "--seconds must be a number of seconds above 0"},
      {"bogus --help", "unknown command 'bogus'"},
  };
  for (const auto& [arguments, expected] : cases) {
    const Result r = stx(tmp, arguments);
    EXPECT_EQ(r.status, 2) << arguments << "\n" << r.err;
    EXPECT_EQ(lines(r.err), 1u) << arguments << "\n" << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << arguments << "\n" << r.err;
  }
  EXPECT_FALSE(fs::exists(tmp / "run"));
  EXPECT_FALSE(fs::exists(tmp / "x.txt"));

  const Result help = stx(tmp, "help train");  // as git and cargo take it
  EXPECT_EQ(help.status, 0) << help.err;
  EXPECT_NE(help.out.find("--steps"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("Usage: stx train"), std::string::npos) << help.out;  // the command as typed
  const Result kind = stx(tmp, "help sample image");  // down to the kind of sample
  EXPECT_EQ(kind.status, 0) << kind.err;
  EXPECT_NE(kind.out.find("Usage: stx sample image"), std::string::npos) << kind.out;
  EXPECT_NE(kind.out.find("--keep-rows"), std::string::npos) << kind.out;
}

// A new run whose folder cannot be made fails at once, before training; it used to train and then wait
// forever for its first checkpoint to be saved.
TEST(Cli, ARunFolderThatCannotBeMadeFailsBeforeTraining) {
  stx::test::TempFolder tmp;
  const fs::path data = stx::test::make_text_corpus(tmp / "data");
  const fs::path config = write_config(tmp);
  stx::test::write_text(tmp / "afile", "not a folder");
  const Result r = stx(tmp, "train --config " + config.string() + " --data " + data.string() + " --out " +
                                (tmp / "afile").string() + " --steps 2");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("cannot create the run folder " + (tmp / "afile").string()), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("step 1/"), std::string::npos) << "it trained before finding the folder unusable: " << r.err;
  EXPECT_EQ(slurp(tmp / "afile"), "not a folder");
  // With --nproc the launcher checks it once, before any process starts.
  const Result launched = stx(tmp, "train --config " + config.string() + " --data " + data.string() + " --out " +
                                       (tmp / "afile").string() + " --steps 2 --nproc 2");
  EXPECT_EQ(launched.status, 1) << launched.err;
  EXPECT_EQ(lines(launched.err), 1u) << launched.err;
  EXPECT_NE(launched.err.find("cannot create the run folder"), std::string::npos) << launched.err;

  // Nor does a run go into a model folder (it would mix checkpoints/ into a model someone shares).
  stx::test::write_text(tmp / "model" / "config.json", "{}");
  const Result into_model = stx(tmp, "train --config " + config.string() + " --data " + data.string() + " --out " +
                                         (tmp / "model").string() + " --steps 2");
  EXPECT_EQ(into_model.status, 1) << into_model.err;
  EXPECT_NE(into_model.err.find("is a model folder"), std::string::npos) << into_model.err;
  EXPECT_FALSE(fs::exists(tmp / "model" / "checkpoints"));
}

// Two Gloo processes with the same global batch follow the one-process run: same crops, averaged
// gradients, so the same weights up to the order of floating-point sums.
TEST(Cli, TwoGlooProcessesMatchOneProcess) {
  stx::test::TempFolder tmp;
  const fs::path data = stx::test::make_text_corpus(tmp / "data");
  const fs::path config = write_config(tmp);
  const std::string common = "train --config " + config.string() + " --data " + data.string() +
                             " --steps 6 --batch 4 --deterministic --quiet";
  Result one = stx(tmp, common + " --out " + (tmp / "one").string());
  ASSERT_EQ(one.status, 0) << one.err;
  Result two = stx(tmp, common + " --nproc 2 --out " + (tmp / "two").string());
  ASSERT_EQ(two.status, 0) << two.err;
  const auto a = stx::engine::load_checkpoint(stx::engine::resolve_checkpoint(tmp / "one"));
  const auto b = stx::engine::load_checkpoint(stx::engine::resolve_checkpoint(tmp / "two"));
  ASSERT_EQ(b.state->step, 6);
  EXPECT_EQ(b.state->world_size, 2);
  EXPECT_NEAR(a.state->last_bits_per_byte, b.state->last_bits_per_byte, 1e-4);
  auto pb = b.model->named_parameters();
  double largest = 0;
  for (const auto& item : a.model->named_parameters()) {
    largest = std::max(largest, (item.value() - pb[item.key()]).abs().max().item<double>());
  }
  EXPECT_LT(largest, 1e-4) << "weights of the one- and two-process runs differ by " << largest;
  // They did move: the runs trained.
  at::manual_seed(1);
  stx::models::SparseTransformer fresh(stx::test::tiny_text_config());
  EXPECT_GT((fresh->named_parameters()["blocks.0.qkv.weight"] - a.model->named_parameters()["blocks.0.qkv.weight"])
                .abs().max().item<double>(), 1e-4);
}

}  // namespace


namespace {

// A user with no internet names a bundled model; `stx export` makes such a folder from a run.
TEST(Cli, BundledModelsAreFoundByNameAndExportKeepsTheirRecord) {
  stx::test::TempFolder tmp;
  Result r = stx(tmp, "info --model text");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("models/bundled/text"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fixed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("validation"), std::string::npos) << r.out;

  const fs::path sample = tmp / "verse.txt";
  r = stx(tmp, "sample text --model text --prompt 'And God said' --max-bytes 40 --seed 7 --quiet --out " +
                   sample.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GE(fs::file_size(sample), 40u);

  r = stx(tmp, "info --model no-such-model");
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("bundled: audio, image, text"), std::string::npos) << r.err;

  r = stx(tmp, "export --model text --out " + (tmp / "copy").string() + " --fp16");
  ASSERT_EQ(r.status, 0) << r.err;
  r = stx(tmp, "info --json --model " + (tmp / "copy").string());
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json copy = nlohmann::json::parse(r.out);
  r = stx(tmp, "info --json --model text");
  const nlohmann::json original = nlohmann::json::parse(r.out);
  EXPECT_EQ(copy["training_steps"], original["training_steps"]);
  EXPECT_EQ(copy["weights_hash"], original["weights_hash"]);  // fp16 to fp16: the same bytes
  r = stx(tmp, "export --model text --out " + (tmp / "copy").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
}

}  // namespace

#endif  // STX_CLI_PATH
