#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <vector>

#include "data_test_support.h"
#include "stx/engine/data/crops.h"

namespace stx::engine {
namespace {

using test::expect_error;

std::vector<uint8_t> counting_stream(size_t size) {
  std::vector<uint8_t> stream(size);
  std::iota(stream.begin(), stream.end(), uint8_t{0});
  return stream;
}

TEST(CropSampler, SameSeedAndIndexGiveTheSameCropWhateverCameBefore) {
  const std::vector<uint8_t> stream = counting_stream(10007);
  const CropSampler a(stream, 113, 1, 42), b(stream, 113, 1, 42);
  const size_t later = a.start_of(999);
  for (uint64_t i = 0; i < 999; ++i) a.start_of(i);
  EXPECT_EQ(a.start_of(999), later);
  for (uint64_t i = 0; i < 1000; ++i) ASSERT_EQ(a.start_of(i), b.start_of(i));
}

TEST(CropSampler, CropsAreAlignedInRangeAndVaried) {
  const std::vector<uint8_t> stream = counting_stream(1000);
  const CropSampler sampler(stream, 21, 7, 3);
  std::set<size_t> starts;
  for (uint64_t i = 0; i < 10000; ++i) {
    const size_t start = sampler.start_of(i);
    ASSERT_EQ(start % 7, 0u);
    ASSERT_LE(start + 21, stream.size());
    starts.insert(start);
  }
  // (1000 - 21) / 7 + 1 = 140 aligned starts; 10000 draws reach every one.
  EXPECT_EQ(starts.size(), 140u);
  EXPECT_EQ(*starts.rbegin(), 139u * 7u);
}

TEST(CropSampler, SeedsGiveDifferentSequences) {
  const std::vector<uint8_t> stream = counting_stream(100000);
  const CropSampler a(stream, 64, 1, 1), b(stream, 64, 1, 2);
  int same = 0;
  for (uint64_t i = 0; i < 100; ++i) same += a.start_of(i) == b.start_of(i);
  EXPECT_LT(same, 3);
}

TEST(CropSampler, CopyWritesTheCropAtItsStart) {
  const std::vector<uint8_t> stream = counting_stream(5000);
  const CropSampler sampler(stream, 1023, 1, 9);
  std::vector<uint8_t> out(1023);
  for (uint64_t i = 0; i < 20; ++i) {
    sampler.copy(i, out.data());
    const size_t start = sampler.start_of(i);
    ASSERT_TRUE(std::equal(out.begin(), out.end(), stream.begin() + static_cast<std::ptrdiff_t>(start)));
  }
}

TEST(CropSampler, StreamOfExactlyOneContextAlwaysStartsAtZero) {
  const std::vector<uint8_t> stream = counting_stream(3072);
  const CropSampler sampler(stream, 3072, 3072, 5);
  for (uint64_t i = 0; i < 10; ++i) EXPECT_EQ(sampler.start_of(i), 0u);
}

TEST(CropSampler, ImpossibleCropsAreRefused) {
  const std::vector<uint8_t> stream = counting_stream(100);
  expect_error([&] { CropSampler(stream, 0, 1, 0); }, {"context"});
  expect_error([&] { CropSampler(stream, 101, 1, 0); }, {"100 bytes", "101 bytes"});
  expect_error([&] { CropSampler(stream, 10, 0, 0); }, {"record"});
}

void expect_exact_cover(const std::vector<std::pair<size_t, size_t>>& windows, size_t stream, size_t window) {
  ASSERT_FALSE(windows.empty());
  EXPECT_EQ(windows.front().first, 0u);
  EXPECT_EQ(windows.back().second, stream);
  for (size_t i = 0; i < windows.size(); ++i) {
    EXPECT_LT(windows[i].first, windows[i].second);
    EXPECT_LE(windows[i].second - windows[i].first, window);
    if (i + 1 < windows.size()) {
      EXPECT_EQ(windows[i].second, windows[i + 1].first);
      EXPECT_EQ(windows[i].second - windows[i].first, window);
    }
  }
}

TEST(EvaluationWindows, CoverTheStreamExactly) {
  expect_exact_cover(evaluation_windows(1000, 100, 1), 1000, 100);
  expect_exact_cover(evaluation_windows(1023, 100, 1), 1023, 100);  // last window 23 bytes
  expect_exact_cover(evaluation_windows(1000, 100, 30), 1000, 90);  // context rounded down to 3 records
  expect_exact_cover(evaluation_windows(50, 100, 1), 50, 100);
  EXPECT_EQ(evaluation_windows(1023, 100, 1).size(), 11u);
  EXPECT_TRUE(evaluation_windows(0, 100, 1).empty());
  for (const auto& window : evaluation_windows(1000, 100, 30)) EXPECT_EQ(window.first % 30, 0u);
}

TEST(EvaluationWindows, CapSpreadsWindowsOverTheStream) {
  const auto all = evaluation_windows(10000, 100, 1);
  const auto capped = evaluation_windows(10000, 100, 1, 7);
  ASSERT_EQ(capped.size(), 7u);
  EXPECT_EQ(capped.front().first, 0u);
  EXPECT_GE(capped.back().first, 8000u);  // the last one sits in the last seventh
  for (size_t i = 0; i < capped.size(); ++i) {
    EXPECT_EQ(capped[i].second - capped[i].first, 100u);
    EXPECT_NE(std::find(all.begin(), all.end(), capped[i]), all.end());
    if (i > 0) {
      EXPECT_GE(capped[i].first, capped[i - 1].second);
    }
  }
  EXPECT_EQ(evaluation_windows(10000, 100, 1, 100), all);  // a cap at or above the count changes nothing
  EXPECT_EQ(evaluation_windows(10000, 100, 1, 1000), all);
}

TEST(EvaluationWindows, ContextSmallerThanARecordIsRefused) {
  expect_error([] { evaluation_windows(100, 2, 3); }, {"record"});
  expect_error([] { evaluation_windows(100, 2, 0); }, {"record"});
}

}  // namespace
}  // namespace stx::engine
