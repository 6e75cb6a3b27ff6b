// The one exception type of the kernels library: every entry point checks its inputs and throws this
// with a message that names what was expected and what came in.
#pragma once

#include <stdexcept>
#include <string>

namespace stx::kernels {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace stx::kernels

// STX_KERNEL_CHECK(cond, message-expression): throws stx::kernels::Error("<message>") when cond is false.
#define STX_KERNEL_CHECK(cond, msg)                 \
  do {                                              \
    if (!(cond)) throw ::stx::kernels::Error(msg); \
  } while (0)
