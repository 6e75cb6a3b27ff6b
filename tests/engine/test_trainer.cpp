// The trainer: a tiny model overfits a tiny corpus, the schedule, events, cancellation with a final
// checkpoint, exact resume, and retention of checkpoints.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <atomic>
#include <cmath>
#include <set>
#include <vector>

#include "engine_test_support.h"
#include "stx/engine/checkpoint.h"
#include "stx/engine/data/dataset.h"
#include "stx/engine/device.h"
#include "stx/engine/error.h"
#include "stx/engine/evaluate.h"
#include "stx/engine/export/export.h"
#include "stx/engine/mulaw.h"
#include "stx/engine/model_data.h"
#include "stx/engine/model_session.h"
#include "stx/engine/trainer.h"

namespace {

using namespace stx::engine;
namespace fs = std::filesystem;

struct Recorder {
  std::vector<TrainProgress> progress;
  std::vector<ValidationDone> validations;
  std::vector<CheckpointSaved> saved;
  std::vector<std::string> logs;
  void operator()(const Event& e) {
    if (auto* p = std::get_if<TrainProgress>(&e)) progress.push_back(*p);
    if (auto* v = std::get_if<ValidationDone>(&e)) validations.push_back(*v);
    if (auto* s = std::get_if<CheckpointSaved>(&e)) saved.push_back(*s);
    if (auto* l = std::get_if<LogLine>(&e)) logs.push_back(l->text);
  }
};

// A training run left to finish, with everything it reported.
struct FinishedRun {
  Recorder events;
  JobEnded end;
};

FinishedRun train_to_the_end(const TrainOptions& o) {
  FinishedRun run;
  std::atomic<bool> cancel{false};
  run.end = train(o, std::ref(run.events), cancel);
  return run;
}

TEST(Trainer, LearningRateWarmsUpThenDecaysToTheFloor) {
  TrainOptions o;
  o.learning_rate = 1e-3;
  o.min_learning_rate_ratio = 0.1;
  o.warmup_steps = 10;
  o.steps = 110;
  EXPECT_NEAR(learning_rate_at(o, 0), 1e-4, 1e-12);
  EXPECT_NEAR(learning_rate_at(o, 9), 1e-3, 1e-12);
  EXPECT_NEAR(learning_rate_at(o, 60), 0.55e-3, 1e-9);  // half-way down the cosine
  EXPECT_NEAR(learning_rate_at(o, 110), 1e-4, 1e-12);
  for (int64_t s = 10; s < 110; ++s) EXPECT_LE(learning_rate_at(o, s + 1), learning_rate_at(o, s) + 1e-15);
}

TEST(Trainer, ATinyModelOverfitsATinyCorpus) {
  stx::test::TempFolder tmp;
  // 500 bytes of random words per file: too random to generalise, small enough to learn by heart.
  const fs::path data = stx::test::make_text_corpus(tmp / "data", 500);
  TrainOptions o = stx::test::tiny_train_options(data, tmp / "run");
  o.model.d_model = 64;
  o.model.d_ff = 128;
  o.model.context = 128;  // few bytes of each crop lack the context that identifies their place
  o.steps = 400;
  o.batch = 8;
  o.learning_rate = 3e-3;
  o.warmup_steps = 20;
  o.eval_every = 100;
  o.eval_windows = 8;
  o.checkpoint_every = 400;
  const auto [events, end] = train_to_the_end(o);
  ASSERT_EQ(end.outcome, JobEnded::Outcome::completed) << end.message;
  ASSERT_EQ(events.progress.size(), 400u);
  EXPECT_GT(events.progress.front().loss_bits_per_byte, 6.0);  // about log2(256) = 8 at the start
  // Ten words in random order cost about 3.3 bits per word to anyone who has not memorised the text.
  EXPECT_LT(events.progress.back().loss_bits_per_byte, 0.5);
  EXPECT_GT(events.progress.back().tokens_per_second, 0);
  EXPECT_EQ(events.saved.size(), 1u);
  ASSERT_EQ(events.validations.size(), 4u);
  EXPECT_LT(events.validations.front().bits_per_byte, 6.0);  // it learnt the words before memorising

  const ModelBundle bundle = load_checkpoint(resolve_checkpoint(tmp / "run"));
  ASSERT_TRUE(bundle.state.has_value());
  EXPECT_EQ(bundle.state->step, 400);
  EXPECT_EQ(bundle.state->samples_drawn, 400 * 8);
  EXPECT_NEAR(bundle.state->last_bits_per_byte, events.validations.back().bits_per_byte, 1e-12);
}

TEST(Trainer, ShorterWindowsTrainTheFirstPositionsAndTheModelKeepsItsContext) {
  stx::test::TempFolder tmp;
  const fs::path data = stx::test::make_text_corpus(tmp / "data", 500);
  TrainOptions o = stx::test::tiny_train_options(data, tmp / "run");
  o.model.context = 128;
  o.window = 32;
  o.steps = 40;
  o.checkpoint_every = 40;
  const auto [events, end] = train_to_the_end(o);
  ASSERT_EQ(end.outcome, JobEnded::Outcome::completed) << end.message;
  EXPECT_LT(events.progress.back().loss_bits_per_byte, events.progress.front().loss_bits_per_byte - 1.0);
  const ModelBundle bundle = load_checkpoint(resolve_checkpoint(tmp / "run"));
  EXPECT_EQ(bundle.config.context, 128);  // the windows are a recipe choice, not the model's shape
  EXPECT_EQ(bundle.training.at("window").get<int64_t>(), 32);
  EXPECT_EQ(bundle.state->samples_drawn, 40 * o.batch);

  // A window longer than the context is refused before anything is written.
  TrainOptions too_long = stx::test::tiny_train_options(data, tmp / "run-long");
  too_long.window = 65;  // the tiny model's context is 64
  const JobEnded refused = stx::engine::train(too_long, nullptr, std::atomic<bool>{false});
  EXPECT_EQ(refused.outcome, JobEnded::Outcome::failed);
  EXPECT_NE(refused.message.find("the training window of 65 bytes is longer than the model's context of 64"),
            std::string::npos)
      << refused.message;
  EXPECT_EQ(refused.settings, std::vector<std::string>{"window"});  // the CLI adds --window, the studio its field
  EXPECT_FALSE(fs::exists(tmp / "run-long" / "latest.json"));
}

// A fine-tune can give an audio model amplitude inputs it did not have: they start at zero, so the tuned
// model begins as the base model; one that has them keeps their number, and a text model has none.
TEST(Trainer, AFineTuneAddsAmplitudeInputsStartingAtZero) {
  stx::test::TempFolder tmp;
  fs::create_directories(tmp / "audio");
  for (int file = 0; file < 4; ++file) {  // 2 s of a decaying tone each, at the model's 12 kHz
    std::vector<uint8_t> bytes(24000);
    for (size_t i = 0; i < bytes.size(); ++i) {
      const double t = static_cast<double>(i) / 12000.0;
      bytes[i] = mulaw_encode(static_cast<float>(0.5 * std::exp(-t) * std::sin(2 * M_PI * (220.0 + 55 * file) * t)));
    }
    write_wav(tmp / "audio" / ("tone-" + std::to_string(file) + ".wav"), bytes.data(), bytes.size(), 12000,
              ExportInfo{});
  }
  TrainOptions base = stx::test::tiny_train_options(tmp / "audio", tmp / "base");
  base.model.kind = stx::models::DataKind::audio;
  base.steps = 2;
  ASSERT_EQ(train_to_the_end(base).end.outcome, JobEnded::Outcome::completed);

  TrainOptions tune = stx::test::tiny_train_options(tmp / "audio", tmp / "tuned");
  tune.init_from = tmp / "base";
  tune.amplitude_taps = 12;
  tune.steps = 1;
  tune.learning_rate = 1e-9;  // an Adam step moves each weight by about lr
  tune.warmup_steps = 0;
  tune.weight_decay = 0;
  const FinishedRun tuned_run = train_to_the_end(tune);
  ASSERT_EQ(tuned_run.end.outcome, JobEnded::Outcome::completed) << tuned_run.end.message;
  const ModelBundle before = load_checkpoint(resolve_checkpoint(tmp / "base"));
  const ModelBundle after = load_checkpoint(resolve_checkpoint(tmp / "tuned"));
  EXPECT_EQ(after.config.amplitude_taps, 12);
  ASSERT_TRUE(after.model->amplitude);
  EXPECT_LT(after.model->amplitude->weight.abs().max().item<double>(), 1e-6);
  auto base_parameters = before.model->named_parameters();
  for (const auto& item : after.model->named_parameters()) {
    if (item.key() == "amplitude.weight") continue;
    EXPECT_TRUE(item.value().allclose(base_parameters[item.key()], 0, 1e-6)) << item.key();
  }

  TrainOptions other = stx::test::tiny_train_options(tmp / "audio", tmp / "other");
  other.init_from = tmp / "tuned";
  other.amplitude_taps = 4;
  const JobEnded kept = stx::engine::train(other, nullptr, std::atomic<bool>{false});
  EXPECT_EQ(kept.outcome, JobEnded::Outcome::failed);
  EXPECT_NE(kept.message.find("already sees 12 earlier samples"), std::string::npos) << kept.message;
  EXPECT_EQ(kept.settings, std::vector<std::string>{"amplitude_taps"});

  TrainOptions text = stx::test::tiny_train_options(stx::test::make_text_corpus(tmp / "text"), tmp / "text-run");
  text.amplitude_taps = 8;
  const JobEnded refused = stx::engine::train(text, nullptr, std::atomic<bool>{false});
  EXPECT_EQ(refused.outcome, JobEnded::Outcome::failed);
  EXPECT_NE(refused.message.find("audio models only"), std::string::npos) << refused.message;
  EXPECT_EQ(refused.settings, std::vector<std::string>{"amplitude_taps"});
}

TEST(Trainer, TheLastStepValidatesOnTheWholeSplitNotASample) {
  // A few windows along the way keep validation cheap, but the figure a finished model carries must be its
  // held-out figure: the last step scores every window.
  stx::test::TempFolder tmp;
  const fs::path data = stx::test::make_text_corpus(tmp / "data");
  TrainOptions o = stx::test::tiny_train_options(data, tmp / "run");
  o.steps = 3;
  o.eval_every = 1;
  o.eval_windows = 1;
  const auto [events, end] = train_to_the_end(o);
  ASSERT_EQ(end.outcome, JobEnded::Outcome::completed) << end.message;
  ASSERT_EQ(events.validations.size(), 3u);

  ModelBundle bundle = load_checkpoint(resolve_checkpoint(tmp / "run"));
  DatasetOptions d = dataset_options_for(bundle.config);
  d.validation_fraction = o.validation_fraction;
  const Dataset dataset = open_dataset(data, d);
  const int64_t context = bundle.config.context;
  ASSERT_GT(dataset.validation.size(), static_cast<size_t>(10 * context));  // many windows, not one
  const double all = evaluate_bits_per_byte(bundle.model, dataset.validation, context, 1, 0, 8).bits_per_byte;
  const double one = evaluate_bits_per_byte(bundle.model, dataset.validation, context, 1, 1, 8).bits_per_byte;
  EXPECT_NEAR(events.validations.back().bits_per_byte, all, 1e-5);
  EXPECT_GT(std::abs(all - one), 1e-4);  // a one-window pass would have said something else
  EXPECT_NEAR(bundle.state->last_bits_per_byte, all, 1e-5);
  EXPECT_NEAR(describe_model(tmp / "run").bits_per_byte.value_or(-1), all, 1e-5);  // what the studio shows
  bool said = false;
  for (const std::string& line : events.logs) said = said || line.find("whole validation split") != std::string::npos;
  EXPECT_TRUE(said);
}

// Runs to `steps`, cancelling once `cancel_after` steps are done (0 = never).
JobEnded run_until(TrainOptions o, int64_t cancel_after) {
  std::atomic<bool> cancel{false};
  auto sink = [&](const Event& e) {
    if (auto* p = std::get_if<TrainProgress>(&e); p && cancel_after > 0 && p->step >= cancel_after) cancel = true;
  };
  return train(std::move(o), sink, cancel);
}

void expect_same_weights(const fs::path& a, const fs::path& b) {
  const ModelBundle x = load_checkpoint(a), y = load_checkpoint(b);
  const auto px = x.model->named_parameters(), py = y.model->named_parameters();
  for (const auto& item : px) {
    ASSERT_TRUE(at::equal(item.value(), py[item.key()])) << item.key() << " differs";
  }
}

TEST(Trainer, CancelWritesAFinalCheckpointAndResumeIsExact) {
  stx::test::TempFolder tmp;
  const fs::path data = stx::test::make_text_corpus(tmp / "data");
  TrainOptions o = stx::test::tiny_train_options(data, tmp / "straight");
  o.deterministic = true;
  o.model.dropout = 0.1;  // dropout draws random numbers: the generator state must resume too
  o.accumulation = 2;
  ASSERT_EQ(run_until(o, 0).outcome, JobEnded::Outcome::completed);

  TrainOptions first = o;
  first.out = tmp / "interrupted";
  const JobEnded stopped = run_until(first, 3);
  ASSERT_EQ(stopped.outcome, JobEnded::Outcome::cancelled) << stopped.message;
  ASSERT_FALSE(stopped.checkpoint.empty());
  EXPECT_EQ(load_checkpoint(stopped.checkpoint).state->step, 3);

  TrainOptions resumed;
  resumed.resume = tmp / "interrupted";
  resumed.steps = o.steps;
  resumed.deterministic = true;
  const JobEnded end = run_until(resumed, 0);
  ASSERT_EQ(end.outcome, JobEnded::Outcome::completed) << end.message;
  expect_same_weights(resolve_checkpoint(tmp / "straight"), resolve_checkpoint(tmp / "interrupted"));
}

TEST(Trainer, RetentionKeepsTheLastNPlusTheBest) {
  stx::test::TempFolder tmp;
  const fs::path data = stx::test::make_text_corpus(tmp / "data");
  TrainOptions o = stx::test::tiny_train_options(data, tmp / "run");
  o.checkpoint_every = 1;
  o.keep_last = 2;
  o.steps = 5;
  const auto [events, end] = train_to_the_end(o);
  ASSERT_EQ(end.outcome, JobEnded::Outcome::completed) << end.message;
  ASSERT_EQ(events.saved.size(), 5u);
  RunFolder run(tmp / "run");
  ASSERT_TRUE(run.best().has_value());
  std::set<fs::path> expected = {run.folder_for(4), run.folder_for(5), *run.best()};
  std::set<fs::path> present;
  for (const auto& entry : fs::directory_iterator(tmp / "run" / "checkpoints")) present.insert(entry.path());
  EXPECT_EQ(present, expected);
  EXPECT_EQ(*run.latest(), run.folder_for(5));
}

TEST(Trainer, BadInputEndsTheJobWithAPlainMessage) {
  stx::test::TempFolder tmp;
  std::atomic<bool> cancel{false};
  TrainOptions o = stx::test::tiny_train_options(tmp / "missing", tmp / "run");
  JobEnded end = train(o, {}, cancel);
  EXPECT_EQ(end.outcome, JobEnded::Outcome::failed);
  EXPECT_NE(end.message.find((tmp / "missing").string()), std::string::npos) << end.message;
  EXPECT_FALSE(fs::exists(tmp / "run" / "latest.json"));

  fs::create_directories(tmp / "empty");
  o.data = tmp / "empty";
  end = train(o, {}, cancel);
  EXPECT_EQ(end.outcome, JobEnded::Outcome::failed);
  EXPECT_NE(end.message.find("empty"), std::string::npos) << end.message;

  // A corpus shorter than the context cannot give one crop.
  stx::test::write_text(tmp / "short" / "a.txt", "tiny");
  stx::test::write_text(tmp / "short" / "b.txt", "text");
  o.data = tmp / "short";
  end = train(o, {}, cancel);
  EXPECT_EQ(end.outcome, JobEnded::Outcome::failed);
  EXPECT_FALSE(fs::exists(tmp / "run" / "latest.json"));

  // An existing run is never overwritten by a new one.
  o.data = stx::test::make_text_corpus(tmp / "data");
  ASSERT_EQ(train(o, {}, cancel).outcome, JobEnded::Outcome::completed);
  end = train(o, {}, cancel);
  EXPECT_EQ(end.outcome, JobEnded::Outcome::failed);
  EXPECT_NE(end.message.find("already holds a training run; resume it"), std::string::npos) << end.message;
  EXPECT_EQ(end.settings, (std::vector<std::string>{"resume", "out"}));
}

}  // namespace

namespace {

// The words front ends read, and which GPU each data-parallel process takes: rank r of a run on a machine with
// n GPUs takes GPU r mod n, so processes spread over the GPUs; a single process and sampling take GPU 0.
TEST(TrainerDevice, ChoicesReadBackAndRanksSpreadOverTheGpus) {
  using stx::engine::DeviceChoice;
  for (DeviceChoice choice : {DeviceChoice::automatic, DeviceChoice::cpu, DeviceChoice::cuda}) {
    EXPECT_EQ(stx::engine::parse_device_choice(stx::engine::to_string(choice)), choice);
  }
  EXPECT_STREQ(stx::engine::to_string(DeviceChoice::automatic), "auto");
  EXPECT_THROW(stx::engine::parse_device_choice("CUDA"), stx::engine::Error);
  EXPECT_THROW(stx::engine::parse_device_choice(""), stx::engine::Error);
  EXPECT_EQ(stx::engine::cuda_device_index(0, 1), 0);
  EXPECT_EQ(stx::engine::cuda_device_index(3, 1), 0);
  const std::vector<int> four_ranks_on_two = {stx::engine::cuda_device_index(0, 2), stx::engine::cuda_device_index(1, 2),
                                              stx::engine::cuda_device_index(2, 2), stx::engine::cuda_device_index(3, 2)};
  EXPECT_EQ(four_ranks_on_two, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(stx::engine::cuda_device_index(5, 8), 5);
  EXPECT_EQ(stx::engine::cuda_device_index(2, 0), 0);  // no count reported: GPU 0, never a division by zero
  EXPECT_EQ(stx::engine::resolve_generation_device(DeviceChoice::automatic), stx::engine::DeviceKind::cpu);
  EXPECT_EQ(stx::engine::resolve_training_device(DeviceChoice::cpu), stx::engine::DeviceKind::cpu);
}

// --device: "auto" trains wherever it can (here the CPU); "cuda" without a CUDA device ends the job with one
// plain line saying so, before anything is written; a misspelt device is refused where it is read.
TEST(TrainerDevice, CudaWithoutADeviceFailsCleanlyAndAutoUsesTheCpu) {
  stx::test::TempFolder tmp;
  const auto data = stx::test::make_text_corpus(tmp / "data");
  stx::engine::TrainOptions o = stx::test::tiny_train_options(data, tmp / "run");
  o.steps = 2;
  o.checkpoint_every = 2;
  if (!torch::cuda::is_available()) {
    o.device = stx::engine::DeviceChoice::cuda;
    const stx::engine::JobEnded end = stx::engine::train(o, nullptr, std::atomic<bool>{false});
    EXPECT_EQ(end.outcome, stx::engine::JobEnded::Outcome::failed);
    // The reason, as the engine words it for this build: no CUDA in LibTorch, no kernels, or no device.
    EXPECT_NE(end.message.find(stx::engine::cuda_unavailable_reason()), std::string::npos) << end.message;
    EXPECT_NE(end.message.find("choose the cpu"), std::string::npos) << end.message;
    EXPECT_EQ(end.settings, std::vector<std::string>{"device"});
    EXPECT_FALSE(std::filesystem::exists(tmp / "run" / "latest.json"));
  }
  try {
    stx::engine::parse_device_choice("gpu");
    ADD_FAILURE() << "took 'gpu' for a device";
  } catch (const stx::engine::Error& e) {
    EXPECT_STREQ(e.what(), "the device must be cpu, cuda or auto, not 'gpu'");
    EXPECT_EQ(e.settings(), std::vector<std::string>{"device"});
  }
  o.device = stx::engine::DeviceChoice::automatic;
  const stx::engine::JobEnded end = stx::engine::train(o, nullptr, std::atomic<bool>{false});
  EXPECT_EQ(end.outcome, stx::engine::JobEnded::Outcome::completed) << end.message;
  EXPECT_TRUE(std::filesystem::exists(tmp / "run" / "latest.json"));
}

}  // namespace
