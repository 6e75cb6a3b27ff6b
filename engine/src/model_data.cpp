#include "stx/engine/model_data.h"

namespace stx::engine {

DatasetOptions dataset_options_for(const models::ModelConfig& config) {
  DatasetOptions options;
  options.kind = config.kind;
  options.image = ImageShape{static_cast<int>(config.image_height), static_cast<int>(config.image_width),
                             static_cast<int>(config.image_channels)};
  return options;
}

}  // namespace stx::engine
