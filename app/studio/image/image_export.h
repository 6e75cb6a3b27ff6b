// How an image sample was made, and its PNG export with that record in the file (model, weights hash, seed,
// settings, prompt). The engine's writer does the atomic write; this only gathers the facts.
#pragma once

#include <QString>
#include <cstdint>
#include <filesystem>

#include "core/engine_types.h"
#include "stx/engine/export/export.h"

namespace stx::studio {

struct SampleOrigin {
  uint64_t seed = 0;
  stx::engine::SamplingSettings settings;
  QString prompt = QStringLiteral("unconditional");  // in words, as the PNG's Prompt text says it
  int promptRows = 0;                                // image rows kept as the prefix; 0: none
  int sample = 1;                                    // which of `samples` decoded together, from 1
  int samples = 1;
};

// "unconditional" (rows 0), "row 0 of shoe.png", "rows 0-13 of shoe.png".
QString describe_prompt_rows(int rows, const QString& source);

stx::engine::ExportInfo export_info(const stx::engine::ModelSummary& model, const SampleOrigin& origin);

// Writes `bytes` (height x width x channels; a sample stopped early is completed with black) as a PNG.
// Throws stx::engine::Error naming the file.
void write_sample_png(const std::filesystem::path& path, const Bytes& bytes,
                      const stx::engine::ModelSummary& model, const SampleOrigin& origin,
                      stx::engine::Overwrite overwrite);

}  // namespace stx::studio
