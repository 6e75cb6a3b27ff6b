// The dataset options that feed a model: its data kind and, for images, its H x W x C.
#pragma once

#include "stx/engine/data/dataset.h"
#include "stx/models/model_config.h"

namespace stx::engine {

DatasetOptions dataset_options_for(const models::ModelConfig& config);

}  // namespace stx::engine
