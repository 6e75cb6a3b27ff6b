#include "stx/engine/bundled_models.h"

#include <algorithm>
#include <cstdlib>
#include <system_error>

#ifndef STX_BUNDLED_MODELS_DIR
#define STX_BUNDLED_MODELS_DIR ""
#endif

namespace stx::engine {
namespace fs = std::filesystem;

namespace {

// The folder of the running program, or empty when /proc is not there.
fs::path executable_folder() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

bool is_model_folder(const fs::path& folder) {
  std::error_code ec;
  return fs::is_regular_file(folder / "config.json", ec);
}

}  // namespace

std::vector<fs::path> bundled_model_roots() {
  std::vector<fs::path> candidates;
  if (const char* chosen = std::getenv("STX_BUNDLED_MODELS")) {
    if (*chosen) candidates.emplace_back(chosen);  // set but empty: no bundled models (hermetic tests)
  } else {
    // Beside the program first: an installed copy uses its own models even where a source tree is still
    // at the path it was built from. A program in the build tree has no share/ beside it.
    if (const fs::path exe = executable_folder(); !exe.empty()) {
      candidates.push_back(exe / ".." / "share" / "stx-studio" / "models");
    }
    if (const std::string source_tree = STX_BUNDLED_MODELS_DIR; !source_tree.empty()) candidates.emplace_back(source_tree);
  }
  std::vector<fs::path> roots;
  for (const fs::path& candidate : candidates) {
    std::error_code ec;
    if (!fs::is_directory(candidate, ec)) continue;
    const fs::path canonical = fs::canonical(candidate, ec);
    if (ec || std::find(roots.begin(), roots.end(), canonical) != roots.end()) continue;
    roots.push_back(canonical);
  }
  return roots;
}

std::vector<std::string> bundled_model_names() {
  std::vector<std::string> names;
  for (const fs::path& root : bundled_model_roots()) {
    std::error_code ec;
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.empty() || name.front() == '.' || !is_model_folder(it->path())) continue;
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<fs::path> find_bundled_model(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) return std::nullopt;
  for (const fs::path& root : bundled_model_roots()) {
    if (is_model_folder(root / name)) return root / name;
  }
  return std::nullopt;
}

}  // namespace stx::engine
