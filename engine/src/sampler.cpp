#include "stx/engine/sampler.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "stx/engine/device.h"
#include "stx/engine/error.h"
#include "stx/models/token_decoder.h"

namespace stx::engine {
namespace {

using Clock = std::chrono::steady_clock;

// Prompt positions read per call to the decoder: enough rows for its products to read each weight once
// for many positions, few enough (a few ms) that progress and a Stop still come between calls.
constexpr int64_t kPromptChunk = 64;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// SplitMix64: spreads (seed, sample index) into independent generator seeds.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

bool ends_with(const std::vector<uint8_t>& bytes, size_t from, const std::string& suffix) {
  if (suffix.empty() || bytes.size() - from < suffix.size()) return false;
  return std::equal(suffix.begin(), suffix.end(), bytes.end() - static_cast<std::ptrdiff_t>(suffix.size()),
                     [](char a, uint8_t b) { return static_cast<uint8_t>(a) == b; });
}

void check_request(const models::ModelConfig& config, const SampleRequest& r) {
  r.settings.validate();
  const auto prompt = static_cast<int64_t>(r.prompt.size());
  if (r.count < 1 || r.count > 256) throw Error("samples: expected 1..256, got " + std::to_string(r.count));
  if (r.length < 1 || r.length > config.context) {
    throw Error("sample length " + std::to_string(r.length) + " is outside 1.." + std::to_string(config.context) +
                " (the model's context)");
  }
  if (prompt >= r.length) {
    throw Error("the prompt (" + std::to_string(prompt) + " bytes) leaves nothing to generate in " +
                std::to_string(r.length) + " bytes");
  }
  if (r.probe_layer >= config.layers || r.probe_head < 0 || r.probe_head >= config.heads) {
    throw Error("attention probe: the model has " + std::to_string(config.layers) + " layers of " +
                std::to_string(config.heads) + " heads; layer " + std::to_string(r.probe_layer) + " head " +
                std::to_string(r.probe_head) + " does not exist");
  }
  if (!(r.event_interval_seconds >= 0)) throw Error("event interval must be >= 0");
}

}  // namespace

static std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

void SamplingSettings::validate() const {
  if (!(temperature >= 0.0 && temperature <= 100.0)) {
    throw Error("temperature must be in [0, 100], got " + number(temperature), {"temperature"});
  }
  if (top_k < 0 || top_k > 256) throw Error("top-k must be in 0..256 (0: off), got " + std::to_string(top_k), {"top_k"});
  if (!(top_p > 0.0 && top_p <= 1.0)) throw Error("top-p must be in (0, 1], got " + number(top_p), {"top_p"});
}

int pick_byte(const float* logits, const SamplingSettings& settings, double u) {
  std::array<int, 256> order;
  std::iota(order.begin(), order.end(), 0);
  if (settings.temperature == 0.0) {
    return *std::max_element(order.begin(), order.end(), [&](int a, int b) { return logits[a] < logits[b]; });
  }
  // Only top-k and top-p need the bytes ranked (most likely first; ties keep byte order, so the choice is a
  // function of the logits and u alone). Plain sampling walks them in byte order: no sort per token.
  const bool truncated = (settings.top_k > 0 && settings.top_k < 256) || settings.top_p < 1.0;
  if (truncated) {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  }
  const double top = truncated ? logits[order[0]] : *std::max_element(logits, logits + 256);
  std::array<double, 256> p;
  double total = 0.0;
  for (int r = 0; r < 256; ++r) {
    p[r] = std::exp((logits[order[r]] - top) / settings.temperature);
    total += p[r];
  }
  int kept = settings.top_k > 0 ? settings.top_k : 256;
  if (settings.top_p < 1.0) {
    double cumulative = 0.0;
    for (int r = 0; r < kept; ++r) {
      cumulative += p[r] / total;
      if (cumulative >= settings.top_p) {
        kept = r + 1;
        break;
      }
    }
  }
  double kept_total = 0.0;
  for (int r = 0; r < kept; ++r) kept_total += p[r];
  double target = u * kept_total;
  for (int r = 0; r < kept; ++r) {
    target -= p[r];
    if (target < 0.0) return order[r];
  }
  return order[kept - 1];  // u * total rounded up to the very end
}

SampleResult sample(models::SparseTransformer& model, const SampleRequest& request, const EventSink& sink,
                    const std::atomic<bool>* cancel) {
  const models::ModelConfig& config = model->config();
  check_request(config, request);
  SampleResult result;
  result.seed = request.seed ? *request.seed : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  const int64_t count = request.count, length = request.length;
  const auto prompt = static_cast<int64_t>(request.prompt.size());
  auto emit = [&](const Event& e) {
    if (sink) sink(e);
  };
  const std::string device = resolve_generation_device(request.device);
  result.device = device_description(device);
  emit(SampleStarted{result.seed, count, prompt, length, result.device});

  // IncrementalDecoder on the CPU, TorchDecoder on CUDA (token_decoder.h).
  const std::unique_ptr<models::TokenDecoder> decoder = models::make_decoder(
      model, count, length, request.half_precision_cache ? kernels::DType::f16 : kernels::DType::f32,
      device == "cuda" ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU));
  if (request.probe_layer >= 0) decoder->set_probe(request.probe_layer, request.probe_head);
  std::vector<std::mt19937_64> rngs;
  for (int64_t k = 0; k < count; ++k) rngs.emplace_back(mix(result.seed ^ mix(static_cast<uint64_t>(k))));
  result.samples.assign(static_cast<size_t>(count), request.prompt);
  std::vector<std::vector<uint8_t>> fed(static_cast<size_t>(count), request.prompt);  // what the model saw
  std::vector<bool> finished(static_cast<size_t>(count), false);
  std::vector<size_t> sent(static_cast<size_t>(count), request.prompt.size());  // bytes already streamed
  std::vector<int32_t> inputs(static_cast<size_t>(count));
  std::vector<float> logits(static_cast<size_t>(count * 256));

  const Clock::time_point start = Clock::now();
  Clock::time_point last_event = start;
  // When the first byte is drawn: reading a long prompt (a clip to continue) takes seconds, and its time
  // would otherwise make the generation rate look slower than it is.
  Clock::time_point generation_start = start;
  // The first call also pays for the threads' start and the caches' first pages (tens of ms): the prompt's
  // rate, and the ETA without a prompt, come from the calls after it, so the first ETA is not an hour.
  Clock::time_point after_first_step = start;
  int64_t position = 0, done = 0;  // done: positions stepped through, prompt included
  int64_t first_done = 0;          // done after the first call to the decoder (a step, or a prompt's chunk)
  std::vector<int32_t> prompt_inputs(
      static_cast<size_t>(std::min(kPromptChunk, std::max<int64_t>(prompt, 1))));
  // While a sample may still end in a stop string, its last bytes could be the start of one: they are held
  // back until it is clear, so a listener never shows a stop string that is then taken away.
  size_t hold_back = 0;
  for (const std::string& stop : request.stop_strings) hold_back = std::max(hold_back, stop.size());
  hold_back = hold_back > 0 ? hold_back - 1 : 0;
  auto flush = [&](bool last) {
    for (int64_t k = 0; k < count; ++k) {
      const std::vector<uint8_t>& s = result.samples[k];
      const size_t ready = last || finished[k] ? s.size() : s.size() - std::min(s.size() - sent[k], hold_back);
      if (ready <= sent[k]) continue;
      emit(SampleBytes{k, static_cast<int64_t>(sent[k]), std::string(s.begin() + sent[k], s.begin() + ready)});
      sent[k] = ready;
    }
    const double elapsed = seconds_since(start);
    // While the prompt is read, the prompt bytes read per second; after, the bytes drawn per second since
    // the first was drawn. Both count every sample.
    const bool reading_prompt = done <= prompt && prompt > 0;
    const double since_first = seconds_since(after_first_step);
    const double counted = reading_prompt
                               ? static_cast<double>(std::max<int64_t>(done - first_done, 0) * count)
                               : static_cast<double>(result.generated_bytes);
    const double over = reading_prompt ? since_first : seconds_since(generation_start);
    const double rate = over > 0 ? counted / over : 0.0;
    // A negative ETA is shown as unknown. After one step alone nothing tells the pace yet. A prompt is read
    // for one sample, many positions at once, so its pace says nothing of generating's: the ETA waits for a
    // generated step, then comes from those alone.
    double eta = -1.0;
    if (done == length) {
      eta = 0.0;
    } else if (prompt > 0 && done > prompt) {
      eta = seconds_since(generation_start) / static_cast<double>(done - prompt) *
            static_cast<double>(length - done);
    } else if (prompt == 0 && done > 1) {
      eta = since_first / static_cast<double>(done - 1) * static_cast<double>(length - done);
    }
    emit(SampleProgress{done, length, rate, elapsed, eta});
    if (request.probe_layer >= 0 && done > 0) {
      for (int64_t k = 0; k < count; ++k) {
        AttentionProbe probe;
        probe.sample = k;
        probe.layer = request.probe_layer;
        probe.head = request.probe_head;
        probe.position = done - 1;
        decoder->probe(k, probe.positions, probe.weights);
        emit(probe);
      }
    }
    last_event = Clock::now();
  };

  // Draws every unfinished sample's byte at `position` from the logits; true once every sample has ended
  // in a stop string.
  auto draw_next_bytes = [&] {
    bool all_finished = true;
    for (int64_t k = 0; k < count; ++k) {
      if (finished[k]) {
        fed[k].push_back(0);  // keeps the batch in step; nothing reads what follows a finished sample
        continue;
      }
      const uint8_t byte =
          static_cast<uint8_t>(pick_byte(logits.data() + k * 256, request.settings, uniform(rngs[k])));
      fed[k].push_back(byte);
      std::vector<uint8_t>& s = result.samples[k];
      s.push_back(byte);
      ++result.generated_bytes;
      for (const std::string& stop : request.stop_strings) {
        if (ends_with(s, static_cast<size_t>(prompt), stop)) {
          s.resize(s.size() - stop.size());
          finished[k] = true;
          break;
        }
      }
      all_finished = all_finished && finished[k];
    }
    return all_finished;
  };

  for (; position < length; ++position) {
    if (cancel && cancel->load()) {
      result.cancelled = true;
      break;
    }
    if (position == prompt) generation_start = Clock::now();
    if (position < prompt) {
      // Every sample reads the same prompt: the decoder reads it for one, kPromptChunk positions at a time,
      // and copies its keys and values. Between chunks, progress and a Stop are seen as between steps.
      const int64_t chunk = std::min(kPromptChunk, prompt - position);
      for (int64_t k = 0; k < chunk; ++k) {
        const int64_t at = position + k;
        prompt_inputs[static_cast<size_t>(k)] = at == 0 ? 256 : request.prompt[static_cast<size_t>(at - 1)];
      }
      decoder->step_common_prefix(prompt_inputs.data(), chunk);
      position += chunk - 1;
    } else {
      for (int64_t k = 0; k < count; ++k) inputs[k] = position == 0 ? 256 : fed[k][position - 1];
      decoder->step(inputs.data(), logits.data());
    }
    if (done == 0) first_done = position + 1;
    done = position + 1;
    if (done == first_done) after_first_step = Clock::now();
    // The prompt is given, not drawn; a long one still shows its progress below.
    if (position >= prompt && draw_next_bytes()) break;
    if (seconds_since(last_event) >= request.event_interval_seconds) flush(false);
  }
  flush(true);
  result.seconds = seconds_since(start);
  result.prompt_seconds = done > prompt || prompt == 0
                              ? std::chrono::duration<double>(generation_start - start).count()
                              : result.seconds;  // stopped while the prompt was read
  const double generating = result.seconds - result.prompt_seconds;
  result.tokens_per_second = generating > 0 ? static_cast<double>(result.generated_bytes) / generating : 0.0;
  return result;
}

SampleResult regenerate(models::SparseTransformer& model, const std::vector<uint8_t>& previous, int64_t keep,
                        SampleRequest request, const EventSink& sink, const std::atomic<bool>* cancel) {
  if (keep < 0 || keep > static_cast<int64_t>(previous.size())) {
    throw Error("regenerate: position " + std::to_string(keep) + " is outside the sample's 0.." +
                std::to_string(previous.size()) + " bytes");
  }
  request.prompt.assign(previous.begin(), previous.begin() + keep);
  return sample(model, request, sink, cancel);
}

}  // namespace stx::engine
