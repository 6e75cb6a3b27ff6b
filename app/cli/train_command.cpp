#include "train_command.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "interrupt.h"
#include "option_checks.h"
#include "pattern_options.h"
#include "progress_printer.h"
#include "stx/engine/io/atomic_file.h"
#include "stx/engine/checkpoint.h"
#include "stx/engine/device.h"
#include "stx/engine/distributed_settings.h"
#include "stx/engine/error.h"
#include "stx/engine/threads.h"
#include "stx/engine/trainer.h"
#include "stx/engine/model_types.h"

namespace stx::cli {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitInterrupted = 130;

std::vector<pid_t> g_children;

void forward_interrupt(int) {
  for (pid_t child : g_children) kill(child, SIGINT);
}

int free_local_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 29500;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  int port = 29500;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

// Starts `nproc` copies of this very command with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set, waits for
// them, and returns the worst exit status.
int launch_workers(int nproc, char** argv) {
  const int port = free_local_port();
  // The cores shared out (a --threads in argv still sets each process's own count).
  const int threads = std::max(1, engine::usable_cores() / nproc);
  for (int rank = 0; rank < nproc; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::cerr << "stx train: cannot start process " << rank << ": " << std::strerror(errno) << "\n";
      forward_interrupt(0);
      break;
    }
    if (pid == 0) {
      engine::DistributedSettings worker;
      worker.rank = rank;
      worker.world_size = nproc;
      worker.master_addr = "127.0.0.1";
      worker.master_port = port;
      worker.to_environment();
      engine::set_thread_limit_of_started_programs(threads);
      execv("/proc/self/exe", argv);
      std::cerr << "stx train: cannot run /proc/self/exe: " << std::strerror(errno) << "\n";
      _exit(127);
    }
    g_children.push_back(pid);
  }
  signal(SIGINT, forward_interrupt);
  int worst = 0;
  for (pid_t child : g_children) {
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0 && (worst == 0 || worst == kExitInterrupted)) worst = code;
  }
  return worst;
}

engine::TrainOptions build_options(const TrainCommandOptions& c) {
  engine::TrainOptions o;
  if (!c.init_from.empty()) {
    if (!c.resume.empty()) throw UsageError("--resume and --init-from cannot be combined");
    if (!c.preset.empty() || !c.config_file.empty()) {
      throw UsageError("--init-from takes the model from the checkpoint; drop --preset/--config");
    }
    if (c.context > 0) throw UsageError("--context cannot change when fine-tuning");
    if (c.data.empty()) throw UsageError("--data is required for a new run");
    if (c.out.empty()) throw UsageError("--out is required for a new run");
    o.init_from = c.init_from;
    // The model's own recipe (batch, learning rate, schedule, clipping...) is where a fine-tune starts, and
    // the options given here change it. With the defaults instead, the bundled audio model (65,536 samples,
    // trained one sequence a step) would get a batch of 8 and need about 43 GB.
    const engine::CheckpointInfo info = engine::read_checkpoint_info(engine::resolve_checkpoint(c.init_from));
    if (info.training.is_object()) recipe_from_json(info.training, o);
  } else if (c.resume.empty()) {
    if (c.preset.empty() == c.config_file.empty()) throw UsageError("give exactly one of --preset and --config");
    if (!c.preset.empty()) {
      o.model = engine::preset(c.preset);
    } else {
      const std::vector<uint8_t> bytes = engine::read_file(c.config_file, 4u << 20);
      const auto json = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
      if (json.is_discarded()) throw engine::Error(c.config_file + ": not valid JSON");
      try {
        o.model = engine::model_config_from_json(json);
      } catch (const engine::ConfigError& e) {
        throw engine::Error(c.config_file + ": " + e.what());
      }
      if (json.contains("training")) recipe_from_json(json["training"], o);
    }
    if (c.data.empty()) throw UsageError("--data is required for a new run");
    if (c.out.empty()) throw UsageError("--out is required for a new run");
  } else {
    o.resume = c.resume;
    if (!c.preset.empty() || !c.config_file.empty()) throw UsageError("--resume takes the model from the checkpoint; drop --preset/--config");
    if (c.context > 0) throw UsageError("--context cannot change when resuming");
    if (!c.precision.empty()) throw UsageError("--precision cannot change when resuming");
    if (c.amplitude_taps >= 0) throw UsageError("--amplitude-taps cannot change when resuming");
    if (c.expert_order >= 0) throw UsageError("--expert-order cannot change when resuming");
    // Without --steps the run keeps its own schedule: the trainer takes the caller's total as given.
    if (c.steps <= 0) {
      const engine::CheckpointInfo info = engine::read_checkpoint_info(engine::resolve_checkpoint(c.resume));
      if (info.training.contains("steps") && info.training["steps"].is_number_integer()) {
        o.steps = info.training["steps"].get<int64_t>();
      }
    }
  }
  if (c.context > 0) {
    if (o.model.kind == engine::DataKind::image) throw UsageError("--context of an image model is fixed by its H x W x C");
    require_between("--context", c.context, 1, int64_t{1} << 22);
    o.model.context = c.context;
    try {
      o.model.validate();
    } catch (const engine::ConfigError& e) {
      throw UsageError(std::string("--context: ") + e.what());
    }
  }
  if (!c.precision.empty()) o.precision = engine::parse_precision(c.precision);  // checked by CLI11
  if (c.amplitude_taps >= 0) o.amplitude_taps = c.amplitude_taps;
  if (c.expert_order >= 0) o.expert_order = c.expert_order;
  if (c.noise_share >= 0) o.noise_share = c.noise_share;
  if (c.noise_steps >= 0) o.noise_steps = c.noise_steps;
  o.data = c.data;
  o.out = c.out;
  if (c.steps > 0) o.steps = c.steps;
  if (c.batch > 0) o.batch = c.batch;
  if (c.accumulation > 0) o.accumulation = c.accumulation;
  if (c.window >= 0) o.window = c.window;
  if (c.lr > 0) o.learning_rate = c.lr;
  if (c.warmup_steps >= 0) o.warmup_steps = c.warmup_steps;
  if (c.min_lr_ratio >= 0) o.min_learning_rate_ratio = c.min_lr_ratio;
  if (c.eval_every >= 0) o.eval_every = c.eval_every;
  if (c.eval_windows >= 0) o.eval_windows = c.eval_windows;
  if (c.checkpoint_every > 0) o.checkpoint_every = c.checkpoint_every;
  if (c.keep > 0) o.keep_last = c.keep;
  if (c.seed >= 0) o.seed = static_cast<uint64_t>(c.seed);
  if (o.warmup_steps >= o.steps) o.warmup_steps = std::max<int64_t>(1, o.steps / 10);
  o.deterministic = c.deterministic;
  o.distributed = engine::DistributedSettings::from_environment();
  try {
    o.device = engine::parse_device_choice(c.device);
    o.validate();
    // --device cuda on a machine without one is a usage error (exit 2), said before anything starts.
    engine::resolve_training_device(o.device);
  } catch (const engine::Error& e) {
    throw UsageError(e);
  }
  return o;
}

}  // namespace

CLI::App* add_train_command(CLI::App& app, TrainCommandOptions& o) {
  CLI::App* command = app.add_subcommand("train", "Train a Sparse Transformer on a folder of images, audio or text");
  std::string presets;
  for (const auto& name : engine::preset_names()) presets += (presets.empty() ? "" : ", ") + name;
  command->add_option("--preset", o.preset, "a named architecture and recipe: " + presets);
  command->add_option("--config", o.config_file, "a JSON config (model fields, optional \"training\" recipe)");
  command->add_option("--data", o.data, "training data: a folder or file (images, audio or text, as the model's kind)");
  command->add_option("--out", o.out, "run folder for checkpoints (must not hold a run already)");
  command->add_option("--resume", o.resume, "continue the run in this run folder or checkpoint folder");
  command->add_option("--init-from", o.init_from,
                      "fine-tune: start a new run from this model's architecture, weights and recipe (the options given "
                      "here change the recipe)");
  command->add_option("--steps", o.steps, "total optimiser steps [default: recipe's, 1000]")
      ->check(whole_between(1, 100000000));
  command->add_option("--batch", o.batch, "sequences per step over all processes [default: recipe's, 8]")
      ->check(whole_between(1, 65536));
  command
      ->add_option("--accumulation", o.accumulation, "split each step's batch into this many micro-batches")
      ->check(whole_between(1, 65536));
  command->add_option("--lr", o.lr, "peak learning rate [default: 3e-4]")
      ->check(finite_between(1e-9, 1.0));
  command
      ->add_option("--warmup-steps", o.warmup_steps,
                   "steps of linear learning-rate warm-up [default: recipe's, 100]")
      ->check(whole_between(0, 100000000));
  command->add_option("--min-lr-ratio", o.min_lr_ratio,
                      "where the cosine decay ends, as a fraction of the peak learning rate [default: recipe's, 0.1]")
      ->check(finite_between(0.0, 1.0));
  command->add_option("--context", o.context, "training sequence length (text and audio models)")
      ->check(whole_between(1, 4194304));
  command
      ->add_option(
          "--window", o.window,
          "train on crops of this many bytes, at most the context (a curriculum's early stages: cheaper "
          "steps, more sequences each) [default: recipe's, 0 = the whole context]")
      ->check(whole_between(0, 4194304));
  command->add_option("--precision", o.precision,
                      "activations of a new run or fine-tune: fp32, bf16 (the linear layers in bf16: on a CPU with "
                      "AVX512-BF16 steps take 1.2-1.6x less time; elsewhere the CPU trains in fp32) or fp16 (CUDA only) "
                      "[default: the model's, fp32 for the presets]")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  command
      ->add_option("--amplitude-taps", o.amplitude_taps,
                   "audio: the model also sees the previous N samples as amplitudes, not only as byte embeddings; "
                   "a fine-tune of a model without them starts them at zero [default: the model's, 0 = none]")
      ->check(whole_between(0, engine::ModelConfig::kMaxAmplitudeTaps));
  command
      ->add_option("--expert-order", o.expert_order,
                   "audio: multiply a linear-prediction expert of this order into the output (a product of "
                   "experts; the network also sees its prediction); a fine-tune of a model without one starts "
                   "as the expert alone [default: the model's, none for the presets]")
      ->check(whole_between(1, engine::ModelConfig::kMaxExpertOrder));
  command
      ->add_option("--noise-share", o.noise_share,
                   "share of training crops whose inputs (not targets) are moved by up to --noise-steps mu-law "
                   "steps, so that the model holds up on its own noisy samples [default: recipe's, 0]")
      ->check(finite_between(0.0, 1.0));
  command
      ->add_option("--noise-steps", o.noise_steps,
                   "the largest move of the --noise-share crops' bytes, in mu-law steps [default: recipe's, 0]")
      ->check(whole_between(0, 64));
  command
      ->add_option("--eval-every", o.eval_every,
                   "validate every K steps [default: 100; 0 = at checkpoints only]")
      ->check(whole_between(0, 100000000));
  command->add_option("--eval-windows", o.eval_windows, "validation windows per pass [default: 32; 0 = all]")
      ->check(whole_between(0, 1000000000));
  command->add_option("--checkpoint-every", o.checkpoint_every, "save every K steps [default: 500]")
      ->check(whole_between(1, 100000000));
  command->add_option("--keep", o.keep, "checkpoints kept besides the best [default: 3]")
      ->check(whole_between(1, 1000));
  command->add_option("--seed", o.seed, "seed of the weights, crops and dropout [default: 1]")
      ->check(whole_between(0, 9007199254740991));
  command->add_option("--nproc", o.nproc, "data-parallel processes on this machine (Gloo) [default: 1]")
      ->check(whole_between(1, 64));
  command->add_flag("--deterministic", o.deterministic,
                    "one thread, so a resumed run matches an uninterrupted one bit for bit");
  command->add_flag("--quiet", o.quiet, "print only warnings, errors and the result");
  command->add_option("--device", o.device, "where to train: cpu, cuda, or auto (CUDA when there is one)")
      ->capture_default_str();
  command->footer(
      "Examples:\n  stx train --preset image-small --data /usr/share/datasets/fashion-mnist --out runs/fmnist\n"
      "  stx train --resume runs/fmnist --steps 4000\n"
      "Several machines: set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT on each and run the same command.");
  return command;
}

int run_train_command(const TrainCommandOptions& c, int argc, char** argv) {
  (void)argc;
  if (c.nproc > 1 && !engine::DistributedSettings::started_as_worker()) {
    build_options(c);  // a bad option is reported once, before any process starts
    // The processes share this machine's files: a folder the run cannot make fails here, once, rather than on
    // rank 0 alone while the others wait for it at the rendezvous.
    if (c.resume.empty()) engine::RunFolder(c.out).check_can_create();
    return launch_workers(c.nproc, argv);
  }
  engine::TrainOptions options = build_options(c);
  const bool on_cpu = engine::resolve_training_device(options.device) == engine::DeviceKind::cpu;
  if (options.precision && *options.precision != engine::Precision::fp32 && on_cpu && !c.quiet) {
    if (engine::effective_precision(*options.precision, false) == engine::Precision::fp32) {
      std::cerr << "stx train: note: " << engine::to_string(*options.precision)
                << " runs as fp32 on this CPU (bf16 needs AVX512-BF16; fp16 is for CUDA)\n";
    }
  }
  ProgressPrinter printer(c.quiet || options.distributed.rank != 0);
  engine::JobEnded end;
  {
    // The last committed checkpoint stays intact even on a second Ctrl-C: checkpoints are only renamed into place.
    const StopOnInterrupt stop("\nstx train: stopping after this step and saving a checkpoint (Ctrl-C again to quit now)\n");
    end = engine::train(options, [&printer](const engine::Event& e) { printer(e); }, stop.flag());
  }
  switch (end.outcome) {
    case engine::JobEnded::Outcome::completed:
      if (options.distributed.rank == 0) std::cout << "stx train: " << end.message << "; model in " << end.checkpoint.string() << "\n";
      return 0;
    case engine::JobEnded::Outcome::cancelled:
      if (options.distributed.rank == 0) {
        std::cout << "stx train: " << end.message
                  << (end.checkpoint.empty() ? "" : "; checkpoint " + end.checkpoint.string()) << "\n";
      }
      return kExitInterrupted;
    case engine::JobEnded::Outcome::failed:
      std::cerr << "stx train: " << with_flags(end.message, end.settings) << "\n";
      return kExitFailed;
  }
  return kExitFailed;
}

}  // namespace stx::cli
