// stx-bench quality --samples: whether an audio model's samples are tonal. It generates unconditional
// samples and continuations of held-out openings, and compares the median spectral flatness of what the model
// generated with that of the held-out corpus (engine/spectral_flatness.h), and its tonal peak ratio and note
// events per second (engine/tonal_peaks.h), which noise and drones cannot game.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "stx/engine/sample_request.h"
#include "stx/models/sparse_transformer.h"

namespace stx::bench {

struct TonalityOptions {
  int unconditional = 8;  // samples with seeds first_seed .. first_seed + N - 1
  int first_seed = 1;     // another range confirms settings chosen on the first on samples they were not chosen on
  double unconditional_seconds = 4.0;
  int continuations = 4;              // held-out files, spread over the validation split in name order
  double prompt_seconds = 2.0;        // each continuation's prompt: the file's opening
  double continuation_seconds = 5.0;  // generated after it, at most what the context leaves
  engine::SamplingSettings settings;  // the defaults: temperature 1, no top-k or top-p
  std::filesystem::path keep_dir;     // if set, every sample is written there as a WAV
};

struct TonalityRow {
  std::string what;
  double median_flatness = 0;  // of the generated part's non-silent frames (NaN: none)
  int64_t frames = 0;
  double tonal_peak_ratio = 0;        // median over non-silent 4,096-sample frames (engine/tonal_peaks.h)
  double note_events_per_second = 0;  // over the whole generated part
  double seconds = 0;  // generated audio (held-out audio for the corpus row)
};

// Rows: the held-out corpus, each sample, and each group's pooled median. held_out: the held-out bytes;
// validation_files: their files, relative to `data_root`, whose openings are continued.
std::vector<TonalityRow> measure_tonality(models::SparseTransformer& model, const std::string& model_name,
                                          const std::vector<uint8_t>& held_out,
                                          const std::vector<std::string>& validation_files,
                                          const std::filesystem::path& data_root,
                                          const TonalityOptions& options);

}  // namespace stx::bench
