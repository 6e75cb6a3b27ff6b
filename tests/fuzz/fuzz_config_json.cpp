// libFuzzer target for a checkpoint's config.json, as read_checkpoint_info reads it: any bytes must either
// give a model config (and, under "training", a recipe) that holds together, or be refused with the
// config's own error (ConfigError, stx::engine::Error) naming a field. Anything else (a crash, a sanitizer
// report, nlohmann's raw type_error, another exception type) is a bug.
//   ./build-fuzz/tests/fuzz/fuzz_config_json -max_total_time=60 -dict=... corpus/
// What is checked of an accepted config: its size is counted without allocating a model, every layer's
// patterns can be built, and writing it out and reading it back gives the same config.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "stx/engine/error.h"
#include "stx/engine/trainer.h"
#include "stx/models/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using stx::models::ModelConfig;
  // A file that is not JSON is refused by read_json before any of this: nothing to fuzz there but nlohmann.
  const nlohmann::json json = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  try {
    const ModelConfig config = stx::models::model_config_from_json(json);
    if (config.parameter_count() <= 0) std::abort();  // a valid config has weights
    for (int64_t layer = 0; layer < config.layers; ++layer) {
      if (static_cast<int64_t>(config.layer_patterns(static_cast<int>(layer)).size()) != config.heads) std::abort();
    }
    const nlohmann::json written = stx::models::to_json(config);
    if (stx::models::to_json(stx::models::model_config_from_json(written)) != written) std::abort();
  } catch (const stx::models::ConfigError&) {
  }
  if (json.is_object()) {
    const auto training = json.find("training");
    if (training != json.end()) {
      try {
        stx::engine::TrainOptions recipe;
        stx::engine::recipe_from_json(*training, recipe);
      } catch (const stx::engine::Error&) {
      }
    }
  }
  return 0;
}
