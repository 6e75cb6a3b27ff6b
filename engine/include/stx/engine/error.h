#pragma once
// The one exception type the engine throws for problems a user can fix: a missing or unreadable file,
// a corrupt checkpoint, a folder with nothing usable, an option out of range. what() is one plain line
// that names the file (when there is one) and the reason, so a front end can show it as it is.
#include <stdexcept>
#include <string>

namespace stx::engine {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace stx::engine
