// The attention patterns a benchmark times, from its --pattern, --stride, --summary, --heads and --block:
// one definition for the CPU and the CUDA attention benchmarks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stx/kernels/pattern.h"

namespace stx::bench {

struct PatternSpec {
  std::string name;  // "strided" | "fixed"
  std::string desc;  // e.g. "fixed l=128 c=32 merged"
  std::vector<kernels::HeadPattern> heads;
  int block = 0;  // 0: the benchmark chooses
};

// One spec per name, every head checked (kernels::validate); summary is used by "fixed" only.
inline std::vector<PatternSpec> make_patterns(const std::vector<std::string>& names, int64_t stride,
                                              int64_t summary, int64_t heads, int block) {
  std::vector<PatternSpec> specs;
  for (const std::string& name : names) {
    const kernels::Pattern pattern = kernels::parse_pattern(name);
    const int64_t c = pattern == kernels::Pattern::fixed ? summary : 0;
    PatternSpec spec;
    spec.name = name;
    spec.heads =
        kernels::layer_patterns(pattern, stride, c, static_cast<int>(heads), kernels::Combination::merged);
    for (const kernels::HeadPattern& h : spec.heads) kernels::validate(h);
    spec.desc = name + " l=" + std::to_string(stride) + (c > 0 ? " c=" + std::to_string(c) : "") + " merged";
    spec.block = block;
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace stx::bench
