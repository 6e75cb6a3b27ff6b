// `stx sample image|audio|text`: generation from a trained model, exported as PNG, WAV or TXT.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sampling_options.h"

namespace CLI {
class App;
}

namespace stx::cli {

struct SampleCommandOptions {
  std::string kind;  // image, audio or text: which subcommand ran
  std::string model, out, prompt, prompt_file;
  int64_t keep_rows = -1;      // image: rows of --prompt kept
  double seconds = 0;          // audio: seconds to generate
  int output_rate = 12000;     // audio: WAV rate
  int64_t max_bytes = 256;     // text: bytes to generate
  std::vector<std::string> stop;
  int64_t count = 1;
  std::optional<uint64_t> seed;
  SamplingOptions sampling;  // over the model's own defaults
  bool force = false, quiet = false;
  std::string kv_cache = "float16";  // float16 or float32: SampleRequest::half_precision_cache
  std::string device = "auto";       // cpu, cuda or auto: SampleRequest::device
};

// Adds `sample` with its three subcommands; returns `sample`.
CLI::App* add_sample_command(CLI::App& app, SampleCommandOptions& o);
// Exit status: 0 done, 1 failed, 130 stopped by Ctrl-C (what was generated is still written).
int run_sample_command(SampleCommandOptions& o);

}  // namespace stx::cli
