// Every rule of the safetensors spec that the reader enforces, one test each: the test builds the bad
// bytes itself and asserts that the error names the source and the reason.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "stx/engine/io/safetensors.h"

using stx::engine::Error;
using stx::engine::SafetensorsFile;
using stx::engine::SafetensorsLimits;

namespace {

constexpr const char* kSource = "bad.safetensors";

std::vector<uint8_t> with_header_size(uint64_t header_size, const std::string& rest) {
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(header_size >> (8 * i)));
  bytes.insert(bytes.end(), rest.begin(), rest.end());
  return bytes;
}

// A file with this header and `data_size` data bytes (all 0x3F: finite in every float dtype).
std::vector<uint8_t> file_with(const std::string& header, size_t data_size) {
  return with_header_size(header.size(), header + std::string(data_size, '\x3F'));
}

::testing::AssertionResult Refuses(const std::vector<uint8_t>& bytes, const std::string& reason,
                                   const SafetensorsLimits& limits = {}) {
  try {
    SafetensorsFile::parse(bytes, kSource, limits);
  } catch (const Error& error) {
    const std::string message = error.what();
    if (message.rfind(std::string(kSource) + ": ", 0) != 0) {
      return ::testing::AssertionFailure()
             << "error \"" << message << "\" does not start with the source name";
    }
    if (message.find('\n') != std::string::npos) return ::testing::AssertionFailure() << "multi-line error";
    if (message.find(reason) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "error \"" << message << "\" does not mention \"" << reason << "\"";
    }
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "the file was accepted";
}

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape, uint64_t begin,
                  uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

}  // namespace

TEST(SafetensorsChecks, AcceptsAValidHandWrittenFile) {
  // Whitespace padding, key order and empty tensors between full ones are all allowed.
  const std::string header =
      "{ " + entry("b", "F32", "[2]", 8, 16) + ", " + entry("a", "I16", "[2,2]", 0, 8) + "," +
      entry("gap_free_empty", "F32", "[0,5]", 8, 8) + ",\"__metadata__\":{\"k\":\"v\"}}   ";
  const SafetensorsFile file = SafetensorsFile::parse(file_with(header, 16), kSource);
  ASSERT_EQ(file.tensors().size(), 3u);
  EXPECT_EQ(file.tensors()[0].name, "a");
  EXPECT_EQ(file.tensors()[1].name, "gap_free_empty");
  EXPECT_EQ(file.tensors()[2].name, "b");
  EXPECT_EQ(file.metadata().at("k"), "v");
}

TEST(SafetensorsChecks, RefusesFileShorterThanTheHeaderSize) {
  EXPECT_TRUE(Refuses({}, "file is too short (0 bytes)"));
  EXPECT_TRUE(Refuses({2, 0, 0, 0, 0, 0, 0}, "file is too short (7 bytes)"));
}

TEST(SafetensorsChecks, RefusesHeaderLargerThanTheLimit) {
  EXPECT_TRUE(
      Refuses(with_header_size((100ull << 20) + 1, "{}"), "is larger than the limit of 104857600 bytes"));
  SafetensorsLimits small;
  small.max_header_bytes = 8;
  EXPECT_TRUE(
      Refuses(file_with("{\"__metadata__\":{}}", 0), "header size 19 is larger than the limit of 8", small));
}

TEST(SafetensorsChecks, RefusesHeaderSizeBeyondTheFileWithoutOverflow) {
  EXPECT_TRUE(Refuses(with_header_size(3, "{}"), "header size 3 does not fit in the file (10 bytes)"));
  // N + 8 would wrap around to 7: the check must not add.
  SafetensorsLimits unlimited;
  unlimited.max_header_bytes = std::numeric_limits<uint64_t>::max();
  EXPECT_TRUE(Refuses(with_header_size(std::numeric_limits<uint64_t>::max(), "{}"),
                      "does not fit in the file", unlimited));
}

TEST(SafetensorsChecks, RefusesFileLargerThanTheLimit) {
  SafetensorsLimits small;
  small.max_file_bytes = 9;
  EXPECT_TRUE(Refuses(file_with("{}", 0), "the file is 10 bytes, more than the limit of 9 bytes", small));
}

TEST(SafetensorsChecks, RefusesHeaderNotStartingWithBrace) {
  EXPECT_TRUE(Refuses(file_with(" {}", 0), "header does not start with '{'"));
  EXPECT_TRUE(Refuses(file_with("[]", 0), "header does not start with '{'"));
  EXPECT_TRUE(Refuses(file_with("", 0), "header does not start with '{'"));
}

TEST(SafetensorsChecks, RefusesHeaderThatIsNotValidJson) {
  EXPECT_TRUE(Refuses(file_with("{\"a\":", 0), "header is not valid JSON"));
  EXPECT_TRUE(Refuses(file_with("{} trailing", 0), "header is not valid JSON"));
  // nlohmann's lexer reads a NUL as the end of input, so these would pass without a check of our own.
  EXPECT_TRUE(Refuses(file_with(std::string("{}\0", 3), 0), "header is not valid JSON (NUL byte at byte 2"));
  EXPECT_TRUE(Refuses(file_with(std::string("{}\0\xff\xfe", 5), 0), "header is not valid JSON"));
  EXPECT_TRUE(Refuses(file_with("{\"\xff\":{}}", 0), "header is not valid JSON"));  // invalid UTF-8
  EXPECT_TRUE(Refuses(file_with("{/*c*/}", 0), "header is not valid JSON"));
}

TEST(SafetensorsChecks, RefusesDeeplyNestedHeader) {
  EXPECT_TRUE(Refuses(file_with("{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}", 0),
                      "header nests deeper than"));
}

TEST(SafetensorsChecks, RefusesEntryThatIsNotAnObject) {
  EXPECT_TRUE(Refuses(file_with("{\"w\":[1,2]}", 0), "tensor 'w': entry is not a JSON object"));
}

TEST(SafetensorsChecks, RefusesMissingOrUnknownDtype) {
  EXPECT_TRUE(
      Refuses(file_with("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4), "tensor 'w' has no dtype"));
  EXPECT_TRUE(Refuses(file_with("{\"w\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4),
                      "dtype is not a string"));
  EXPECT_TRUE(
      Refuses(file_with("{" + entry("w", "F8_E4M3", "[1]", 0, 1) + "}", 1), "unknown dtype 'F8_E4M3'"));
  EXPECT_TRUE(Refuses(file_with("{" + entry("w", "f32", "[1]", 0, 4) + "}", 4), "unknown dtype 'f32'"));
}

TEST(SafetensorsChecks, RefusesShapeThatIsNotAnArrayOfNonNegativeIntegers) {
  EXPECT_TRUE(
      Refuses(file_with("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4), "tensor 'w' has no shape"));
  EXPECT_TRUE(Refuses(file_with("{" + entry("w", "F32", "4", 0, 4) + "}", 4), "shape is not an array"));
  for (const std::string bad : {"[-1]", "[1.5]", "[\"2\"]", "[null]", "[1e2]", "[9223372036854775808]"}) {
    EXPECT_TRUE(Refuses(file_with("{" + entry("w", "F32", bad, 0, 4) + "}", 4),
                        "shape must hold non-negative integers"))
        << bad;
  }
}

TEST(SafetensorsChecks, RefusesMalformedDataOffsets) {
  EXPECT_TRUE(
      Refuses(file_with("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4), "tensor 'w' has no data_offsets"));
  for (const std::string bad : {"[0]", "[0,4,8]", "[-4,0]", "[0,4.0]", "{}", "[0,18446744073709551616]"}) {
    const std::string header = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":" + bad + "}}";
    EXPECT_TRUE(Refuses(file_with(header, 4), "data_offsets must be [begin, end]")) << bad;
  }
}

TEST(SafetensorsChecks, RefusesBeginAfterEnd) {
  EXPECT_TRUE(Refuses(file_with("{" + entry("w", "F32", "[1]", 8, 4) + "}", 8),
                      "data_offsets begin 8 is after end 4"));
}

TEST(SafetensorsChecks, RefusesByteCountThatDisagreesWithShape) {
  EXPECT_TRUE(Refuses(
      file_with("{" + entry("w", "F32", "[2,3]", 0, 20) + "}", 20),
      "tensor 'w' has shape [2, 3] and dtype F32, which need 24 bytes, but its data_offsets hold 20"));
  EXPECT_TRUE(Refuses(file_with("{" + entry("s", "F64", "[]", 0, 4) + "}", 4), "which need 8 bytes"));
}

TEST(SafetensorsChecks, RefusesShapeWhoseByteCountOverflows) {
  // 2^62 * 4 elements * 4 bytes = 2^66 wraps to 0, which would match empty offsets without the check.
  EXPECT_TRUE(Refuses(file_with("{" + entry("w", "F32", "[4611686018427387904,4]", 0, 0) + "}", 0),
                      "overflows a 64-bit byte count"));
  EXPECT_TRUE(Refuses(file_with("{" + entry("w", "U8", "[4294967296,4294967296,0]", 0, 0) + "}", 0),
                      "overflows a 64-bit byte count"));
}

TEST(SafetensorsChecks, RefusesDuplicateNames) {
  EXPECT_TRUE(
      Refuses(file_with("{" + entry("w", "F32", "[1]", 0, 4) + "," + entry("w", "F32", "[1]", 4, 8) + "}", 8),
              "duplicate key 'w'"));
  EXPECT_TRUE(Refuses(
      file_with("{\"w\":{\"dtype\":\"F32\",\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4),
      "duplicate key 'dtype'"));
}

TEST(SafetensorsChecks, RefusesGapsBetweenTensors) {
  EXPECT_TRUE(Refuses(
      file_with("{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("b", "F32", "[1]", 8, 12) + "}", 12),
      "gap in the data section: bytes 4 to 8 before tensor 'b'"));
  EXPECT_TRUE(
      Refuses(file_with("{" + entry("a", "F32", "[1]", 4, 8) + "}", 8), "bytes 0 to 4 before tensor 'a'"));
}

TEST(SafetensorsChecks, RefusesOverlappingTensors) {
  EXPECT_TRUE(Refuses(
      file_with("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[2]", 4, 12) + "}", 12),
      "tensor 'b' overlaps tensor 'a'"));
  EXPECT_TRUE(
      Refuses(file_with("{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("b", "I32", "[1]", 0, 4) + "}", 4),
              "overlaps"));
  // An empty tensor inside another one is an overlap too.
  EXPECT_TRUE(
      Refuses(file_with("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("e", "F32", "[0]", 4, 4) + "}", 8),
              "tensor 'e' overlaps tensor 'a'"));
}

TEST(SafetensorsChecks, RefusesTrailingBytesAfterTheLastTensor) {
  EXPECT_TRUE(Refuses(file_with("{" + entry("a", "F32", "[1]", 0, 4) + "}", 5),
                      "the last tensor ends at byte 4 but the data section has 5 bytes"));
  EXPECT_TRUE(Refuses(file_with("{}", 3), "trailing bytes"));
}

TEST(SafetensorsChecks, RefusesTensorPastTheEndOfTheFile) {
  EXPECT_TRUE(Refuses(file_with("{" + entry("a", "F32", "[2]", 0, 8) + "}", 6),
                      "tensor 'a' ends at byte 8, past the end of the data section (6 bytes)"));
}

TEST(SafetensorsChecks, RefusesMetadataThatIsNotStringToString) {
  EXPECT_TRUE(Refuses(file_with("{\"__metadata__\":{\"step\":12}}", 0),
                      "__metadata__ value for key 'step' is not a string"));
  EXPECT_TRUE(Refuses(file_with("{\"__metadata__\":{\"x\":{\"y\":\"z\"}}}", 0), "is not a string"));
  EXPECT_TRUE(Refuses(file_with("{\"__metadata__\":\"pt\"}", 0), "__metadata__ is not a JSON object"));
}

TEST(SafetensorsChecks, AllowsEmptyTensorsAndAnEmptyHeader) {
  const SafetensorsFile empty = SafetensorsFile::parse(file_with("{}", 0), kSource);
  EXPECT_TRUE(empty.tensors().empty());
  const SafetensorsFile zero =
      SafetensorsFile::parse(file_with("{" + entry("z", "BF16", "[3,0]", 0, 0) + "}", 0), kSource);
  ASSERT_EQ(zero.tensors().size(), 1u);
  EXPECT_EQ(zero.tensors()[0].numel(), 0u);
  EXPECT_NO_THROW(zero.check_finite(zero.tensors()[0]));
}

TEST(SafetensorsChecks, NamesFromTheFileStayOnOneLine) {
  // Control characters are escaped and long names cut, so the message stays one readable line.
  EXPECT_TRUE(
      Refuses(file_with("{" + entry("line\\nbreak", "XX", "[1]", 0, 1) + "}", 1), "tensor 'line\\x0abreak'"));
  const std::string long_name(5000, 'n');
  try {
    SafetensorsFile::parse(file_with("{" + entry(long_name, "XX", "[1]", 0, 1) + "}", 1), kSource);
    FAIL() << "accepted";
  } catch (const Error& error) {
    EXPECT_LT(std::strlen(error.what()), 300u) << error.what();
  }
}
