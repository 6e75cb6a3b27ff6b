// What a model's bytes are: image pixels, text, or 12 kHz mu-law audio. One enum for the model's config, the
// datasets that feed it and the front ends; torch-free (the library stx_data_format, with mu-law), so that
// the engine's datasets use the same one.
#pragma once

#include <optional>
#include <string_view>

namespace stx::models {

enum class DataKind { image, text, audio };

// "image", "text", "audio".
const char* to_string(DataKind kind);
// The kind named `name` exactly as to_string writes it; none for anything else.
std::optional<DataKind> data_kind_named(std::string_view name);

}  // namespace stx::models
