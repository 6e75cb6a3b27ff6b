// --temperature, --top-k, --top-p and --min-p: given ones override a model's own sampling defaults
// (config.json's "sampling"), left out ones keep them. Used by `stx sample` and `stx export`.
#pragma once

#include <optional>
#include <string>

#include "stx/engine/sample_request.h"

namespace CLI {
class App;
}

namespace stx::cli {

struct SamplingOptions {
  std::optional<double> temperature, top_p, min_p;
  std::optional<int> top_k;

  bool any() const { return temperature || top_k || top_p || min_p; }
  // `base` with the given options in place of its fields.
  engine::SamplingSettings over(engine::SamplingSettings base) const;
};

// Each help line names the fallback: the model's default, else the plain one.
void add_sampling_options(CLI::App& command, SamplingOptions& o);

// "temperature 1.05, top-k off, top-p 1, min-p 0": how the CLI names a set of settings.
std::string describe_sampling(const engine::SamplingSettings& s);

}  // namespace stx::cli
