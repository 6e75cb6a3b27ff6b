// `stx train`: trains a model from a preset or a config file on a folder, with a progress bar; Ctrl-C
// saves a checkpoint and exits. `--nproc N` runs N data-parallel processes on this machine.
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace stx::cli {

struct TrainCommandOptions {
  std::string preset;
  std::string config_file;
  std::string data;
  std::string out;
  std::string resume;
  std::string init_from;  // fine-tune: a new run starting from this model
  int64_t steps = 0;          // 0 = the recipe's (or 1000 for a new run)
  int64_t batch = 0;
  int64_t accumulation = 0;
  int64_t window = -1;  // -1: the recipe's
  double lr = 0;
  int64_t warmup_steps = -1;   // -1 = the recipe's
  double min_lr_ratio = -1;    // -1 = the recipe's
  int64_t context = 0;
  std::string precision;  // empty: the preset's or config's
  int64_t amplitude_taps = -1;  // -1: the model's own
  int64_t expert_order = -1;    // -1: the model's own
  double noise_share = -1;      // -1: the recipe's
  int64_t noise_steps = -1;     // -1: the recipe's
  int64_t eval_every = -1;
  int64_t eval_windows = -1;
  int64_t checkpoint_every = 0;
  int keep = 0;
  int64_t seed = -1;
  int nproc = 1;
  bool deterministic = false;
  bool quiet = false;
  std::string device = "auto";
};

CLI::App* add_train_command(CLI::App& app, TrainCommandOptions& options);
// Returns the exit status: 0 completed, 1 failed, 130 stopped by Ctrl-C (after saving).
int run_train_command(const TrainCommandOptions& options, int argc, char** argv);

}  // namespace stx::cli
