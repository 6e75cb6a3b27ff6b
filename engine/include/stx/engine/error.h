#pragma once
// The one exception type the engine lets out, for problems a user can fix: a missing or unreadable file,
// a corrupt checkpoint, a folder with nothing usable, a setting out of range. what() is one plain line
// that names the file (when there is one) and the reason, so a front end can show it as it is.
//
// Messages speak of settings in plain words ("the batch size must be in [1, 65536]"), never in one front
// end's words; settings() lists the ones a message is about by their TrainOptions/SampleRequest names
// ("batch"), so that the CLI can add its flags and the studio could point at its fields.
//
// Below the engine, LibTorch, the JSON reader, the kernels and the model configs throw their own types.
// with_plain_errors (or rethrow_as_error inside a catch) turns whatever comes out of a job into an Error:
//
//   try {
//     stx::engine::with_plain_errors([&] { run_the_job(); });
//   } catch (const stx::engine::Error& e) {
//     show(e.what());
//   }
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace stx::engine {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, std::vector<std::string> settings = {})
      : std::runtime_error(message), settings_(std::move(settings)) {}
  const std::vector<std::string>& settings() const { return settings_; }

 private:
  std::vector<std::string> settings_;
};

// Call only inside a catch block: throws the exception in flight again as an Error. An Error (or a front
// end's type derived from it) goes on as it is; LibTorch's errors keep their first line, without the C++
// backtrace; out of memory says so. Defined in stx_engine (it knows the lower layers' types).
[[noreturn]] void rethrow_as_error();

template <typename Job>
decltype(auto) with_plain_errors(Job&& job) {
  try {
    return std::forward<Job>(job)();
  } catch (...) {
    rethrow_as_error();
  }
}

}  // namespace stx::engine
