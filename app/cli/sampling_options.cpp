#include "sampling_options.h"

#include <CLI/CLI.hpp>
#include <cstdio>

namespace stx::cli {

engine::SamplingSettings SamplingOptions::over(engine::SamplingSettings base) const {
  if (temperature) base.temperature = *temperature;
  if (top_k) base.top_k = *top_k;
  if (top_p) base.top_p = *top_p;
  if (min_p) base.min_p = *min_p;
  return base;
}

void add_sampling_options(CLI::App& c, SamplingOptions& o) {
  c.add_option("--temperature", o.temperature,
               "sampling temperature; 0 picks the most likely byte (default: the model's, else 1)");
  c.add_option("--top-k", o.top_k, "sample among the k most likely bytes, 0: all (default: the model's, else 0)");
  c.add_option("--top-p", o.top_p,
               "sample among the most likely bytes holding this probability, 1: all (default: the model's, else 1)");
  c.add_option("--min-p", o.min_p,
               "leave out bytes less likely than this times the most likely one, 0: off (default: the model's, "
               "else 0); for audio, a floor under the hiss that a 256-way distribution otherwise spreads over every "
               "level");
}

std::string describe_sampling(const engine::SamplingSettings& s) {
  char text[128];
  std::snprintf(text, sizeof text, "temperature %g, top-k %s, top-p %g, min-p %g", s.temperature,
                s.top_k == 0 ? "off" : std::to_string(s.top_k).c_str(), s.top_p, s.min_p);
  return text;
}

}  // namespace stx::cli
