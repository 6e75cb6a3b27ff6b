// The engine's edge: whatever the layers below throw leaves a job as one stx::engine::Error with a plain line.
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <new>
#include <nlohmann/json.hpp>
#include <string>

#include "stx/engine/error.h"
#include "stx/kernels/error.h"
#include "stx/models/model_config.h"

namespace {

using stx::engine::Error;

// The Error that with_plain_errors makes of what `job` throws.
template <typename Job>
Error error_from(Job job) {
  try {
    stx::engine::with_plain_errors(job);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no Error came out";
  return Error("");
}

// A front end's own kind of Error, as the CLI's usage errors are.
class FrontEndError : public Error {
 public:
  using Error::Error;
};

TEST(EngineEdge, LowerLayersBecomeOnePlainLine) {
  EXPECT_STREQ(error_from([] { throw stx::kernels::Error("n must be positive, got 0"); }).what(),
               "n must be positive, got 0");
  EXPECT_STREQ(error_from([] { throw stx::models::ConfigError("heads must divide d_model"); }).what(),
               "heads must divide d_model");
  // nlohmann's id ("[json.exception.type_error.302]") means nothing to a user.
  const Error json = error_from([] { (void)nlohmann::json("text").get<int>(); });
  EXPECT_EQ(std::string(json.what()).find("[json.exception"), std::string::npos) << json.what();
  EXPECT_NE(std::string(json.what()).find("type must be number"), std::string::npos) << json.what();
  // LibTorch's message keeps its first line only: no C++ backtrace reaches the user.
  const Error torch = error_from([] { TORCH_CHECK(false, "shape mismatch\nmore detail"); });
  EXPECT_EQ(std::string(torch.what()), "LibTorch: shape mismatch") << torch.what();
  EXPECT_STREQ(error_from([] { throw std::bad_alloc(); }).what(), "out of memory; try a smaller size");
  EXPECT_STREQ(error_from([] { throw std::runtime_error("first\nsecond"); }).what(), "first");
  EXPECT_STREQ(error_from([] { throw 42; }).what(), "an unexpected error stopped the job");
}

TEST(EngineEdge, AnErrorGoesThroughAsItIsWithItsSettings) {
  try {
    stx::engine::with_plain_errors([] { throw FrontEndError("the batch size must be in [1, 65536]", {"batch"}); });
    FAIL() << "nothing was thrown";
  } catch (const FrontEndError& e) {  // still the front end's type: the CLI exits 2 for its usage errors
    EXPECT_STREQ(e.what(), "the batch size must be in [1, 65536]");
    EXPECT_EQ(e.settings(), std::vector<std::string>{"batch"});
  }
  EXPECT_EQ(stx::engine::with_plain_errors([] { return 7; }), 7);  // a job's value comes back
}

}  // namespace
