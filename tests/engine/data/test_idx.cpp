// Gzip IDX images (MNIST layout), written by the tests, and the real Fashion-MNIST when installed.
#include <gtest/gtest.h>

#include <vector>

#include "data_test_support.h"
#include "stx/engine/data/dataset.h"

namespace stx::engine {
namespace {

using test::expect_error;
constexpr uint32_t kMagic = 0x00000803;

DatasetOptions image_options(ImageShape shape, double fraction = 0.2) {
  DatasetOptions options;
  options.kind = DataKind::image;
  options.image = shape;
  options.validation_fraction = fraction;
  return options;
}

std::vector<uint8_t> counting_pixels(size_t count) {
  std::vector<uint8_t> pixels(count);
  for (size_t i = 0; i < count; ++i) pixels[i] = static_cast<uint8_t>(i * 7 + 3);
  return pixels;
}

std::vector<uint8_t> joined(const Dataset& dataset) {
  std::vector<uint8_t> all = dataset.train;
  all.insert(all.end(), dataset.validation.begin(), dataset.validation.end());
  return all;
}

class Idx : public ::testing::Test {
 protected:
  test::TempFolder folder;
};

TEST_F(Idx, SingleFileReadsAndHoldsOutItsLastImages) {
  // given 5 images of 4 rows x 3 columns and a 20% hold-out
  const std::vector<uint8_t> pixels = counting_pixels(5 * 4 * 3);
  test::write_file(folder / "tiny-idx3-ubyte.gz", test::gzip_bytes(test::idx_bytes(kMagic, 5, 4, 3, pixels)));
  const Dataset dataset = open_dataset(folder / "tiny-idx3-ubyte.gz", image_options({4, 3, 1}));
  EXPECT_EQ(dataset.record_bytes, 12u);
  EXPECT_EQ(dataset.train.size(), 4u * 12u);
  EXPECT_EQ(dataset.validation.size(), 12u);
  EXPECT_EQ(joined(dataset), pixels);
}

TEST_F(Idx, GrayImagesBecomeRgb) {
  const std::vector<uint8_t> pixels = counting_pixels(2 * 2 * 2);
  test::write_file(folder / "rgb-idx3-ubyte.gz", test::gzip_bytes(test::idx_bytes(kMagic, 2, 2, 2, pixels)));
  const Dataset dataset = open_dataset(folder / "rgb-idx3-ubyte.gz", image_options({2, 2, 3}, 0.5));
  const std::vector<uint8_t> all = joined(dataset);
  ASSERT_EQ(all.size(), pixels.size() * 3);
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], pixels[i / 3]);
}

TEST_F(Idx, FashionMnistFolderSplitsTrainAndTest) {
  test::write_file(folder / "train-images-idx3-ubyte.gz",
                   test::gzip_bytes(test::idx_bytes(kMagic, 6, 3, 3, counting_pixels(54))));
  test::write_file(folder / "t10k-images-idx3-ubyte.gz",
                   test::gzip_bytes(test::idx_bytes(kMagic, 2, 3, 3, std::vector<uint8_t>(18, 9))));
  test::write_file(folder / "train-labels-idx1-ubyte.gz", test::gzip_bytes({0, 0, 8, 1, 0, 0, 0, 0}));
  const Dataset dataset = open_dataset(folder.path(), image_options({3, 3, 1}));
  EXPECT_EQ(dataset.train, counting_pixels(54));
  EXPECT_EQ(dataset.validation, std::vector<uint8_t>(18, 9));
  EXPECT_EQ(dataset.train_files, std::vector<std::string>{"train-images-idx3-ubyte.gz"});
  EXPECT_EQ(dataset.validation_files, std::vector<std::string>{"t10k-images-idx3-ubyte.gz"});
}

TEST_F(Idx, WrongMagicIsRefused) {
  test::write_file(folder / "labels-idx3-ubyte.gz",
                   test::gzip_bytes(test::idx_bytes(0x00000801, 2, 2, 2, counting_pixels(8))));
  expect_error(
      [&] {
        open_dataset(folder / "labels-idx3-ubyte.gz", image_options({2, 2, 1}));
      },
      {"labels-idx3-ubyte.gz", "magic 0x00000801"});
}

TEST_F(Idx, TruncatedDataAndStreamsAreRefused) {
  // The header promises 4 images of 5x5, the data holds 3.5.
  test::write_file(folder / "short-idx3-ubyte.gz",
                   test::gzip_bytes(test::idx_bytes(kMagic, 4, 5, 5, counting_pixels(88))));
  expect_error(
      [&] {
        open_dataset(folder / "short-idx3-ubyte.gz", image_options({5, 5, 1}));
      },
      {"short-idx3-ubyte.gz", "truncated", "image 4"});
  // A whole file whose gzip stream is cut short.
  std::vector<uint8_t> gz = test::gzip_bytes(test::idx_bytes(kMagic, 4, 5, 5, test::random_bytes(100, 1)));
  gz.resize(gz.size() - 12);
  test::write_file(folder / "cut-idx3-ubyte.gz", gz);
  expect_error(
      [&] {
        open_dataset(folder / "cut-idx3-ubyte.gz", image_options({5, 5, 1}));
      },
      {"cut-idx3-ubyte.gz", "truncated"});
}

TEST_F(Idx, OverflowingOrImpossibleDimensionsAreRefused) {
  const auto refuse = [&](uint32_t count, uint32_t rows, uint32_t cols, const char* reason) {
    test::write_file(folder / "bad-idx3-ubyte.gz",
                     test::gzip_bytes(test::idx_bytes(kMagic, count, rows, cols, counting_pixels(64))));
    expect_error(
        [&] {
          open_dataset(folder / "bad-idx3-ubyte.gz", image_options({4, 4, 1}));
        },
        {"bad-idx3-ubyte.gz", reason});
  };
  refuse(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, "not usable");
  refuse(4, 0, 4, "not usable");
  refuse(0, 4, 4, "not usable");
  refuse(0xFFFFFFFF, 65536, 65536, "over the limit of 64000000 pixels");
  refuse(0xFFFFFFFF, 4000, 4000, "more than");  // 6.9e16 bytes cannot come out of a few dozen bytes of gzip
  refuse(3, 4, 4, "more data");                 // 64 pixels for 48
}

TEST_F(Idx, NotGzipIsRefused) {
  test::write_file(folder / "raw-idx3-ubyte.gz", test::idx_bytes(kMagic, 2, 2, 2, counting_pixels(8)));
  expect_error(
      [&] {
        open_dataset(folder / "raw-idx3-ubyte.gz", image_options({2, 2, 1}));
      },
      {"raw-idx3-ubyte.gz", "gzip"});
}

TEST_F(Idx, OutputOverTheDatasetLimitIsRefused) {
  test::write_file(folder / "many-idx3-ubyte.gz",
                   test::gzip_bytes(test::idx_bytes(kMagic, 10, 2, 2, counting_pixels(40))));
  DatasetOptions options = image_options({8, 8, 3});
  options.max_total_bytes = 10 * 8 * 8 * 3 - 1;
  expect_error([&] { open_dataset(folder / "many-idx3-ubyte.gz", options); },
               {"many-idx3-ubyte.gz", "over the dataset limit"});
}

TEST_F(Idx, OneImageIsNotADataset) {
  test::write_file(folder / "one-idx3-ubyte.gz",
                   test::gzip_bytes(test::idx_bytes(kMagic, 1, 2, 2, counting_pixels(4))));
  expect_error(
      [&] {
        open_dataset(folder / "one-idx3-ubyte.gz", image_options({2, 2, 1}));
      },
      {"one-idx3-ubyte.gz", "needs at least 2 images"});
}

TEST(FashionMnist, RealFolderGivesTheStandardSplit) {
  const std::filesystem::path folder = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(folder / "train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)";
  }
  size_t progress_calls = 0;
  DatasetOptions options = image_options({28, 28, 1});
  options.progress = [&](size_t, size_t) { return ++progress_calls > 0; };
  const Dataset dataset = open_dataset(folder, options);
  EXPECT_EQ(dataset.train.size(), 60000u * 784u);
  EXPECT_EQ(dataset.validation.size(), 10000u * 784u);
  EXPECT_EQ(dataset.record_bytes, 784u);
  EXPECT_EQ(progress_calls, 70u);  // every 1000 images
}

}  // namespace
}  // namespace stx::engine
