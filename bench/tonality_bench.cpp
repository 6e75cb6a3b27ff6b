#include "tonality_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "stx/engine/data/audio_io.h"
#include "stx/engine/error.h"
#include "stx/engine/export/export.h"
#include "stx/engine/sampler.h"
#include "stx/engine/measures/spectral_flatness.h"
#include "stx/engine/measures/tonal_peaks.h"

namespace stx::bench {
namespace {

namespace fs = std::filesystem;

// The spectral measures of some audio: flatness frames, tonal peak ratios, note events and seconds.
struct Measures {
  std::vector<double> flatness, peak_ratios;
  int64_t events = 0;
  double seconds = 0;
  void add(const std::vector<uint8_t>& bytes) {
    const std::vector<double> f = engine::frame_flatness_mulaw(bytes.data(), bytes.size());
    flatness.insert(flatness.end(), f.begin(), f.end());
    const engine::TonalPeaks t = engine::tonal_peaks_mulaw(bytes.data(), bytes.size());
    peak_ratios.insert(peak_ratios.end(), t.frame_ratios.begin(), t.frame_ratios.end());
    events += t.note_events;
    seconds += t.seconds;
  }
};

TonalityRow row_of(const std::string& what, const Measures& m) {
  TonalityRow row;
  row.what = what;
  row.median_flatness = engine::median(m.flatness);
  row.frames = static_cast<int64_t>(m.flatness.size());
  row.seconds = m.seconds;
  row.tonal_peak_ratio = engine::median(m.peak_ratios);
  row.note_events_per_second = m.seconds > 0 ? static_cast<double>(m.events) / m.seconds : 0.0;
  return row;
}

// Samples of one kind: a row for each, and their frames pooled for the group's row (each measured once).
class Group {
 public:
  explicit Group(std::vector<TonalityRow>& rows) : rows_(rows) {}
  void add(const std::string& what, const std::vector<uint8_t>& generated) {
    Measures one;
    one.add(generated);
    rows_.push_back(row_of(what, one));
    pooled_.flatness.insert(pooled_.flatness.end(), one.flatness.begin(), one.flatness.end());
    pooled_.peak_ratios.insert(pooled_.peak_ratios.end(), one.peak_ratios.begin(), one.peak_ratios.end());
    pooled_.events += one.events;
    pooled_.seconds += one.seconds;
    count_ += 1;
  }
  // "<what>, all N": medians over every frame of the group, events over all its seconds.
  void finish(const std::string& what) {
    if (count_ > 0) rows_.push_back(row_of(what + ", all " + std::to_string(count_), pooled_));
  }

 private:
  std::vector<TonalityRow>& rows_;
  Measures pooled_;
  int count_ = 0;
};

int64_t samples_of(double seconds) {
  return static_cast<int64_t>(std::llround(seconds * engine::kSampleRate));
}

void keep(const TonalityOptions& o, const std::string& name, const std::vector<uint8_t>& bytes,
          const std::string& model_name, uint64_t seed, const std::string& prompt) {
  if (o.keep_dir.empty()) return;
  fs::create_directories(o.keep_dir);
  engine::ExportInfo info;
  info.model_name = model_name;
  info.seed = seed;
  info.temperature = o.settings.temperature;
  info.top_k = o.settings.top_k;
  info.top_p = o.settings.top_p;
  info.min_p = o.settings.min_p;
  info.prompt = prompt;
  engine::write_wav(o.keep_dir / name, bytes.data(), bytes.size(), engine::kSampleRate, info);
}

}  // namespace

std::vector<TonalityRow> measure_tonality(models::SparseTransformer& model, const std::string& model_name,
                                          const std::vector<uint8_t>& held_out,
                                          const std::vector<std::string>& validation_files,
                                          const fs::path& data_root, const TonalityOptions& o) {
  const int64_t context = model->config().context;
  std::vector<TonalityRow> rows;
  // The held-out files joined, as the evaluation reads them (a note event at a join or two is noise here).
  Measures corpus;
  corpus.add(held_out);
  rows.push_back(row_of("held-out corpus (" + std::to_string(validation_files.size()) + " files)", corpus));

  Group unconditional(rows);
  for (int s = o.first_seed; s < o.first_seed + o.unconditional; ++s) {
    engine::SampleRequest request;
    request.length = std::min(samples_of(o.unconditional_seconds), context);
    request.settings = o.settings;
    request.seed = static_cast<uint64_t>(s);
    request.device = stx::engine::DeviceChoice::cpu;
    std::fprintf(stderr, "tonality: unconditional sample, seed %d...\n", s);
    const engine::SampleResult r = engine::sample(model, request, {});
    unconditional.add("unconditional, seed " + std::to_string(s), r.samples.at(0));
    keep(o, "unconditional-seed" + std::to_string(s) + ".wav", r.samples.at(0), model_name, r.seed,
         "unconditional");
  }
  unconditional.finish("unconditional");

  Group continued(rows);
  const size_t files = validation_files.size();
  const int count =
      static_cast<int>(std::min<size_t>(static_cast<size_t>(std::max(0, o.continuations)), files));
  for (int c = 0; c < count; ++c) {
    const std::string& name = validation_files[static_cast<size_t>(c) * files / static_cast<size_t>(count)];
    const std::vector<uint8_t> audio = engine::load_audio_mulaw(data_root / name);
    const int64_t prompt_length =
        std::min<int64_t>(samples_of(o.prompt_seconds), static_cast<int64_t>(audio.size()));
    if (prompt_length < 1) continue;
    engine::SampleRequest request;
    request.prompt.assign(audio.begin(), audio.begin() + prompt_length);
    request.length = std::min(prompt_length + samples_of(o.continuation_seconds), context);
    if (request.length <= prompt_length) {
      throw engine::Error("--samples: a " + std::to_string(o.prompt_seconds) +
                          " s prompt leaves no room in the " + std::to_string(context) + "-sample context");
    }
    request.settings = o.settings;
    request.seed = static_cast<uint64_t>(o.first_seed + c);
    request.device = stx::engine::DeviceChoice::cpu;
    std::fprintf(stderr, "tonality: continuing %s...\n", name.c_str());
    const engine::SampleResult r = engine::sample(model, request, {});
    const std::vector<uint8_t>& whole = r.samples.at(0);
    continued.add("continuation of " + name,
                  std::vector<uint8_t>(whole.begin() + prompt_length, whole.end()));
    keep(o, "continuation-" + std::to_string(c + 1) + ".wav", whole, model_name, r.seed, "clip " + name);
  }
  continued.finish("continuations");
  return rows;
}

}  // namespace stx::bench
