#include "stx/engine/training_memory.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "stx/engine/error.h"

namespace stx::engine {
namespace {

std::string gigabytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

}  // namespace

uint64_t training_step_bytes(const models::ModelConfig& c, int64_t micro_batch) {
  const auto d = static_cast<uint64_t>(c.d_model), d_ff = static_cast<uint64_t>(c.d_ff);
  const auto layers = static_cast<uint64_t>(c.layers);
  // Saved for backward in one block, per token: the two norms' inputs and outputs, q/k/v, the attention
  // output and its re-laid-out copy, a, h + a, b and the new h (11 d), and the FF hidden layer before and
  // after GELU (2 d_ff).
  const uint64_t block_floats = 11 * d + 2 * d_ff;
  const uint64_t kept_floats = c.recompute ? layers * d + block_floats : layers * block_floats;
  // Gradients of one block at a time while its backward runs (about half of what it saved are live at
  // once), the embeddings, and the head: logits, log-softmax and their gradient over 256 classes, and the
  // final norm.
  const uint64_t transient_floats = block_floats / 2 + 2 * d + 3 * 256 + 2 * d;
  const uint64_t tokens = static_cast<uint64_t>(micro_batch) * static_cast<uint64_t>(c.context);
  const uint64_t activations = tokens * (kept_floats + transient_floats) * sizeof(float);
  // Weights, gradients and the two AdamW moments: 16 bytes a parameter (counted from the shape, roughly).
  const uint64_t parameters = layers * (4 * d * d + 2 * d * d_ff) + 258 * d + 256 * d +
                              static_cast<uint64_t>(c.context) * d / std::max<uint64_t>(1, c.stride);
  return activations + parameters * 16;
}

uint64_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    uint64_t kilobytes = 0;
    if (fields >> key >> kilobytes && key == "MemAvailable:") return kilobytes * 1024u;
  }
  return 0;
}

void check_training_memory(const models::ModelConfig& config, int64_t micro_batch) {
  const uint64_t available = available_memory_bytes();
  if (available == 0) return;
  const uint64_t needed = training_step_bytes(config, micro_batch);
  if (needed <= available) return;
  const uint64_t per_sequence = training_step_bytes(config, 1);
  // Only what can help: at one sequence per pass, neither the batch nor the accumulation can.
  std::vector<std::string> fixes;
  if (micro_batch > 1) {
    fixes.push_back("lower the batch, or raise the gradient accumulation (sequences per pass = batch / accumulation)");
  }
  if (!config.recompute) fixes.push_back("train a config with \"recompute\": true");
  if (config.kind != models::DataKind::image) fixes.push_back("train on a shorter context");
  fixes.push_back("choose a smaller model (fewer layers or a narrower d_model)");
  std::string fix;
  for (size_t i = 0; i < fixes.size(); ++i) fix += (i == 0 ? "" : i + 1 == fixes.size() ? ", or " : ", ") + fixes[i];
  throw Error("training " + config.name + " needs about " + gigabytes(needed) + " of memory (" +
              std::to_string(micro_batch) + " sequences of " + std::to_string(config.context) +
              " bytes per pass, about " + gigabytes(per_sequence) + " for one), but this machine has " +
              gigabytes(available) + " available: " + fix,
              {"batch", "accumulation", "context"});
}

}  // namespace stx::engine
