// The models that ship with STX Studio, found by name ("image", "audio", "text") so that a user with no
// internet can sample straight away: `stx sample image --model image ...`.
//
// They live in models/bundled/ of the source tree (compiled in as STX_BUNDLED_MODELS_DIR) and, once
// installed, in <prefix>/share/stx-studio/models beside <prefix>/bin. Each is a model folder: config.json,
// model.safetensors (fp16), train_state.json (the record, no optimiser state) and MODEL_CARD.md.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace stx::engine {

// The bundled-model folders that exist, the one beside the program first, each listed once (canonical
// paths). The environment variable STX_BUNDLED_MODELS, when set, replaces both with its one folder
// (empty: none).
std::vector<std::filesystem::path> bundled_model_roots();

// The names of the bundled models (sub-folders holding config.json), sorted, each once.
std::vector<std::string> bundled_model_names();

// The folder of the bundled model `name`, or nothing. Only a bare name (no '/', not "." or "..") is looked up.
std::optional<std::filesystem::path> find_bundled_model(const std::string& name);

}  // namespace stx::engine
