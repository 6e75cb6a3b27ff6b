#include "cli_errors.h"

#include <map>

namespace stx::cli {

std::string flag_of(const std::string& setting) {
  // The engine's names (TrainOptions, SampleRequest, LayerPatternSpec, KernelCheckRequest) against the options
  // of `stx train`, `stx sample`, `stx layout` and `stx check`.
  static const std::map<std::string, std::string> flags = {
      {"accumulation", "--accumulation"}, {"batch", "--batch"},
      {"checkpoint_every", "--checkpoint-every"}, {"context", "--context"},
      {"data", "--data"},                 {"device", "--device"},
      {"init_from", "--init-from"},       {"keep_last", "--keep"},
      {"learning_rate", "--lr"},          {"out", "--out"},
      {"overwrite", "--force"},           {"precision", "--precision"},
      {"amplitude_taps", "--amplitude-taps"}, {"expert_order", "--expert-order"},
      {"noise_share", "--noise-share"},   {"noise_steps", "--noise-steps"},
      {"resume", "--resume"},             {"steps", "--steps"},
      {"window", "--window"},             {"temperature", "--temperature"},
      {"top_k", "--top-k"},               {"top_p", "--top-p"},
      {"min_p", "--min-p"},
      {"pattern", "--pattern"},           {"n", "--n"},
      {"stride", "--stride"},             {"summary", "--c"},
      {"mode", "--mode"},                 {"layer", "--layer"},
      {"heads", "--heads"},               {"block", "--block"},
      {"query", "--query"},               {"head", "--head"},
      {"head_dim", "--dim"},
  };
  const auto found = flags.find(setting);
  return found == flags.end() ? setting : found->second;
}

std::string with_flags(const std::string& message, const std::vector<std::string>& settings) {
  if (settings.empty()) return message;
  std::string flags;
  for (const std::string& setting : settings) flags += (flags.empty() ? "" : ", ") + flag_of(setting);
  return message + " (" + flags + ")";
}

}  // namespace stx::cli
