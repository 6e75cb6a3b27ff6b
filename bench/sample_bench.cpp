#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <omp.h>
#include <torch/cuda.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "contention.h"
#include "stx/engine/io/atomic_file.h"
#include "stx/engine/tensor_sampler.h"
#include "stx/kernels/attention.h"
#include "stx/models/cpu_decoder.h"
#include "stx/models/device_expert.h"
#include "stx/models/expert_decoder.h"
#include "stx/models/model_config.h"
#include "stx/models/sparse_transformer.h"
#include "stx/models/torch_decoder.h"
#include "timing.h"

namespace stx::bench {
namespace {

struct SampleBenchOptions {
  std::vector<std::string> models = {"image", "text", "audio", "audio-long"};
  std::vector<int64_t> batches = {1, 8};
  int64_t audio_context = 65536;
  int64_t audio_stride = 0;  // 0: the preset's
  double seconds_per_row = 1.0;
  int threads = 0;  // 0: every core
  bool dense = true;
  // Both by default, timed one after the other at each position, so their ratio is measured side by side.
  std::vector<std::string> kv_caches = {"float32", "float16"};
  std::vector<std::string> cpu_paths = {"auto"};
  // float16: the model's weights rounded to halves first, as `stx export --fp16` stores the bundled models,
  // so the decoder keeps its matrices as halves. Timed after the float32 weights at each position.
  std::vector<std::string> weights = {"float32"};
  // Also time reading a prompt from each position: what `stx sample --prompt` does before drawing.
  bool prompt = false;
  std::vector<int64_t> positions;  // empty: positions_for() the model's context
  // Rounds > 1: every row's seconds split into that many rounds, each of which times every position and
  // setting of a batch in turn. A machine that slows down for a while then slows both sides of a ratio, and
  // rows report medians over the rounds.
  int rounds = 1;
  // Busy programs beside the timed decoding (bench/contention.h), side by side at each position: the rate
  // with other work on the machine against the rate alone (0).
  std::vector<int> contend = {0};
  // Audio: the linear-prediction expert's order (models::ModelConfig::expert; 0: none), side by side at each
  // position, so that its cost per sample is measured against the network alone.
  std::vector<int64_t> expert_orders = {0};
  // cpu: IncrementalDecoder; cuda: TorchDecoder, each step as generation ran it before ("step", the logits
  // copied to the host every step), drawn on the device in blocks ("resident", decode_steps_on_device), and
  // those blocks replayed from a CUDA graph ("graph", DeviceBlockDrawer, as the sampler draws them).
  std::vector<std::string> devices = {"cpu"};
  std::string json_path;
};

// Steps a resident row draws on the device between two reads of their bytes, as the sampler does.
constexpr int64_t kResidentBlock = 32;

struct Row {
  std::string model, pattern, kv_cache, weights, cpu_path;
  std::string mode = "step";  // or "prompt": positions read as a prompt all samples share; or "resident"
  std::string device = "cpu";
  int64_t batch = 0, position = 0, parameters = 0;
  int contend = 0;  // busy threads beside it
  int64_t expert = 0;  // the linear-prediction expert's order, 0 for none
  double tokens_per_s = 0, steps_per_s = 0;
  double launches_per_step = -1;  // graph rows: the graph's launches over its steps; -1 elsewhere
  double vs_first = 0;  // tokens/s against the first row timed at this position; 0 for that row itself
  double vs_first_position = 0;  // tokens/s against this setting's first position; 0 at that position
  std::vector<double> tokens_per_s_by_round;  // what the median above was taken over
};

// The small preset of each data kind, audio at the 65,536 context (5.5 s of 12 kHz audio) with the
// preset's l = 128; and audio-long, the preset made for that context (l = 256 = sqrt(n)).
models::ModelConfig config_for(const SampleBenchOptions& o, const std::string& model, bool dense) {
  models::ModelConfig c = models::preset(model == "audio-long" ? model : model + "-small");
  if (model == "audio") c.context = o.audio_context;
  if (model == "audio" && o.audio_stride > 0) c.stride = o.audio_stride;
  if (dense) c.pattern = kernels::Pattern::dense;
  c.name = model + (dense ? "-dense" : "");
  c.validate();
  return c;
}

// Positions to time: early, middle and late in the context.
std::vector<int64_t> positions_for(int64_t context) {
  std::vector<int64_t> p = {std::min<int64_t>(1000, context / 8), context / 2, context - context / 16};
  if (context >= 65536) p = {1000, 16000, 60000};
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

// Positions of a prompt read per call, as the sampler reads them.
constexpr int64_t kPromptChunk = 64;
// A row needs a warm-up and 8 timed steps (or prompt calls) before the end of the context.
constexpr int64_t kTimedPositions = 9;

// The decoder a row times, from `position` on: one call steps it `per_call` positions (a step, a prompt's
// chunk, or a resident block) and returns how many it stepped.
struct TimedDecoder {
  std::unique_ptr<models::TokenDecoder> decoder;
  std::function<int64_t()> call;
  std::function<double()> launches_per_step;  // graph rows only
};

TimedDecoder cpu_decoder_at(models::SparseTransformer& model, int64_t batch, int64_t position,
                            const std::string& kv_cache, const std::string& weights, bool prompt) {
  const int64_t capacity = model->config().context;
  auto network = std::make_unique<models::IncrementalDecoder>(
      model, batch, capacity, kv_cache == "float16" ? kernels::DType::f16 : kernels::DType::f32);
  if (weights == "float16" && network->half_weight_matrices() == 0) {
    throw std::logic_error("stx-bench sample: the float16 model's matrices were not kept as halves");
  }
  stx::models::skip_to_for_timing(*network, position);
  // The model's inputs from its history (amplitudes, the expert) as generation decodes them.
  TimedDecoder t;
  t.decoder = models::with_history_inputs(model, std::move(network));
  if (auto* expert = dynamic_cast<models::ExpertDecoder*>(t.decoder.get())) {
    // Each predictor reads a tone first, so that every timed step pays for fits over a whole window.
    std::vector<uint8_t> tone(static_cast<size_t>(2 * model->config().expert.window));
    for (size_t i = 0; i < tone.size(); ++i) tone[i] = static_cast<uint8_t>(128 + 60 * std::sin(0.05 * static_cast<double>(i)));
    models::warm_for_timing(*expert, tone.data(), static_cast<int64_t>(tone.size()));
  }
  // A prompt: chunks of positions every sample shares (steps_per_s counts positions); else single steps.
  // Near the end of the context, smaller chunks: a warm-up and 8 timed calls must fit.
  const int64_t per_call =
      prompt ? std::clamp<int64_t>((capacity - position) / kTimedPositions, 1, kPromptChunk) : 1;
  auto inputs = std::make_shared<std::vector<int32_t>>(static_cast<size_t>(std::max(batch, per_call)), 65);
  auto logits = std::make_shared<std::vector<float>>(static_cast<size_t>(batch * 256));
  models::TokenDecoder* decoder = t.decoder.get();
  t.call = [=] {
    if (decoder->position() + per_call > capacity) return int64_t{0};
    if (prompt) {
      decoder->step_common_prefix(inputs->data(), per_call);
    } else {
      decoder->step(inputs->data(), logits->data());
    }
    return per_call;
  };
  return t;
}

TimedDecoder cuda_decoder_at(models::SparseTransformer& model, int64_t batch, int64_t position,
                             const std::string& kv_cache, const std::string& mode) {
  const int64_t capacity = model->config().context;
  const bool resident = mode == "resident" || mode == "graph";
  auto network = std::make_unique<models::TorchDecoder>(
      model, batch, capacity, kv_cache == "float16" ? kernels::DType::f16 : kernels::DType::f32,
      at::Device(at::kCUDA, 0));
  // A graph row first draws an eager block and the block it captures (and replays), before the position.
  const int64_t start = mode == "graph" ? std::max<int64_t>(0, position - 3 * kResidentBlock) : position;
  network->skip_to_for_timing(start);
  models::TorchDecoder* torch_decoder = network.get();
  TimedDecoder t;
  t.decoder = models::with_history_inputs(model, std::move(network));
  const bool with_expert = dynamic_cast<models::ExpertDecoder*>(t.decoder.get()) != nullptr;
  if (resident && t.decoder.get() != torch_decoder && !with_expert) {
    throw std::invalid_argument(
        "stx-bench sample: a model with amplitude inputs decodes on the host: no "
        "resident rows");
  }
  models::TokenDecoder* decoder = t.decoder.get();
  if (resident) {
    const at::Device device = torch_decoder->device();
    const auto options = at::TensorOptions().device(device);
    auto first = std::make_shared<at::Tensor>(at::full({batch}, 65, options.dtype(at::kLong)));
    // The expert's steps on the device too, its history a tone up to the start (and its fit over it).
    std::shared_ptr<models::DeviceLinearExpert> expert;
    if (with_expert) {
      expert = std::make_shared<models::DeviceLinearExpert>(model, batch, capacity, device);
      std::vector<uint8_t> tone(static_cast<size_t>(std::max<int64_t>(start, 1)));
      for (size_t i = 0; i < tone.size(); ++i)
        tone[i] = static_cast<uint8_t>(128 + 60 * std::sin(0.05 * static_cast<double>(i)));
      if (start > 0) expert->fill_for_timing(tone.data(), start);
    }
    auto drawer = std::make_shared<engine::DeviceBlockDrawer>(*torch_decoder, engine::SamplingSettings{},
                                                              kResidentBlock, expert.get(), mode == "graph");
    t.call = [=, keep_expert = expert] {  // the drawer holds the expert by pointer
      // Blocks as the sampler draws them: ending on multiples of the block and at the expert's fits. The
      // bytes come back to the host once a block.
      const int64_t steps = drawer->next_block_steps(capacity);
      if (steps < 1) return int64_t{0};
      const at::Tensor uniforms = at::rand({steps, batch}, options.dtype(at::kDouble));
      const at::Tensor drawn = drawer->draw(*first, uniforms);
      *first = drawn[steps - 1].clone();
      (void)drawn.to(at::kCPU);
      return steps;
    };
    if (mode == "graph") {
      // The eager block and the captured one (after a short first block to the alignment).
      for (int calls = 0; calls < 3 && !drawer->graphed() && t.call() > 0;) ++calls;
      t.launches_per_step = [drawer] { return drawer->launches_per_step(); };
      if (!drawer->graphed()) std::printf("# %s\n", drawer->graph_status().c_str());
    }
  } else {
    auto inputs = std::make_shared<std::vector<int32_t>>(static_cast<size_t>(batch), 65);
    auto logits = std::make_shared<std::vector<float>>(static_cast<size_t>(batch * 256));
    t.call = [=] {
      if (decoder->position() + 1 > capacity) return int64_t{0};
      decoder->step(inputs->data(), logits->data());
      return int64_t{1};
    };
  }
  return t;
}

// Steps the decoder from `position` for about `seconds` (at least 8 calls, never past the context), or with
// `prompt`, reads a prompt every sample shares from there, as many positions a call as the sampler does.
Row time_at(models::SparseTransformer& model, int64_t batch, int64_t position, double seconds,
            const std::string& kv_cache, const std::string& weights, const std::string& mode,
            const std::string& device, int contend) {
  TimedDecoder timed = device == "cuda"
                           ? cuda_decoder_at(model, batch, position, kv_cache, mode)
                           : cpu_decoder_at(model, batch, position, kv_cache, weights, mode == "prompt");
  // Started before the warm-up, so that the scheduler has seen them before the clock starts.
  BusyPrograms busy(contend, 10 * seconds + 60);
  timed.call();  // warm-up: first touch of the buffers
  const auto start = std::chrono::steady_clock::now();
  int64_t steps = 0, calls = 0;
  double elapsed = 0;
  while (calls < 8 || elapsed < seconds) {
    const int64_t stepped = timed.call();
    if (stepped == 0) break;  // the end of the context
    steps += stepped;
    ++calls;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  busy.stop();
  Row r;
  r.contend = contend;
  r.mode = mode;
  r.batch = batch;
  r.position = position;
  r.steps_per_s = static_cast<double>(steps) / elapsed;
  r.tokens_per_s = r.steps_per_s * static_cast<double>(batch);
  if (timed.launches_per_step) r.launches_per_step = timed.launches_per_step();
  return r;
}

void print_row(const Row& r) {
  char ratio[32] = "", by_position[32] = "";
  if (r.vs_first > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", r.vs_first);
  if (r.vs_first_position > 0) std::snprintf(by_position, sizeof by_position, "%.2fx", r.vs_first_position);
  std::printf("%-10s  %-8s  %9lld  %-7s  %-7s  %6lld  %5lld  %4d  %8lld  %10.0f  %9.0f  %8s  %-8s  %-6s  %-8s  %s\n",
              r.model.c_str(), r.pattern.c_str(), static_cast<long long>(r.parameters), r.weights.c_str(),
              r.kv_cache.c_str(), static_cast<long long>(r.expert), static_cast<long long>(r.batch), r.contend,
              static_cast<long long>(r.position), r.tokens_per_s, r.steps_per_s, ratio,
              r.device == "cuda" ? "cuda" : r.cpu_path.c_str(), r.device.c_str(), r.mode.c_str(), by_position);
  if (r.launches_per_step >= 0)
    std::printf("%-10s  (the graph replays %.1f launches a step)\n", "", r.launches_per_step);
  std::fflush(stdout);
}

void run(const SampleBenchOptions& o) {
  const int threads = o.threads > 0 ? o.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  omp_set_num_threads(threads);
  for (const std::string& device : o.devices) {
    if (device == "cuda" && !(torch::cuda::is_available() && kernels::cuda_device_available())) {
      throw std::invalid_argument("--device cuda: no CUDA device here (or a LibTorch or stx_kernels built "
                                  "without CUDA)");
    }
  }
  std::printf("stx-bench sample: incremental decoding (IncrementalDecoder on the CPU, TorchDecoder on CUDA), "
              "random weights, %d threads; tokens/s counts every sample of the batch\n", threads);
  std::printf("%-10s  %-8s  %9s  %-7s  %-7s  %6s  %5s  %4s  %8s  %10s  %9s  %8s  %-8s  %-6s  %-8s  %s\n",
              "model", "pattern", "params", "weights", "kv", "expert", "batch", "busy", "position", "tokens/s",
              "steps/s", "vs first", "cpu", "device", "mode", "vs first position");
  std::fflush(stdout);
  std::vector<Row> rows;
  for (const std::string& name : o.models) {
    for (bool dense : {false, true}) {
      if (dense && (!o.dense || name == "audio-long")) continue;  // audio's dense row already shows that curve
      const models::ModelConfig config = config_for(o, name, dense);
      // The same random weights (one seed), and a copy rounded to halves.
      at::manual_seed(1);
      models::SparseTransformer model(config);
      model->eval();
      // Built only when asked for: a second model of the largest preset is a noticeable wait.
      std::optional<models::SparseTransformer> model16;
      if (std::find(o.weights.begin(), o.weights.end(), "float16") != o.weights.end()) {
        at::manual_seed(1);
        model16.emplace(config);
        (*model16)->eval();
        at::NoGradGuard no_grad;
        for (at::Tensor p : (*model16)->parameters()) p.copy_(p.to(at::kHalf).to(at::kFloat));
      }
      std::vector<int64_t> positions = o.positions.empty() ? positions_for(config.context) : o.positions;
      positions.erase(std::remove_if(positions.begin(), positions.end(),
                                     [&](int64_t p) { return p + kTimedPositions > config.context; }),
                      positions.end());
      if (positions.empty()) {
        throw std::invalid_argument("--position: every position given is past, or within " +
                                    std::to_string(kTimedPositions) + " positions of the end of, " + name +
                                    "'s context of " + std::to_string(config.context));
      }
      // The settings timed at each position, side by side: weights, KV cache, instruction set, step or prompt.
      struct Setting {
        std::string weights, kv_cache, cpu_path;
        std::string mode = "step";
        int contend = 0;
        int64_t expert = 0;
        std::string device = "cpu";
      };
      std::vector<Setting> settings;
      for (const int busy : o.contend) {
        for (const int64_t expert : o.expert_orders) {
          if (expert > 0 && config.kind != models::DataKind::audio) continue;
          for (const std::string& w : o.weights) {
            for (const std::string& kv : o.kv_caches) {
              for (const std::string& path : o.cpu_paths) {
                for (const std::string& device : o.devices) {
                  // On the CPU a step, and a prompt's chunk when asked for; on CUDA the host loop's step and,
                  // without amplitude inputs, the resident block, eager and replayed from a graph.
                  std::vector<std::string> modes = {"step"};
                  if (device == "cpu" && o.prompt) modes.push_back("prompt");
                  if (device == "cuda" && config.amplitude_taps == 0) {
                    modes.push_back("resident");
                    modes.push_back("graph");
                  }
                  for (const std::string& mode : modes) settings.push_back({w, kv, path, mode, busy, expert, device});
                }
              }
            }
          }
        }
      }
      // The same network with each expert order asked for (its own weights copied in, the expert's at their
      // start), and its copy with halves, made when first needed.
      std::map<std::pair<int64_t, bool>, models::SparseTransformer> with_expert;
      auto model_for = [&](const Setting& set) -> models::SparseTransformer& {
        models::SparseTransformer& network = set.weights == "float16" ? *model16 : model;
        if (set.expert == 0) return network;
        const auto key = std::make_pair(set.expert, set.weights == "float16");
        auto found = with_expert.find(key);
        if (found == with_expert.end()) {
          models::ModelConfig c = config;
          c.expert.order = set.expert;
          models::SparseTransformer m(c);
          m->eval();
          at::NoGradGuard no_grad;
          auto source = network->named_parameters();
          for (auto& item : m->named_parameters()) {
            if (const at::Tensor* from = source.find(item.key())) item.value().copy_(*from);
          }
          found = with_expert.emplace(key, m).first;
        }
        return found->second;
      };
      for (int64_t batch : o.batches) {
        // timed[s][p]: setting s at position p, one row per round so far.
        std::vector<std::vector<std::vector<Row>>> timed(settings.size(),
                                                         std::vector<std::vector<Row>>(positions.size()));
        for (int round = 0; round < o.rounds; ++round) {
          for (size_t p = 0; p < positions.size(); ++p) {
            for (size_t s = 0; s < settings.size(); ++s) {
              const Setting& set = settings[s];
              // The kernels' instruction set for this row only; "auto" is the processor's best.
              kernels::force_cpu_isa(set.cpu_path == "avx512"     ? kernels::CpuIsa::avx512
                                     : set.cpu_path == "avx2"     ? kernels::CpuIsa::avx2
                                     : set.cpu_path == "portable" ? kernels::CpuIsa::portable
                                                                  : kernels::best_cpu_isa());
              Row r = time_at(model_for(set), batch, positions[p], o.seconds_per_row / o.rounds, set.kv_cache,
                              set.weights, set.mode, set.device, set.contend);
              r.cpu_path = kernels::to_string(kernels::active_cpu_isa());
              r.model = name;
              r.pattern = kernels::to_string(config.pattern);
              r.parameters = model->parameter_count();
              r.kv_cache = set.kv_cache;
              r.weights = set.weights;
              r.expert = set.expert;
              r.device = set.device;
              timed[s][p].push_back(r);
            }
            if (round + 1 < o.rounds) continue;
            // The last round at this position: its rows, each the median over the rounds, and its ratios
            // the medians of the ratios within each round.
            for (size_t s = 0; s < settings.size(); ++s) {
              const std::vector<Row>& runs = timed[s][p];
              Row r = runs.front();
              std::vector<double> tokens, steps, vs_first, vs_first_position;
              for (size_t k = 0; k < runs.size(); ++k) {
                tokens.push_back(runs[k].tokens_per_s);
                steps.push_back(runs[k].steps_per_s);
                vs_first.push_back(runs[k].tokens_per_s / timed[0][p][k].tokens_per_s);
                vs_first_position.push_back(runs[k].tokens_per_s / timed[s][0][k].tokens_per_s);
              }
              r.tokens_per_s_by_round = tokens;
              r.tokens_per_s = median(tokens);
              r.steps_per_s = median(steps);
              r.vs_first = s > 0 ? median(vs_first) : 0;
              r.vs_first_position = p > 0 ? median(vs_first_position) : 0;
              print_row(r);
              rows.push_back(r);
            }
          }
        }
      }
    }
  }
  if (o.json_path.empty()) return;
  nlohmann::json records = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json record = {{"model", r.model},
                             {"pattern", r.pattern},
                             {"position", r.position},
                             {"tokens_per_s", r.tokens_per_s},
                             {"steps_per_s", r.steps_per_s},
                             {"batch", r.batch},
                             {"parameters", r.parameters},
                             {"threads", threads},
                             {"kv_cache", r.kv_cache},
                             {"weights", r.weights},
                             {"cpu_path", r.cpu_path},
                             {"mode", r.mode},
                             {"device", r.device},
                             {"contend", r.contend},
                             {"expert_order", r.expert},
                             {"tokens_per_s_by_round", r.tokens_per_s_by_round}};
    if (r.vs_first > 0) record["vs_first"] = r.vs_first;
    if (r.launches_per_step >= 0) record["launches_per_step"] = r.launches_per_step;
    if (r.vs_first_position > 0) record["vs_first_position"] = r.vs_first_position;
    records.push_back(record);
  }
  engine::write_file_atomic(o.json_path, records.dump(2) + "\n");
  std::printf("wrote %s\n", o.json_path.c_str());
}

}  // namespace

void register_sample_command(CLI::App& parent) {
  auto o = std::make_shared<SampleBenchOptions>();
  CLI::App* cmd = parent.add_subcommand("sample", "Tokens/s of incremental decoding at several positions, "
                                                  "the preset pattern against dense");
  cmd->add_option("--model", o->models, "Models: image, text, audio (their -small presets), audio-long")
      ->delimiter(',')
      ->check(CLI::IsMember({"image", "text", "audio", "audio-long"}))
      ->capture_default_str();
  cmd->add_option("--batch", o->batches, "Samples decoded together; repeat or give a comma list")
      ->delimiter(',')
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--audio-context", o->audio_context, "Context of the audio model")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--audio-stride", o->audio_stride, "Stride l of the audio model (0: the preset's 128)")
      ->check(CLI::Range(int64_t{0}, int64_t{65536}))
      ->capture_default_str();
  cmd->add_option("--seconds", o->seconds_per_row, "Time spent decoding per row, over all its rounds")
      ->check(CLI::Range(0.01, 600.0))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (0: every core)")->check(CLI::Range(0, 1024))->capture_default_str();
  cmd->add_flag("!--no-dense", o->dense, "Skip the dense-pattern models");
  cmd->add_option("--cpu-path", o->cpu_paths,
                  "The kernels' instruction set, side by side: auto (the processor's best), avx512, avx2, portable "
                  "(comma list)")
      ->delimiter(',')
      ->check(CLI::IsMember({"auto", "avx512", "avx2", "portable"}))
      ->capture_default_str();
  cmd->add_option("--kv-cache", o->kv_caches,
                  "KV cache types to time at each position, side by side: float32, float16 (comma list)")
      ->delimiter(',')
      ->check(CLI::IsMember({"float32", "float16"}))
      ->capture_default_str();
  cmd->add_option("--weights", o->weights,
                  "Weights to time at each position, side by side: float32, float16 (the model rounded to halves, "
                  "as the bundled models are stored; comma list)")
      ->delimiter(',')
      ->check(CLI::IsMember({"float32", "float16"}))
      ->capture_default_str();
  cmd->add_option("--position", o->positions,
                  "Positions to time (comma list; default: early, middle and late in each model's context, "
                  "1000, 16000 and 60000 at 65,536); those past, or within 9 positions of the end of, a "
                  "model's context are skipped")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_flag(
      "--prompt", o->prompt,
      "Also time reading a prompt from each position, as `stx sample --prompt` does: 64 positions a call "
      "for all the samples at once (mode \"prompt\"; tokens/s counts every sample, steps/s positions)");
  cmd->add_option("--rounds", o->rounds,
                  "Split each row's seconds into this many rounds, each timing every position and setting in "
                  "turn; rows give the medians over the rounds, so a machine that slows for a while slows "
                  "both sides of a ratio")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--contend", o->contend,
                  "Busy programs (`sh -c 'while :; do :; done'`) to run beside the timed decoding, side by side at "
                  "each position (comma list; "
                  "the first is the reference of \"vs first\", so give 0 first): the rate on a busy machine "
                  "against the rate alone")
      ->delimiter(',')
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  cmd->add_option("--expert", o->expert_orders,
                  "Audio: the linear-prediction expert's order, side by side at each position (comma list; 0: "
                  "none, the reference of \"vs first\" when given first): its cost per sample beside the network's")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{0}, int64_t{1024}))
      ->capture_default_str();
  cmd->add_option(
         "--device", o->devices,
         "Where to decode, side by side at each position (comma list): cpu (the CPU decoder), cuda (the "
         "GPU decoder, as a step with the logits copied to the host and, for a model without amplitude "
         "inputs, as 32-step blocks drawn on the device, the expert's part too: mode \"resident\", and "
         "those blocks replayed from a CUDA graph: mode \"graph\")")
      ->delimiter(',')
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--json", o->json_path, "Also write the records as a JSON array to this file");
  cmd->callback([o] { run(*o); });
}

}  // namespace stx::bench
