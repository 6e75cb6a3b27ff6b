#include "stx/engine/sampler.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>

#include "stx/engine/device.h"
#include "stx/engine/error.h"
#include "stx/engine/generation_device.h"
#include "stx/engine/tensor_sampler.h"
#include "stx/models/device_expert.h"
#include "stx/models/expert_decoder.h"
#include "stx/models/token_decoder.h"
#include "torch_device.h"

namespace stx::engine {
namespace {

using Clock = std::chrono::steady_clock;

// Prompt positions read per call to the decoder: enough rows for its products to read each weight once
// for many positions, few enough (a few ms) that progress and a Stop still come between calls.
constexpr int64_t kPromptChunk = 64;
// Steps a CUDA decoder draws on the device between two reads of their bytes (and between two looks at Stop):
// one copy to the host per block instead of the logits every step.
constexpr int64_t kDeviceBlock = 32;

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
  if (!(min_p >= 0.0 && min_p < 1.0)) throw Error("min-p must be in [0, 1) (0: off), got " + number(min_p), {"min_p"});
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
    if (p[r] < settings.min_p) p[r] = 0.0;  // p is relative to the most likely byte's, which is 1
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
  // u * total rounded up to the very end: the last byte that may be drawn.
  for (int r = kept - 1; r > 0; --r) {
    if (p[r] > 0.0) return order[r];
  }
  return order[0];
}

namespace {

// One call of sample(): the decoder, each sample's bytes and random stream, and the clocks that the progress
// events are computed from. run() steps through the prompt and then draws byte after byte.
class SamplingRun {
 public:
  SamplingRun(models::SparseTransformer& model, const SampleRequest& request, const EventSink& sink,
              const std::atomic<bool>* cancel)
      : request_(request), sink_(sink), cancel_(cancel), count_(request.count), length_(request.length),
        prompt_(static_cast<int64_t>(request.prompt.size())) {
    check_request(model->config(), request);
    result_.seed = request.seed ? *request.seed
                                : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
    const GenerationDevice chosen = choose_generation_device(model, request);
    const DeviceKind device = chosen.kind;
    result_.device = device_description(device);
    result_.device_reason = chosen.reason;
    emit(SampleStarted{result_.seed, count_, prompt_, length_, result_.device, result_.device_reason});
    // IncrementalDecoder on the CPU, TorchDecoder on CUDA (token_decoder.h).
    decoder_ = models::make_decoder(model, count_, length_,
                                    request.half_precision_cache ? kernels::DType::f16 : kernels::DType::f32,
                                    torch_device(device));
    if (request.probe_layer >= 0) decoder_->set_probe(request.probe_layer, request.probe_head);
    // On a GPU, the network alone or with the linear-prediction expert, and no stop strings (whose check
    // needs each byte on the host as it comes): draw blocks of steps on the device, the expert's part too
    // (DeviceLinearExpert, loaded from the host's predictors once the prompt is read). Each sample still
    // draws one uniform per step from its own stream, so a seed gives the bytes of the host loop on the same
    // device, to the expert's rounding.
    if (device == DeviceKind::cuda && request.stop_strings.empty()) {
      models::TokenDecoder* network = decoder_.get();
      expert_decoder_ = dynamic_cast<models::ExpertDecoder*>(network);
      if (expert_decoder_ != nullptr) network = &expert_decoder_->network();
      device_decoder_ = dynamic_cast<models::TorchDecoder*>(network);
      if (device_decoder_ != nullptr && expert_decoder_ != nullptr) {
        device_expert_ =
            std::make_unique<models::DeviceLinearExpert>(model, count_, length_, device_decoder_->device());
      }
      // Full blocks replay a CUDA graph of the block's launches once one is captured.
      if (device_decoder_ != nullptr) {
        block_drawer_ = std::make_unique<DeviceBlockDrawer>(*device_decoder_, request.settings, kDeviceBlock,
                                                            device_expert_.get());
      }
    }
    for (int64_t k = 0; k < count_; ++k) rngs_.emplace_back(mix(result_.seed ^ mix(static_cast<uint64_t>(k))));
    const auto samples = static_cast<size_t>(count_);
    result_.samples.assign(samples, request.prompt);
    fed_.assign(samples, request.prompt);
    finished_.assign(samples, false);
    sent_.assign(samples, request.prompt.size());
    inputs_.resize(samples);
    logits_.resize(samples * 256);
    prompt_inputs_.resize(static_cast<size_t>(std::min(kPromptChunk, std::max<int64_t>(prompt_, 1))));
    // While a sample may still end in a stop string, its last bytes could be the start of one: they are held
    // back until it is clear, so a listener never shows a stop string that is then taken away.
    for (const std::string& stop : request.stop_strings) hold_back_ = std::max(hold_back_, stop.size());
    hold_back_ = hold_back_ > 0 ? hold_back_ - 1 : 0;
  }

  SampleResult run() {
    start_ = last_event_ = generation_start_ = after_first_step_ = Clock::now();
    for (int64_t position = 0; position < length_; ++position) {
      if (cancel_ && cancel_->load()) {
        result_.cancelled = true;
        break;
      }
      if (position == prompt_) generation_start_ = Clock::now();
      if (position < prompt_) {
        position += read_prompt_chunk(position) - 1;
      } else if (device_decoder_ != nullptr) {
        position += draw_block_on_device(position) - 1;
      } else {
        step(position);
      }
      if (done_ == 0) first_done_ = position + 1;
      done_ = position + 1;
      if (done_ == first_done_) after_first_step_ = Clock::now();
      // The prompt is given, not drawn; a long one still shows its progress below.
      if (position >= prompt_ && device_decoder_ == nullptr && draw_next_bytes()) break;
      if (seconds_since(last_event_) >= request_.event_interval_seconds) flush(false);
    }
    flush(true);
    result_.seconds = seconds_since(start_);
    result_.prompt_seconds = done_ > prompt_ || prompt_ == 0
                                 ? std::chrono::duration<double>(generation_start_ - start_).count()
                                 : result_.seconds;  // stopped while the prompt was read
    const double generating = result_.seconds - result_.prompt_seconds;
    result_.tokens_per_second = generating > 0 ? static_cast<double>(result_.generated_bytes) / generating : 0.0;
    return std::move(result_);
  }

 private:
  void emit(const Event& e) const {
    if (sink_) sink_(e);
  }

  // Every sample reads the same prompt: the decoder reads it for one, kPromptChunk positions at a time, and
  // copies its keys and values. Between chunks, progress and a Stop are seen as between steps. Returns the
  // positions read.
  int64_t read_prompt_chunk(int64_t position) {
    const int64_t chunk = std::min(kPromptChunk, prompt_ - position);
    for (int64_t k = 0; k < chunk; ++k) {
      const int64_t at = position + k;
      prompt_inputs_[static_cast<size_t>(k)] = at == 0 ? 256 : request_.prompt[static_cast<size_t>(at - 1)];
    }
    decoder_->step_common_prefix(prompt_inputs_.data(), chunk);
    return chunk;
  }

  void step(int64_t position) {
    for (int64_t k = 0; k < count_; ++k) inputs_[k] = position == 0 ? 256 : fed_[k][position - 1];
    decoder_->step(inputs_.data(), logits_.data());
  }

  // Steps and draws up to kDeviceBlock positions from `position` on the device (device_decoder_), then takes
  // their bytes as draw_next_bytes() takes one position's. Returns the positions stepped.
  int64_t draw_block_on_device(int64_t position) {
    if (device_expert_ != nullptr && !expert_loaded_) {
      device_expert_->load(*expert_decoder_);
      expert_loaded_ = true;
    }
    // Blocks end on multiples of kDeviceBlock (every full block the captured graph's) and at the expert's fits.
    const int64_t steps = block_drawer_->next_block_steps(length_);
    at::Tensor uniforms = at::empty({steps, count_}, at::kDouble);
    at::Tensor first = at::empty({count_}, at::kLong);
    for (int64_t k = 0; k < count_; ++k) {
      first.data_ptr<int64_t>()[k] = position == 0 ? 256 : fed_[k][position - 1];
      for (int64_t step = 0; step < steps; ++step) {
        uniforms.data_ptr<double>()[step * count_ + k] = uniform(rngs_[k]);
      }
    }
    const at::Device device = device_decoder_->device();
    const at::Tensor drawn =
        block_drawer_->draw(first.to(device), uniforms.to(device)).to(at::kCPU).contiguous();
    for (int64_t step = 0; step < steps; ++step) {
      for (int64_t k = 0; k < count_; ++k) {
        const auto byte = static_cast<uint8_t>(drawn.data_ptr<int64_t>()[step * count_ + k]);
        fed_[k].push_back(byte);
        result_.samples[k].push_back(byte);
        ++result_.generated_bytes;
      }
    }
    return steps;
  }

  // Draws every unfinished sample's next byte from the logits; true once every sample has ended in a stop
  // string.
  bool draw_next_bytes() {
    bool all_finished = true;
    for (int64_t k = 0; k < count_; ++k) {
      if (finished_[k]) {
        fed_[k].push_back(0);  // keeps the batch in step; nothing reads what follows a finished sample
        continue;
      }
      const uint8_t byte =
          static_cast<uint8_t>(pick_byte(logits_.data() + k * 256, request_.settings, uniform(rngs_[k])));
      fed_[k].push_back(byte);
      std::vector<uint8_t>& s = result_.samples[k];
      s.push_back(byte);
      ++result_.generated_bytes;
      for (const std::string& stop : request_.stop_strings) {
        if (ends_with(s, static_cast<size_t>(prompt_), stop)) {
          s.resize(s.size() - stop.size());
          finished_[k] = true;
          break;
        }
      }
      all_finished = all_finished && finished_[k];
    }
    return all_finished;
  }

  // The bytes not sent yet, then the progress and the attention probes.
  void flush(bool last) {
    for (int64_t k = 0; k < count_; ++k) {
      const std::vector<uint8_t>& s = result_.samples[k];
      const size_t ready = last || finished_[k] ? s.size() : s.size() - std::min(s.size() - sent_[k], hold_back_);
      if (ready <= sent_[k]) continue;
      emit(SampleBytes{k, static_cast<int64_t>(sent_[k]), std::string(s.begin() + sent_[k], s.begin() + ready)});
      sent_[k] = ready;
    }
    emit_progress();
    if (request_.probe_layer >= 0 && done_ > 0) emit_probes();
    last_event_ = Clock::now();
  }

  void emit_progress() const {
    // While the prompt is read, the prompt bytes read per second; after, the bytes drawn per second since
    // the first was drawn. Both count every sample.
    const bool reading_prompt = done_ <= prompt_ && prompt_ > 0;
    const double since_first = seconds_since(after_first_step_);
    const double counted = reading_prompt ? static_cast<double>(std::max<int64_t>(done_ - first_done_, 0) * count_)
                                          : static_cast<double>(result_.generated_bytes);
    const double over = reading_prompt ? since_first : seconds_since(generation_start_);
    const double rate = over > 0 ? counted / over : 0.0;
    // A negative ETA is shown as unknown. After one step alone nothing tells the pace yet. A prompt is read
    // for one sample, many positions at once, so its pace says nothing of generating's: the ETA waits for a
    // generated step, then comes from those alone.
    double eta = -1.0;
    if (done_ == length_) {
      eta = 0.0;
    } else if (prompt_ > 0 && done_ > prompt_) {
      eta = seconds_since(generation_start_) / static_cast<double>(done_ - prompt_) *
            static_cast<double>(length_ - done_);
    } else if (prompt_ == 0 && done_ > 1) {
      eta = since_first / static_cast<double>(done_ - 1) * static_cast<double>(length_ - done_);
    }
    emit(SampleProgress{done_, length_, rate, seconds_since(start_), eta});
  }

  void emit_probes() const {
    for (int64_t k = 0; k < count_; ++k) {
      AttentionProbe probe;
      probe.sample = k;
      probe.layer = request_.probe_layer;
      probe.head = request_.probe_head;
      probe.position = done_ - 1;
      decoder_->probe(k, probe.positions, probe.weights);
      emit(probe);
    }
  }

  const SampleRequest& request_;
  const EventSink& sink_;
  const std::atomic<bool>* cancel_;
  const int64_t count_, length_, prompt_;
  SampleResult result_;
  std::unique_ptr<models::TokenDecoder> decoder_;
  models::TorchDecoder* device_decoder_ = nullptr;  // decoder_ itself when it draws blocks on the device
  models::ExpertDecoder* expert_decoder_ = nullptr;  // decoder_ itself when the model has the expert
  std::unique_ptr<models::DeviceLinearExpert>
      device_expert_;  // its steps on the device, with device_decoder_
  bool expert_loaded_ = false;
  std::unique_ptr<DeviceBlockDrawer> block_drawer_;  // with device_decoder_
  std::vector<std::mt19937_64> rngs_;
  std::vector<std::vector<uint8_t>> fed_;  // what the model saw
  std::vector<bool> finished_;
  std::vector<size_t> sent_;  // bytes already streamed
  std::vector<int32_t> inputs_, prompt_inputs_;
  std::vector<float> logits_;
  size_t hold_back_ = 0;

  Clock::time_point start_, last_event_;  // run()'s start: the decoder's set-up is not counted
  // When the first byte is drawn: reading a long prompt (a clip to continue) takes seconds, and its time
  // would otherwise make the generation rate look slower than it is.
  Clock::time_point generation_start_;
  // The first call also pays for the threads' start and the caches' first pages (tens of ms): the prompt's
  // rate, and the ETA without a prompt, come from the calls after it, so the first ETA is not an hour.
  Clock::time_point after_first_step_;
  int64_t done_ = 0;        // positions stepped through, prompt included
  int64_t first_done_ = 0;  // done_ after the first call to the decoder (a step, or a prompt's chunk)
};

}  // namespace

SampleResult sample(models::SparseTransformer& model, const SampleRequest& request, const EventSink& sink,
                    const std::atomic<bool>* cancel) {
  return SamplingRun(model, request, sink, cancel).run();
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
