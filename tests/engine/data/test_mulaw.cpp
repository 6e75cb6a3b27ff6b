#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "stx/engine/mulaw.h"

namespace stx::engine {
namespace {

TEST(MuLaw, RoundTripErrorIsWithinHalfAStep) {
  // Half a step in the companded domain is 1/255; mapped back, the error is at most
  // (|x| + 1/255) * (256^(1/255) - 1) = 0.021983 |x| + 8.6e-5 (plus float slack).
  for (int i = -20000; i <= 20000; ++i) {
    const float x = static_cast<float>(i) / 20000.0f;
    const float error = std::fabs(mulaw_decode(mulaw_encode(x)) - x);
    ASSERT_LE(error, 0.02199f * std::fabs(x) + 9e-5f) << "x = " << x;
  }
}

TEST(MuLaw, EncodeIsMonotonicAndDecodeStrictlyIncreasing) {
  int previous = 0;
  for (int i = -20000; i <= 20000; ++i) {
    const int byte = mulaw_encode(static_cast<float>(i) / 20000.0f);
    ASSERT_GE(byte, previous) << "i = " << i;
    previous = byte;
  }
  for (int byte = 1; byte < 256; ++byte) {
    ASSERT_LT(mulaw_decode(static_cast<uint8_t>(byte - 1)), mulaw_decode(static_cast<uint8_t>(byte)));
  }
}

TEST(MuLaw, EveryByteRoundTrips) {
  for (int byte = 0; byte < 256; ++byte) {
    EXPECT_EQ(mulaw_encode(mulaw_decode(static_cast<uint8_t>(byte))), byte);
  }
}

TEST(MuLaw, SilenceIsByte128) {
  // (0 + 1) / 2 * 255 = 127.5 rounds half away from zero, to 128 (documented in mulaw.h).
  EXPECT_EQ(mulaw_encode(0.0f), 128);
  EXPECT_EQ(mulaw_encode(-0.0f), 128);
  EXPECT_GT(mulaw_decode(128), 0.0f);
  EXPECT_LT(mulaw_decode(128), 1e-4f);
  EXPECT_LT(mulaw_decode(127), 0.0f);
  EXPECT_EQ(mulaw_encode(std::numeric_limits<float>::quiet_NaN()), 128);
}

TEST(MuLaw, ExtremesMapToTheEndBytesAndBeyondAreClamped) {
  EXPECT_EQ(mulaw_encode(-1.0f), 0);
  EXPECT_EQ(mulaw_encode(1.0f), 255);
  EXPECT_EQ(mulaw_encode(-7.5f), 0);
  EXPECT_EQ(mulaw_encode(3.0f), 255);
  EXPECT_EQ(mulaw_encode(std::numeric_limits<float>::infinity()), 255);
  EXPECT_EQ(mulaw_encode(-std::numeric_limits<float>::infinity()), 0);
  EXPECT_FLOAT_EQ(mulaw_decode(0), -1.0f);
  EXPECT_FLOAT_EQ(mulaw_decode(255), 1.0f);
  EXPECT_LE(mulaw_decode(255), 1.0f);
  EXPECT_GE(mulaw_decode(0), -1.0f);
}

TEST(MuLaw, IsSymmetric) {
  for (int byte = 0; byte < 256; ++byte) {
    EXPECT_NEAR(mulaw_decode(static_cast<uint8_t>(byte)), -mulaw_decode(static_cast<uint8_t>(255 - byte)),
                1e-6f);
  }
}

}  // namespace
}  // namespace stx::engine
