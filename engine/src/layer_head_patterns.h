// The kernels' per-head patterns of a LayerPatternSpec, for the engine's reports on a layer (layout_report.cpp,
// kernel_check.cpp). Private: the front ends see only the plain spec.
#pragma once

#include <vector>

#include "stx/engine/pattern_view.h"
#include "stx/kernels/pattern.h"

namespace stx::engine {

// One pattern per head; validates the spec first (Error naming the setting).
std::vector<kernels::HeadPattern> layer_head_patterns(const LayerPatternSpec& spec);

}  // namespace stx::engine
