#include "commands.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/optim/adamw.h>

#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <thread>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "contention.h"
#include "memory.h"
#include "stx/engine/allocator.h"
#include "stx/engine/io/atomic_file.h"
#include "stx/models/sparse_transformer.h"
#include "timing.h"

namespace stx::bench {
namespace {

struct TrainBenchOptions {
  std::vector<int64_t> contexts = {3072, 12288};
  std::vector<std::string> patterns = {"dense", "fixed", "strided"};
  std::vector<std::string> precisions = {"fp32"};
  int64_t d_model = 256, layers = 4, heads = 4, batch = 1;
  int64_t stride = 128, summary = 32;
  // 32: with l = 128 and c = 32 the fixed pattern's summary cells fill whole 32-wide blocks, where 64-wide
  // blocks would be half masked. Measured at 12,288: fixed 3241 ms with 32 against 4740 ms with 64.
  int block = 32;
  bool recompute = false;
  int repeats = 3;
  int threads = 0;  // 0: every core
  // Busy programs beside each row (bench/contention.h), side by side: the step on a busy machine against
  // the step alone (the first listed).
  std::vector<int> contend = {0};
  std::string json_path;
};

struct Row {
  int64_t context = 0;
  std::string pattern, precision;
  double step_ms = 0, peak_mb = 0, ratio_vs_dense = 0;
  int64_t parameters = 0;
  int repeats = 0;
  int contend = 0;
  double vs_alone = 0;  // step_ms of the first --contend row over this one's; 0 for that row
};

models::ModelConfig config_for(const TrainBenchOptions& o, int64_t context, const std::string& pattern,
                               const std::string& precision) {
  models::ModelConfig c;
  c.name = "bench-" + pattern;
  c.kind = models::DataKind::text;
  c.context = context;
  c.d_model = o.d_model;
  c.layers = o.layers;
  c.heads = o.heads;
  c.d_ff = 4 * o.d_model;
  c.pattern = kernels::parse_pattern(pattern);
  c.stride = o.stride;
  c.summary = o.summary;
  c.mode = kernels::Combination::merged;
  c.block = o.block;
  c.recompute = o.recompute;
  c.precision = models::parse_precision(precision);
  c.validate();
  return c;
}

Row run_row(const TrainBenchOptions& o, int64_t context, const std::string& pattern, const std::string& precision,
            int contend) {
  Row row;
  row.contend = contend;
  row.context = context;
  row.pattern = pattern;
  row.precision = precision;
  at::manual_seed(1);
  models::SparseTransformer model(config_for(o, context, pattern, precision));
  row.parameters = model->parameter_count();
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-4));
  const at::Tensor bytes = at::randint(0, 256, {o.batch, context}, at::kLong);
  auto step = [&] {
    optimizer.zero_grad();
    const at::Tensor logits = model->forward(bytes);
    at::cross_entropy_loss(logits.reshape({-1, 256}), bytes.reshape({-1})).backward();
    optimizer.step();
  };
  release_free_memory();
  reset_peak_rss();
  const int64_t before = current_rss_bytes();
  BusyPrograms busy(contend, 3600);  // stopped when the row is timed
  const Timing t = time_median(step, o.repeats, 120.0);
  busy.stop();
  row.step_ms = t.median_ms;
  row.repeats = t.repeats;
  row.peak_mb = to_mb(peak_rss_bytes() - before);
  return row;
}

void run(const TrainBenchOptions& o) {
  // Every core, as every stx program, unless --threads: Debian's LibTorch starts with one thread.
  const int threads = o.threads > 0 ? o.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  omp_set_num_threads(threads);
  engine::reuse_freed_memory(!o.recompute);  // as the trainer does
  std::printf("stx-bench train: one training step (forward + backward + AdamW), d_model %lld, %lld layers, %lld heads, "
              "batch %lld, l=%lld c=%lld, block %d%s, %d LibTorch threads\n",
              static_cast<long long>(o.d_model), static_cast<long long>(o.layers), static_cast<long long>(o.heads),
              static_cast<long long>(o.batch), static_cast<long long>(o.stride), static_cast<long long>(o.summary),
              o.block, o.recompute ? ", recompute" : "", at::get_num_threads());
  // bf16 on the CPU means the linear layers in bf16 (effective_precision): only where the processor has
  // AVX512-BF16; elsewhere the model would run in fp32 and the rows would repeat the fp32 ones.
  std::vector<std::string> precisions;
  for (const std::string& p : o.precisions) {
    if (p == "bf16" && !models::cpu_has_fast_bf16()) {
      std::printf("bf16: skipped, this processor has no AVX512-BF16 (a bf16 model trains in fp32 here)\n");
      continue;
    }
    precisions.push_back(p);
  }
  std::printf("%8s  %-8s  %-9s  %10s  %4s  %8s  %9s  %8s  %8s\n", "context", "pattern", "precision", "params",
              "busy", "step_ms", "vs_dense", "vs_alone", "peak_mb");
  // Dense, when asked for, is timed first at each context, so that every other row has its ratio.
  std::vector<std::string> patterns = o.patterns;
  std::stable_partition(patterns.begin(), patterns.end(), [](const std::string& p) { return p == "dense"; });
  std::vector<Row> rows;
  for (int64_t context : o.contexts) {
    for (const std::string& precision : precisions) {  // each precision against its own dense row
      double dense_ms = 0;
      for (const std::string& pattern : patterns) {
        double alone_ms = 0;
        for (const int busy : o.contend) {
          Row row = run_row(o, context, pattern, precision, busy);
          if (pattern == "dense" && alone_ms == 0) dense_ms = row.step_ms;
          if (alone_ms == 0) {
            alone_ms = row.step_ms;
            row.ratio_vs_dense = dense_ms > 0 ? dense_ms / row.step_ms : 0;
          } else {
            row.vs_alone = alone_ms / row.step_ms;
          }
          char ratio[16] = "-", alone[16] = "-";
          if (row.ratio_vs_dense > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", row.ratio_vs_dense);
          if (row.vs_alone > 0) std::snprintf(alone, sizeof alone, "%.2fx", row.vs_alone);
          std::printf("%8lld  %-8s  %-9s  %10lld  %4d  %8.0f  %9s  %8s  %8.0f\n", static_cast<long long>(context),
                      pattern.c_str(), precision.c_str(), static_cast<long long>(row.parameters), row.contend,
                      row.step_ms, ratio, alone, row.peak_mb);
          std::fflush(stdout);
          rows.push_back(row);
        }
      }
    }
  }
  if (o.json_path.empty()) return;
  nlohmann::json records = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json record = {{"context", r.context}, {"pattern", r.pattern}, {"precision", r.precision}, {"step_ms", r.step_ms},
                             {"peak_mb", r.peak_mb}, {"parameters", r.parameters}, {"repeats", r.repeats},
                             {"d_model", o.d_model}, {"layers", o.layers}, {"heads", o.heads}, {"batch", o.batch},
                             {"threads", at::get_num_threads()}, {"contend", r.contend}};
    record["ratio_vs_dense"] = r.ratio_vs_dense > 0 ? nlohmann::json(r.ratio_vs_dense) : nlohmann::json(nullptr);
    if (r.vs_alone > 0) record["vs_alone"] = r.vs_alone;
    records.push_back(record);
  }
  engine::write_file_atomic(o.json_path, records.dump(2) + "\n");
  std::printf("wrote %s\n", o.json_path.c_str());
}

}  // namespace

void register_train_command(CLI::App& parent) {
  auto o = std::make_shared<TrainBenchOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "train", "Time a training step of one small model with dense, fixed and strided attention (paper Table 2)");
  cmd->add_option("--context", o->contexts, "Context lengths; repeat or give a comma list")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{16}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--precision", o->precisions,
                  "Activation precisions, side by side: fp32, bf16 (the linear layers in bf16 where the CPU has "
                  "AVX512-BF16; each against a dense row of its own)")
      ->delimiter(',')
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--pattern", o->patterns, "Patterns; dense, when listed, is timed first and gives the ratios")
      ->delimiter(',')
      ->check(CLI::IsMember({"dense", "fixed", "strided"}))
      ->capture_default_str();
  cmd->add_option("--d-model", o->d_model, "Model width")->check(CLI::Range(16, 4096))->capture_default_str();
  cmd->add_option("--layers", o->layers, "Residual blocks")->check(CLI::Range(1, 128))->capture_default_str();
  cmd->add_option("--heads", o->heads, "Attention heads")->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--batch", o->batch, "Sequences per step")->check(CLI::Range(1, 256))->capture_default_str();
  cmd->add_option("--stride", o->stride, "Stride l")->check(CLI::Range(1, 65536))->capture_default_str();
  cmd->add_option("--summary", o->summary, "Summary cells c of fixed")->check(CLI::Range(1, 65536))->capture_default_str();
  cmd->add_option("--block", o->block, "Kernel block size")->check(CLI::IsMember({16, 32, 64, 128}))->capture_default_str();
  cmd->add_flag("--recompute", o->recompute, "Recompute each block's activations in backward");
  cmd->add_option("--repeats", o->repeats, "Timed steps after one warm-up; the median is reported")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (0: every core)")->check(CLI::Range(0, 1024))->capture_default_str();
  cmd->add_option("--contend", o->contend,
                  "Busy programs (`sh -c 'while :; do :; done'`) to run beside each row, side by side (comma list; "
                  "the first, normally 0, is the reference of vs_alone)")
      ->delimiter(',')
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  cmd->add_option("--json", o->json_path, "Also write the records as a JSON array to this file");
  cmd->callback([o] { run(*o); });
}

}  // namespace stx::bench
