// Image files written with stb_image_write, read back through load_image_bytes.
#include <gtest/gtest.h>
#include <zlib.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "data_test_support.h"
#include "stb_image_write_system.h"
#include "stx/engine/data/image_io.h"

namespace stx::engine {
namespace {

using test::expect_error;

enum class Format { Png, Bmp, Tga, Jpeg };

// pixels: [height, width, channels]
void write_image(const std::filesystem::path& file, Format format, int width, int height, int channels,
                 const std::vector<uint8_t>& pixels) {
  const std::string name = file.string();
  int ok = 0;
  switch (format) {
    case Format::Png:
      ok = stbi_write_png(name.c_str(), width, height, channels, pixels.data(), width * channels);
      break;
    case Format::Bmp: ok = stbi_write_bmp(name.c_str(), width, height, channels, pixels.data()); break;
    case Format::Tga: ok = stbi_write_tga(name.c_str(), width, height, channels, pixels.data()); break;
    case Format::Jpeg: ok = stbi_write_jpg(name.c_str(), width, height, channels, pixels.data(), 95); break;
  }
  ASSERT_NE(ok, 0) << "cannot write " << name;
}

std::vector<uint8_t> uniform(int width, int height, std::vector<uint8_t> colour) {
  std::vector<uint8_t> pixels;
  for (int i = 0; i < width * height; ++i) pixels.insert(pixels.end(), colour.begin(), colour.end());
  return pixels;
}

void expect_all_pixels(const std::vector<uint8_t>& bytes, const std::vector<uint8_t>& colour, int tolerance) {
  ASSERT_EQ(bytes.size() % colour.size(), 0u);
  for (size_t i = 0; i < bytes.size(); ++i) {
    ASSERT_NEAR(bytes[i], colour[i % colour.size()], tolerance) << "byte " << i;
  }
}

// A PNG made of the signature and an IHDR chunk only: enough for stbi_info, nothing to decode.
std::vector<uint8_t> png_header_only(uint32_t width, uint32_t height, uint8_t colour_type) {
  std::vector<uint8_t> bytes = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
  for (const uint32_t value : {width, height}) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(value >> shift));
  }
  bytes.insert(bytes.end(), {8, colour_type, 0, 0, 0});
  const uLong crc = crc32(0, bytes.data() + 12, 17);
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(crc >> shift));
  return bytes;
}

class ImageIo : public ::testing::Test {
 protected:
  test::TempFolder folder;
};

TEST_F(ImageIo, EachFormatDecodesAUniformColour) {
  const std::vector<uint8_t> colour = {200, 100, 50};
  const std::array<std::pair<Format, const char*>, 4> formats = {
      {{Format::Png, "a.png"}, {Format::Bmp, "a.bmp"}, {Format::Tga, "a.tga"}, {Format::Jpeg, "a.jpg"}}};
  for (const auto& [format, name] : formats) {
    write_image(folder / name, format, 40, 30, 3, uniform(40, 30, colour));
    const std::vector<uint8_t> bytes = load_image_bytes(folder / name, {16, 16, 3});
    ASSERT_EQ(bytes.size(), 16u * 16u * 3u) << name;
    // Lossless formats keep the colour exactly through crop and resize; JPEG within its quantisation.
    expect_all_pixels(bytes, colour, format == Format::Jpeg ? 3 : 0);
  }
}

TEST_F(ImageIo, GrayBecomesRgbByRepetition) {
  write_image(folder / "gray.png", Format::Png, 8, 8, 1, uniform(8, 8, {77}));
  expect_all_pixels(load_image_bytes(folder / "gray.png", {8, 8, 3}), {77, 77, 77}, 0);
}

TEST_F(ImageIo, RgbBecomesGrayByLuma) {
  // stb's luma: (77 R + 150 G + 29 B) >> 8, so pure red is 76 and pure green 149.
  write_image(folder / "red.png", Format::Png, 8, 8, 3, uniform(8, 8, {255, 0, 0}));
  write_image(folder / "green.png", Format::Png, 8, 8, 3, uniform(8, 8, {0, 255, 0}));
  expect_all_pixels(load_image_bytes(folder / "red.png", {4, 4, 1}), {76}, 0);
  expect_all_pixels(load_image_bytes(folder / "green.png", {4, 4, 1}), {149}, 0);
}

TEST_F(ImageIo, AlphaIsDropped) {
  write_image(folder / "rgba.png", Format::Png, 6, 6, 4, uniform(6, 6, {10, 20, 30, 0}));
  expect_all_pixels(load_image_bytes(folder / "rgba.png", {6, 6, 3}), {10, 20, 30}, 0);
}

TEST_F(ImageIo, WideImageIsCentreCroppedThenResized) {
  // given 60x20: red, green and blue thirds; a square target keeps only the green middle 20x20
  std::vector<uint8_t> pixels;
  for (int y = 0; y < 20; ++y) {
    for (int x = 0; x < 60; ++x) {
      const int third = x / 20;
      pixels.insert(pixels.end(), {uint8_t(third == 0 ? 255 : 0), uint8_t(third == 1 ? 255 : 0),
                                   uint8_t(third == 2 ? 255 : 0)});
    }
  }
  write_image(folder / "wide.png", Format::Png, 60, 20, 3, pixels);
  const std::vector<uint8_t> bytes = load_image_bytes(folder / "wide.png", {10, 10, 3});
  ASSERT_EQ(bytes.size(), 10u * 10u * 3u);
  expect_all_pixels(bytes, {0, 255, 0}, 0);
}

TEST_F(ImageIo, TallImageIsCentreCroppedToAWideTarget) {
  // given 16x64 gray: rows 0-23 black, 24-39 white, 40-63 black; a 4 high x 16 wide target keeps rows 24-39
  std::vector<uint8_t> pixels;
  for (int y = 0; y < 64; ++y) pixels.insert(pixels.end(), 16, uint8_t(y >= 24 && y < 40 ? 255 : 0));
  write_image(folder / "tall.png", Format::Png, 16, 64, 1, pixels);
  const std::vector<uint8_t> bytes = load_image_bytes(folder / "tall.png", {4, 16, 1});
  ASSERT_EQ(bytes.size(), 4u * 16u);
  expect_all_pixels(bytes, {255}, 0);
}

TEST_F(ImageIo, TargetSizedImageIsCopiedInRasterOrder) {
  const std::vector<uint8_t> pixels = test::random_bytes(5 * 7 * 3, 1);  // 7 wide, 5 high
  write_image(folder / "exact.png", Format::Png, 7, 5, 3, pixels);
  EXPECT_EQ(load_image_bytes(folder / "exact.png", {5, 7, 3}), pixels);
}

TEST_F(ImageIo, MemoryAndFileGiveTheSameBytes) {
  write_image(folder / "noise.png", Format::Png, 33, 21, 3, test::random_bytes(33 * 21 * 3, 2));
  const std::vector<uint8_t> file = test::read_whole_file(folder / "noise.png");
  EXPECT_EQ(image_bytes_from_memory(file.data(), file.size(), {9, 13, 3}, "noise.png"),
            load_image_bytes(folder / "noise.png", {9, 13, 3}));
}

TEST_F(ImageIo, TruncatedPngFailsNamingTheFile) {
  write_image(folder / "cut.png", Format::Png, 64, 64, 3, test::random_bytes(64 * 64 * 3, 3));
  std::vector<uint8_t> bytes = test::read_whole_file(folder / "cut.png");
  bytes.resize(bytes.size() / 2);
  test::write_file(folder / "cut.png", bytes);
  expect_error([&] { load_image_bytes(folder / "cut.png", {8, 8, 3}); }, {"cut.png", "truncated PNG"});
}

TEST_F(ImageIo, HugeHeaderIsRefusedBeforeDecoding) {
  // Over STBI_MAX_DIMENSIONS: stb refuses on the header, and the message says why.
  test::write_file(folder / "huge.png", png_header_only(100000, 100000, 2));
  expect_error(
      [&] {
        load_image_bytes(folder / "huge.png", {8, 8, 3});
      },
      {"huge.png", "100000x100000", "over the limit of 65536 pixels a side"});
  // Under stb's caps but 400 megapixels: our limit refuses it on the header (there are no pixels to decode).
  test::write_file(folder / "big.png", png_header_only(20000, 20000, 0));
  expect_error(
      [&] {
        load_image_bytes(folder / "big.png", {8, 8, 3});
      },
      {"big.png", "20000x20000", "over the limit of 64000000"});
}

TEST_F(ImageIo, PixelLimitIsConfigurable) {
  write_image(folder / "small.png", Format::Png, 20, 20, 3, uniform(20, 20, {1, 2, 3}));
  ImageLimits limits;
  limits.max_pixels = 399;
  expect_error(
      [&] {
        load_image_bytes(folder / "small.png", {4, 4, 3}, limits);
      },
      {"small.png", "400 pixels"});
  limits.max_pixels = 400;
  EXPECT_EQ(load_image_bytes(folder / "small.png", {4, 4, 3}, limits).size(), 48u);
}

TEST_F(ImageIo, RandomBytesWithPngExtensionFailCleanly) {
  test::write_file(folder / "noise.png", test::random_bytes(1000, 4));
  expect_error(
      [&] {
        load_image_bytes(folder / "noise.png", {8, 8, 3});
      },
      {"noise.png", "not a PNG, JPEG, BMP or TGA"});
}

// Regression (fuzz_image): stb_image 2.27 writes past its 257-entry Huffman size table when a DHT segment
// declares more than 256 codes (nothings/stb#1289). The guard refuses such a JPEG before stb sees it.
TEST_F(ImageIo, JpegHuffmanTableWithTooManyCodesIsRefused) {
  write_image(folder / "dht.jpg", Format::Jpeg, 16, 16, 3, uniform(16, 16, {90, 90, 90}));
  std::vector<uint8_t> bytes = test::read_whole_file(folder / "dht.jpg");
  size_t dht = 0;
  while (dht + 21 < bytes.size() && !(bytes[dht] == 0xFF && bytes[dht + 1] == 0xC4)) ++dht;
  ASSERT_LT(dht + 21, bytes.size()) << "stb_image_write wrote no DHT segment";
  std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(dht) + 5,
            bytes.begin() + static_cast<std::ptrdiff_t>(dht) + 21, 255);
  test::write_file(folder / "dht.jpg", bytes);
  expect_error([&] { load_image_bytes(folder / "dht.jpg", {8, 8, 3}); }, {"dht.jpg", "Huffman table"});
}

// Regression (fuzz_image): stb_image 2.27 passes a null pointer to memcpy for an empty first IDAT chunk.
// Such a PNG is refused; an empty IDAT after the image data is harmless and still loads.
TEST_F(ImageIo, PngWithAnEmptyFirstIdatIsRefused) {
  write_image(folder / "a.png", Format::Png, 5, 4, 3, uniform(5, 4, {7, 8, 9}));
  const std::vector<uint8_t> png = test::read_whole_file(folder / "a.png");
  size_t idat = 8;  // after the signature; chunks are length, type, data, CRC
  const auto length_at = [&](size_t at) {
    return size_t{png[at]} << 24 | size_t{png[at + 1]} << 16 | size_t{png[at + 2]} << 8 | size_t{png[at + 3]};
  };
  while (std::memcmp(png.data() + idat + 4, "IDAT", 4) != 0) idat += 12 + length_at(idat);
  const size_t after_idat = idat + 12 + length_at(idat);
  std::vector<uint8_t> empty_idat = {0, 0, 0, 0, 'I', 'D', 'A', 'T'};
  const uLong crc = crc32(0, empty_idat.data() + 4, 4);
  for (int shift = 24; shift >= 0; shift -= 8) empty_idat.push_back(static_cast<uint8_t>(crc >> shift));

  std::vector<uint8_t> first = png;
  first.insert(first.begin() + static_cast<std::ptrdiff_t>(idat), empty_idat.begin(), empty_idat.end());
  test::write_file(folder / "first.png", first);
  expect_error([&] { load_image_bytes(folder / "first.png", {4, 5, 3}); }, {"first.png", "IDAT"});

  std::vector<uint8_t> later = png;
  later.insert(later.begin() + static_cast<std::ptrdiff_t>(after_idat), empty_idat.begin(), empty_idat.end());
  test::write_file(folder / "later.png", later);
  expect_all_pixels(load_image_bytes(folder / "later.png", {4, 5, 3}), {7, 8, 9}, 0);
}

// A BMP may store its rows top-down, with a negative height. stb_image 2.27's header reader reports that
// height as it is; the loader flips the rows. The same picture either way gives the same bytes.
TEST_F(ImageIo, TopDownBmpLoadsLikeBottomUp) {
  const int width = 6, height = 5;
  const std::vector<uint8_t> pixels = test::random_bytes(width * height * 3, 7);
  write_image(folder / "up.bmp", Format::Bmp, width, height, 3, pixels);
  std::vector<uint8_t> bmp = test::read_whole_file(folder / "up.bmp");
  ASSERT_EQ(bmp[14], 40) << "expected a BITMAPINFOHEADER";
  const uint32_t offset = bmp[10] | bmp[11] << 8 | bmp[12] << 16 | uint32_t{bmp[13]} << 24;
  const size_t stride = (width * 3 + 3) / 4 * 4;
  ASSERT_EQ(bmp.size(), offset + stride * height);
  std::vector<uint8_t> down = bmp;
  for (int y = 0; y < height; ++y) {
    std::memcpy(down.data() + offset + y * stride, bmp.data() + offset + (height - 1 - y) * stride, stride);
  }
  const int32_t negative = -height;
  std::memcpy(down.data() + 22, &negative, 4);  // little-endian, as the format stores it
  test::write_file(folder / "down.bmp", down);
  EXPECT_EQ(load_image_bytes(folder / "down.bmp", {height, width, 3}), pixels);
  EXPECT_EQ(load_image_bytes(folder / "up.bmp", {height, width, 3}), pixels);
}

// stb_image reads past the end of a BMP as zeros: a cut-off one must fail, not load with black rows.
TEST_F(ImageIo, TruncatedBmpIsRefused) {
  write_image(folder / "cut.bmp", Format::Bmp, 28, 28, 3, test::random_bytes(28 * 28 * 3, 8));
  std::vector<uint8_t> bytes = test::read_whole_file(folder / "cut.bmp");
  const size_t whole = bytes.size();
  bytes.resize(whole - 1);
  test::write_file(folder / "cut.bmp", bytes);
  expect_error([&] { load_image_bytes(folder / "cut.bmp", {28, 28, 3}); },
               {"cut.bmp", "truncated BMP", std::to_string(whole) + " bytes"});
}

// Regression (fuzz_image): stb_image sized its image-data buffer by the length an IDAT chunk claims, before
// reading it, so a 128-byte file could make it allocate a gigabyte. A chunk longer than the rest of the file
// is refused first, naming the chunk; trailing bytes after IEND are still harmless.
TEST_F(ImageIo, PngChunkLongerThanTheFileIsRefused) {
  write_image(folder / "a.png", Format::Png, 6, 5, 3, uniform(6, 5, {1, 2, 3}));
  const std::vector<uint8_t> png = test::read_whole_file(folder / "a.png");
  size_t idat = 8;
  while (std::memcmp(png.data() + idat + 4, "IDAT", 4) != 0) {
    idat += 12 + (size_t{png[idat]} << 24 | size_t{png[idat + 1]} << 16 | size_t{png[idat + 2]} << 8 | png[idat + 3]);
  }
  std::vector<uint8_t> claims = png;
  claims[idat] = 0x3f;  // about a gigabyte
  test::write_file(folder / "claims.png", claims);
  expect_error([&] { load_image_bytes(folder / "claims.png", {5, 6, 3}); },
               {"claims.png", "truncated PNG", "IDAT chunk claims"});

  std::vector<uint8_t> cut(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(idat + 8 + 3));
  test::write_file(folder / "cut.png", cut);
  expect_error([&] { load_image_bytes(folder / "cut.png", {5, 6, 3}); }, {"cut.png", "truncated PNG"});

  std::vector<uint8_t> trailing = png;
  trailing.insert(trailing.end(), {0, 0, 0x10, 0, 'J', 'U', 'N', 'K'});
  test::write_file(folder / "trailing.png", trailing);
  expect_all_pixels(load_image_bytes(folder / "trailing.png", {5, 6, 3}), {1, 2, 3}, 0);
}

// stb_image never checks a PNG chunk's CRC: a damaged byte in the pixel data must fail, naming the chunk.
TEST_F(ImageIo, PngWithAWrongChecksumIsRefused) {
  write_image(folder / "a.png", Format::Png, 9, 9, 3, test::random_bytes(9 * 9 * 3, 9));
  std::vector<uint8_t> png = test::read_whole_file(folder / "a.png");
  size_t idat = 8;
  while (std::memcmp(png.data() + idat + 4, "IDAT", 4) != 0) {
    idat += 12 + (size_t{png[idat]} << 24 | size_t{png[idat + 1]} << 16 | size_t{png[idat + 2]} << 8 | png[idat + 3]);
  }
  png[idat + 8 + 5] ^= 0x10;  // one bit of the compressed pixels
  test::write_file(folder / "bad.png", png);
  expect_error([&] { load_image_bytes(folder / "bad.png", {9, 9, 3}); }, {"bad.png", "IDAT", "CRC"});
}

TEST_F(ImageIo, EmptyMissingAndOversizedFilesAreRefused) {
  test::write_file(folder / "empty.png", std::vector<uint8_t>{});
  expect_error([&] { load_image_bytes(folder / "empty.png", {8, 8, 3}); }, {"empty.png", "empty"});
  expect_error([&] { load_image_bytes(folder / "missing.png", {8, 8, 3}); }, {"missing.png", "no such file"});
  write_image(folder / "a.png", Format::Png, 20, 20, 3, test::random_bytes(1200, 5));
  ImageLimits limits;
  limits.max_file_bytes = 100;
  expect_error(
      [&] {
        load_image_bytes(folder / "a.png", {8, 8, 3}, limits);
      },
      {"a.png", "over the limit of 100 bytes"});
}

TEST_F(ImageIo, UnusableShapesAreRefused) {
  write_image(folder / "a.png", Format::Png, 4, 4, 3, uniform(4, 4, {1, 2, 3}));
  for (const ImageShape shape : {ImageShape{0, 8, 3}, ImageShape{8, 8, 2}, ImageShape{8, 8, 4},
                                 ImageShape{-1, 8, 1}, ImageShape{70000, 8, 1}}) {
    expect_error([&] { load_image_bytes(folder / "a.png", shape); }, {"a.png", "image shape"});
  }
}

}  // namespace
}  // namespace stx::engine
