// The model types the front ends work with (a model's config, presets, data kinds, precision), given by the
// engine so that app/ talks to the engine alone. They are defined once, in models (stx/models/model_config.h);
// app/ includes this header, never a models header.
#pragma once

#include "stx/models/model_config.h"

namespace stx::engine {

using models::ConfigError;
using models::DataKind;
using models::LinearExpertConfig;
using models::ModelConfig;
using models::Precision;

using models::cpu_has_fast_bf16;
using models::effective_precision;
using models::model_config_from_json;
using models::parse_precision;
using models::preset;
using models::preset_names;
using models::to_string;

}  // namespace stx::engine
