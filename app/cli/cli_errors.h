// What the CLI says when a command fails: the usage error (exit status 2) and the engine's messages with
// the flags of the settings they are about.
#pragma once

#include <string>
#include <vector>

#include "stx/engine/error.h"

namespace stx::cli {

// A bad option value. main() prints its message on one line and exits with status 2, like CLI11's own
// parse errors, so a script can tell a usage mistake (2) from a failed run (1). An engine::Error, so that
// stx::engine::with_plain_errors lets it through as it is.
class UsageError : public engine::Error {
 public:
  explicit UsageError(const std::string& what, std::vector<std::string> settings = {})
      : engine::Error(what, std::move(settings)) {}
  // An engine refusal of something the command line asked for: the same message and settings.
  explicit UsageError(const engine::Error& refusal) : engine::Error(refusal) {}
};

// The flag that sets an engine setting: "learning_rate" -> "--lr"; a setting with no flag comes back as it is.
std::string flag_of(const std::string& setting);

// The message followed by the flags of its settings: "the batch size must be in [1, 65536] (--batch)".
std::string with_flags(const std::string& message, const std::vector<std::string>& settings);
inline std::string with_flags(const engine::Error& e) { return with_flags(e.what(), e.settings()); }

}  // namespace stx::cli
