// What the io suites share: an assertion that an action throws stx::engine::Error naming a part of the
// failure (a file, a reason), so that a test says which words a user would read.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "stx/engine/error.h"

template <typename Action>
::testing::AssertionResult ThrowsErrorContaining(Action&& action, const std::string& expected_part) {
  try {
    action();
  } catch (const stx::engine::Error& error) {
    const std::string message = error.what();
    if (message.find(expected_part) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "error \"" << message << "\" does not mention \"" << expected_part << "\"";
  }
  return ::testing::AssertionFailure() << "no stx::engine::Error was thrown";
}
