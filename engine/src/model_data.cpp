#include "stx/engine/model_data.h"

namespace stx::engine {

DatasetOptions dataset_options_for(const models::ModelConfig& config) {
  DatasetOptions options;
  switch (config.kind) {
    case models::DataKind::image: options.kind = DataKind::Image; break;
    case models::DataKind::audio: options.kind = DataKind::Audio; break;
    case models::DataKind::text: options.kind = DataKind::Text; break;
  }
  options.image = ImageShape{static_cast<int>(config.image_height), static_cast<int>(config.image_width),
                             static_cast<int>(config.image_channels)};
  return options;
}

}  // namespace stx::engine
