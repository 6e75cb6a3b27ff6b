#include "model_commands.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_errors.h"
#include "option_checks.h"
#include "pattern_options.h"
#include "sampling_options.h"
#include "stx/engine/checkpoint.h"
#include "stx/engine/data/dataset.h"
#include "stx/engine/evaluate.h"
#include "stx/engine/model_data.h"
#include "stx/engine/model_session.h"
#include "stx/engine/model_types.h"

namespace stx::cli {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kModelHelp =
    "a model folder, a run folder (its latest checkpoint), or a bundled model's name: image, audio, text";

std::string describe_attention(const engine::ModelConfig& c) {
  std::string text = kernels::to_string(c.pattern);
  if (c.pattern != kernels::Pattern::dense) {
    text += " l=" + std::to_string(c.stride);
    if (c.pattern == kernels::Pattern::fixed) text += " c=" + std::to_string(c.summary);
    text += std::string(", ") + kernels::to_string(c.mode);
  }
  return text;
}

// The linear-prediction expert multiplied into an audio model's output (ModelConfig::expert).
std::string describe_expert(const engine::LinearExpertConfig& e) {
  char ridge[32];
  std::snprintf(ridge, sizeof ridge, "%g", e.ridge);
  return "linear prediction, order " + std::to_string(e.order) + ", refitted every " +
         std::to_string(e.refit_interval) + " samples over the last " + std::to_string(e.window) + ", ridge " +
         ridge + " of the trace, scale from the last " + std::to_string(e.scale_window) + " errors";
}

std::string describe_data(const engine::ModelConfig& c) {
  if (c.kind == engine::DataKind::image) {
    return "image " + std::to_string(c.image_height) + "x" + std::to_string(c.image_width) + "x" +
           std::to_string(c.image_channels);
  }
  return c.kind == engine::DataKind::audio ? "audio (12 kHz mu-law)" : "text (bytes)";
}

}  // namespace

CLI::App* add_export_command(CLI::App& app, ExportOptions& o) {
  CLI::App* command = app.add_subcommand(
      "export", "Write a model folder to share or bundle: config, weights (fp16 with --fp16) and the training "
                "record, without the optimiser state");
  command->add_option("--model", o.model, kModelHelp)->required();
  command->add_option("--out", o.out, "the new model folder")->required();
  command->add_flag("--fp16", o.fp16, "store the weights as fp16 (half the size; loaded back as fp32)");
  command->add_flag("--force", o.force, "replace an existing model folder at --out");
  add_sampling_options(*command, o.sampling);
  command->footer(
      "The sampling options set the export's own sampling defaults (config.json \"sampling\"), which `stx "
      "sample` and the studio start from; left out, the source's are kept.\n"
      "Example:\n  stx export --model runs/fmnist --out my-models/fmnist --fp16");
  return command;
}

int run_export_command(const ExportOptions& o) {
  std::optional<engine::SamplingSettings> sampling;
  if (o.sampling.any()) {
    const engine::CheckpointInfo source = engine::read_checkpoint_info(engine::resolve_checkpoint(o.model));
    sampling = o.sampling.over(source.sampling);
    try {
      sampling->validate();
    } catch (const engine::Error& e) {
      throw UsageError(e);
    }
  }
  engine::export_model(o.model, o.out, o.fp16, o.force, sampling);
  const engine::ModelBundle b = engine::load_checkpoint(o.out);  // read back: what was written loads
  std::printf("exported %s (%lld parameters, %s weights) to %s\n", b.config.name.c_str(),
              static_cast<long long>(b.model->parameter_count()), o.fp16 ? "fp16" : "fp32", o.out.c_str());
  return 0;
}

CLI::App* add_eval_command(CLI::App& app, EvalOptions& o) {
  CLI::App* command = app.add_subcommand("eval", "Print a model's bits per byte on a folder or file");
  command->add_option("--model", o.model, kModelHelp)->required();
  command->add_option("--data", o.data, "data of the model's kind: a folder or a file")->required();
  command->add_option("--split", o.split, "which bytes to score: all, train or validation (the training split rule)")
      ->check(CLI::IsMember({"all", "train", "validation"}))
      ->capture_default_str();
  command->add_option("--windows", o.windows, "score at most this many context windows, spread out (0 = all)")
      ->capture_default_str();
  command->add_option("--batch", o.batch, "windows per forward pass")->capture_default_str();
  command->add_flag("--sliding", o.sliding,
                    "windows every half context, so each byte is predicted from at least half a context of "
                    "earlier bytes (instead of windows that each start cold); about twice the work");
  command->add_flag("--json", o.json, "print the result as JSON");
  command->add_option("--device", o.device, "where to score: cpu, cuda, or auto (CUDA when there is one)")
      ->capture_default_str();
  return command;
}

int run_eval_command(const EvalOptions& o) {
  require_between("--windows", o.windows, 0, int64_t{1} << 40);
  require_between("--batch", o.batch, 1, 4096);
  engine::DeviceKind device = engine::DeviceKind::cpu;
  try {
    device = engine::resolve_training_device(engine::parse_device_choice(o.device));  // a bulk forward, as training
  } catch (const engine::Error& e) {
    throw UsageError(e);
  }
  engine::ModelBundle bundle = engine::load_checkpoint(engine::resolve_checkpoint(o.model));
  engine::move_model_to(bundle.model, device);
  const engine::ModelConfig& c = bundle.config;
  engine::Dataset data = engine::open_dataset(o.data, engine::dataset_options_for(c));
  for (const auto& skipped : data.skipped) {
    std::cerr << "stx eval: skipped " << skipped.reason << "\n";  // the reason names the file
  }
  for (const std::string& warning : data.warnings) std::cerr << "stx eval: warning: " << warning << "\n";
  std::vector<uint8_t> bytes;
  if (o.split != "validation") bytes = std::move(data.train);
  if (o.split != "train") bytes.insert(bytes.end(), data.validation.begin(), data.validation.end());
  const auto start = std::chrono::steady_clock::now();
  if (o.sliding && o.windows > 0) throw UsageError("--sliding scores every byte: drop --windows");
  if (o.sliding && c.kind == engine::DataKind::image) {
    throw UsageError("--sliding is for text and audio: an image model scores each image on its own");
  }
  const engine::EvaluationResult r =
      o.sliding ? engine::evaluate_bits_per_byte_sliding(bundle.model, bytes, c.context, o.batch)
                : engine::evaluate_bits_per_byte(bundle.model, bytes, c.context,
                                                 static_cast<int64_t>(data.record_bytes), o.windows, o.batch);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.json) {
    std::cout << json{{"model", bundle.folder.string()}, {"data", o.data}, {"split", o.split},
                      {"sliding", o.sliding}, {"bits_per_byte", r.bits_per_byte}, {"bytes", r.bytes},
                      {"windows", r.windows},
                      {"seconds", seconds}, {"device", engine::device_description(device)}}
                     .dump()
              << "\n";
  } else {
    std::printf("%.4f bits/byte on %lld bytes (%lld %swindows of up to %lld) of %s [%s], %.1f s\n", r.bits_per_byte,
                static_cast<long long>(r.bytes), static_cast<long long>(r.windows), o.sliding ? "sliding " : "",
                static_cast<long long>(c.context), o.data.c_str(), o.split.c_str(), seconds);
  }
  return 0;
}

CLI::App* add_info_command(CLI::App& app, InfoOptions& o) {
  CLI::App* command = app.add_subcommand("info", "Print a model card: parameters, pattern, context, data, training");
  command->add_option("--model", o.model, kModelHelp)->required();
  command->add_flag("--json", o.json, "print the card as JSON");
  return command;
}

int run_info_command(const InfoOptions& o) {
  // The card reports only what loads: the folder goes through every check `stx sample` makes (a config asking
  // for an absurd model is refused before anything is allocated; then the weights file's format, each tensor's
  // name, shape, dtype and finiteness), so a broken checkpoint is named in one line, never described.
  const engine::ModelBundle b = engine::load_checkpoint(engine::resolve_checkpoint(o.model));
  const engine::ModelConfig& c = b.config;
  const int64_t parameters = c.parameter_count();
  auto finite = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  json card = {{"folder", b.folder.string()},
               {"name", c.name},
               {"parameters", parameters},
               {"data", describe_data(c)},
               {"context", c.context},
               {"attention", describe_attention(c)},
               {"layers", c.layers},
               {"d_model", c.d_model},
               {"heads", c.heads},
               {"d_ff", c.d_ff},
               {"precision", engine::to_string(c.precision)},
               {"precision_on_this_cpu", engine::to_string(engine::effective_precision(c.precision, false))},
               {"weights_hash", b.weights_hash}};
  if (b.state) {
    card["training_steps"] = b.state->step;
    card["training_seconds"] = b.state->train_seconds;
    card["last_validation_bits_per_byte"] = finite(b.state->last_bits_per_byte);
    card["best_validation_bits_per_byte"] = finite(b.state->best_bits_per_byte);
  }
  if (c.expert.enabled()) card["expert"] = describe_expert(c.expert);
  card["sampling"] = {{"temperature", b.sampling.temperature},
                      {"top_k", b.sampling.top_k},
                      {"top_p", b.sampling.top_p},
                      {"min_p", b.sampling.min_p}};
  if (b.training.contains("data")) card["training_data"] = b.training["data"];
  // held_out.json beside the weights: their bits/byte on every held-out byte (bundled models have one).
  const std::optional<double> held_out = engine::read_held_out_bits_per_byte(b.folder);
  if (held_out) card["held_out_bits_per_byte"] = *held_out;
  if (o.json) {
    std::cout << card.dump(2) << "\n";
    return 0;
  }
  std::printf("%s  (%s)\n", c.name.c_str(), b.folder.string().c_str());
  std::printf("  parameters   %.2fM (%lld)\n", static_cast<double>(parameters) / 1e6, static_cast<long long>(parameters));
  std::printf("  data         %s\n", describe_data(c).c_str());
  std::printf("  context      %lld bytes\n", static_cast<long long>(c.context));
  std::printf("  attention    %s, block %d\n", describe_attention(c).c_str(), c.block);
  std::printf("  network      %lld layers, d_model %lld, %lld heads, d_ff %lld\n", static_cast<long long>(c.layers),
              static_cast<long long>(c.d_model), static_cast<long long>(c.heads), static_cast<long long>(c.d_ff));
  if (c.expert.enabled()) std::printf("  expert       %s\n", describe_expert(c.expert).c_str());
  std::printf("  sampling     %s%s\n", describe_sampling(b.sampling).c_str(),
              engine::sampling_to_json(b.sampling).empty() ? "" : " (the model's own defaults)");
  // Weights are fp32 whatever the activations; a bf16 model runs as fp32 on a CPU without AVX512-BF16.
  const engine::Precision here = engine::effective_precision(c.precision, false);
  std::printf("  precision    %s activations, fp32 weights%s\n", engine::to_string(c.precision),
              here == c.precision ? "" : (std::string("; ") + engine::to_string(here) + " on this CPU").c_str());
  if (b.state) {
    std::printf("  training     %lld steps, %s\n", static_cast<long long>(b.state->step),
                (std::to_string(static_cast<long long>(std::lround(b.state->train_seconds))) + " s").c_str());
    if (std::isfinite(b.state->last_bits_per_byte)) {
      std::printf("  validation   %.4f bits/byte (best %.4f at step %lld)\n", b.state->last_bits_per_byte,
                  b.state->best_bits_per_byte, static_cast<long long>(b.state->best_step));
    }
  } else {
    std::printf("  training     (no training state in this folder)\n");
  }
  if (held_out) std::printf("  held out     %.4f bits/byte on every held-out byte (held_out.json)\n", *held_out);
  if (b.training.contains("data")) std::printf("  trained on   %s\n", b.training["data"].get<std::string>().c_str());
  std::printf("  weights      %s\n", b.weights_hash.c_str());
  return 0;
}

}  // namespace stx::cli
