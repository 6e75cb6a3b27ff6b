// The safetensors writer and reader together: round trips, the exact byte layout, finiteness checks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "io_test_support.h"
#include "stx/engine/io/atomic_file.h"
#include "stx/engine/io/safetensors.h"

namespace fs = std::filesystem;
using stx::engine::DType;
using stx::engine::Error;
using stx::engine::SafetensorsFile;
using stx::engine::TensorInfo;
using stx::engine::TensorWrite;

namespace {

std::vector<uint8_t> to_bytes(const std::string& text) { return {text.begin(), text.end()}; }

SafetensorsFile reparse(const std::string& encoded) {
  return SafetensorsFile::parse(to_bytes(encoded), "memory");
}

template <typename T>
std::vector<T> values_of(const SafetensorsFile& file, const TensorInfo& tensor) {
  std::vector<T> values(tensor.nbytes() / sizeof(T));
  std::memcpy(values.data(), file.data(tensor), tensor.nbytes());
  return values;
}

}  // namespace

TEST(SafetensorsDType, SizesAndNamesFollowTheSpec) {
  const std::vector<std::tuple<DType, size_t, std::string_view>> expected = {
      {DType::F64, 8, "F64"}, {DType::F32, 4, "F32"},  {DType::F16, 2, "F16"}, {DType::BF16, 2, "BF16"},
      {DType::I64, 8, "I64"}, {DType::I32, 4, "I32"},  {DType::I16, 2, "I16"}, {DType::I8, 1, "I8"},
      {DType::U8, 1, "U8"},   {DType::BOOL, 1, "BOOL"}};
  for (const auto& [dtype, size, name] : expected) {
    EXPECT_EQ(stx::engine::dtype_size(dtype), size) << name;
    EXPECT_EQ(stx::engine::dtype_name(dtype), name);
  }
}

TEST(Safetensors, RoundTripsSeveralDtypesShapesScalarsAndEmptyTensors) {
  // given: tensors of awkward shapes, a scalar and two empty tensors
  const std::vector<float> matrix = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f};  // [2, 3]
  const std::vector<double> scalar = {3.141592653589793};                       // []
  const std::vector<int64_t> longs = {-1, std::numeric_limits<int64_t>::max(), 7};
  const std::vector<uint16_t> halves = {0x3C00, 0xC000};  // F16 1.0, -2.0
  const std::vector<uint8_t> flags = {1, 0, 1, 1, 0};
  const std::vector<int8_t> bytes = {-128, 127, 0};
  const std::vector<TensorWrite> tensors = {
      {"layer.0.weight", DType::F32, {2, 3}, matrix.data(), 24},
      {"scale", DType::F64, {}, scalar.data(), 8},
      {"empty", DType::F32, {0, 3}, nullptr, 0},
      {"ids", DType::I64, {3}, longs.data(), 24},
      {"half", DType::F16, {1, 2}, halves.data(), 4},
      {"also_empty", DType::BF16, {4, 0, 2}, nullptr, 0},
      {"mask", DType::BOOL, {5}, flags.data(), 5},
      {"small", DType::I8, {3, 1}, bytes.data(), 3},
  };

  // when
  const SafetensorsFile file = reparse(stx::engine::encode_safetensors(tensors));

  // then: every tensor is back with its dtype, shape and bytes, and they sit in the order written
  ASSERT_EQ(file.tensors().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo* info = file.find(tensors[i].name);
    ASSERT_NE(info, nullptr) << tensors[i].name;
    EXPECT_EQ(info->dtype, tensors[i].dtype) << tensors[i].name;
    EXPECT_EQ(info->shape, tensors[i].shape) << tensors[i].name;
    EXPECT_EQ(info->nbytes(), tensors[i].nbytes) << tensors[i].name;
    EXPECT_EQ(info->numel() * stx::engine::dtype_size(info->dtype), info->nbytes()) << tensors[i].name;
    if (tensors[i].nbytes > 0) {
      EXPECT_EQ(std::memcmp(file.data(*info), tensors[i].data, tensors[i].nbytes), 0) << tensors[i].name;
    }
  }
  for (size_t i = 1; i < file.tensors().size(); ++i)
    EXPECT_LE(file.tensors()[i - 1].end, file.tensors()[i].begin);
  EXPECT_EQ(file.find("scale")->numel(), 1u);
  EXPECT_EQ(file.find("empty")->numel(), 0u);
  EXPECT_EQ(values_of<float>(file, *file.find("layer.0.weight")), matrix);
  EXPECT_EQ(values_of<int64_t>(file, *file.find("ids")), longs);
  EXPECT_EQ(file.find("missing"), nullptr);
  EXPECT_TRUE(file.metadata().empty());
  EXPECT_EQ(file.source_name(), "memory");
}

TEST(Safetensors, RoundTripsMetadata) {
  const std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                       {"step", "1200"},
                                                       {"note", "quotes \" and \\ and\nnewlines, ünïcödé"},
                                                       {"", "empty key"}};
  const float value = 2.0f;
  const SafetensorsFile file =
      reparse(stx::engine::encode_safetensors({{"w", DType::F32, {1}, &value, 4}}, metadata));
  EXPECT_EQ(file.metadata(), metadata);

  const SafetensorsFile only_metadata = reparse(stx::engine::encode_safetensors({}, metadata));
  EXPECT_TRUE(only_metadata.tensors().empty());
  EXPECT_EQ(only_metadata.metadata(), metadata);
}

TEST(Safetensors, EncodedBytesFollowTheSpecLayout) {
  const float values[2] = {1.0f, 2.0f};
  const std::string encoded =
      stx::engine::encode_safetensors({{"a", DType::F32, {2}, values, 8}}, {{"format", "pt"}});

  // 8-byte little-endian header size, then the JSON header padded with spaces to a multiple of 8, then data.
  const std::string json =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const uint64_t padded_size = (json.size() + 7) / 8 * 8;
  ASSERT_EQ(encoded.size(), 8 + padded_size + 8);
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i)
    header_size |= static_cast<uint64_t>(static_cast<uint8_t>(encoded[i])) << (8 * i);
  EXPECT_EQ(header_size, padded_size);
  EXPECT_EQ(encoded.substr(8, json.size()), json);
  EXPECT_EQ(encoded.substr(8 + json.size(), padded_size - json.size()),
            std::string(padded_size - json.size(), ' '));
  EXPECT_EQ(std::memcmp(encoded.data() + 8 + padded_size, values, 8), 0);
}

TEST(Safetensors, EmptyFileHasOnlyAnEmptyHeader) {
  const std::string encoded = stx::engine::encode_safetensors({});
  EXPECT_EQ(encoded, std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  EXPECT_TRUE(reparse(encoded).tensors().empty());
}

TEST(Safetensors, EncoderRefusesInconsistentInput) {
  const float values[4] = {};
  const auto encode = [](const std::vector<TensorWrite>& tensors) {
    stx::engine::encode_safetensors(tensors);
  };
  EXPECT_TRUE(ThrowsErrorContaining(
      [&] {
        encode({{"w", DType::F32, {2, 2}, values, 12}});
      },
      "tensor 'w' has shape [2, 2] and dtype F32, which need 16 bytes, but 12"));
  EXPECT_TRUE(ThrowsErrorContaining(
      [&] {
        encode({{"w", DType::F32, {1}, values, 4}, {"w", DType::F32, {1}, values, 4}});
      },
      "'w' appears twice"));
  EXPECT_TRUE(ThrowsErrorContaining(
      [&] {
        encode({{"w", DType::F32, {-1}, values, 4}});
      },
      "negative dimension"));
  EXPECT_TRUE(ThrowsErrorContaining(
      [&] {
        encode({{"w", DType::F32, {1LL << 62, 8}, values, 0}});
      },
      "overflows"));
  EXPECT_TRUE(ThrowsErrorContaining(
      [&] {
        encode({{"__metadata__", DType::F32, {1}, values, 4}});
      },
      "reserved"));
  EXPECT_TRUE(ThrowsErrorContaining([&] { encode({{"", DType::F32, {1}, values, 4}}); }, "empty name"));
  EXPECT_TRUE(ThrowsErrorContaining([&] { encode({{"w", DType::F32, {1}, nullptr, 4}}); }, "has no data"));
  EXPECT_TRUE(ThrowsErrorContaining(
      [&] {
        encode({{"bad\xff", DType::U8, {1}, values, 1}});
      },
      "not valid UTF-8"));
}

TEST(Safetensors, CheckFiniteFindsNanAndInfInF32) {
  const std::vector<std::pair<float, uint64_t>> bad = {{std::numeric_limits<float>::quiet_NaN(), 2},
                                                       {std::numeric_limits<float>::infinity(), 0},
                                                       {-std::numeric_limits<float>::infinity(), 3}};
  for (const auto& [bad_value, position] : bad) {
    std::vector<float> values = {1.0f, -2.0f, std::numeric_limits<float>::max(), 0.0f};
    values[position] = bad_value;
    const SafetensorsFile file =
        reparse(stx::engine::encode_safetensors({{"w", DType::F32, {4}, values.data(), 16}}));
    EXPECT_TRUE(ThrowsErrorContaining(
        [&] { file.check_finite(*file.find("w")); },
        "memory: tensor 'w' contains NaN or Inf (element " + std::to_string(position) + ")"));
  }
}

TEST(Safetensors, CheckFiniteFindsNanAndInfInHalfPrecision) {
  // F16: 0x7C00 is +Inf, 0xFE00 a negative NaN, 0x7BFF the largest finite value (65504).
  for (const uint16_t bad_bits : {uint16_t{0x7C00}, uint16_t{0xFE00}}) {
    const uint16_t halves[3] = {0x3C00, 0x7BFF, bad_bits};
    const SafetensorsFile file =
        reparse(stx::engine::encode_safetensors({{"h", DType::F16, {3}, halves, 6}}));
    EXPECT_TRUE(ThrowsErrorContaining([&] { file.check_finite(*file.find("h")); },
                                      "tensor 'h' contains NaN or Inf (element 2)"));
  }
  // BF16 has the F32 exponent: 0x7F80 is +Inf.
  const uint16_t brain[2] = {0x3F80, 0x7F80};
  const SafetensorsFile file = reparse(stx::engine::encode_safetensors({{"b", DType::BF16, {2}, brain, 4}}));
  EXPECT_TRUE(ThrowsErrorContaining([&] { file.check_finite(*file.find("b")); }, "(element 1)"));
}

TEST(Safetensors, CheckFinitePassesFiniteDataAndIntegerTensors) {
  const std::vector<float> floats = {0.0f, -0.0f, std::numeric_limits<float>::max(),
                                     std::numeric_limits<float>::denorm_min(), -1e38f};
  const std::vector<double> doubles = {std::numeric_limits<double>::max(), -1.0};
  const uint16_t halves[2] = {0x7BFF, 0x8001};
  const int32_t ints[2] = {-1, 0x7F800000};  // the bits of +Inf, but an integer
  const SafetensorsFile file = reparse(stx::engine::encode_safetensors({
      {"f", DType::F32, {5}, floats.data(), 20},
      {"d", DType::F64, {2}, doubles.data(), 16},
      {"h", DType::F16, {2}, halves, 4},
      {"i", DType::I32, {2}, ints, 8},
      {"e", DType::F32, {0}, nullptr, 0},
  }));
  for (const TensorInfo& tensor : file.tensors()) EXPECT_NO_THROW(file.check_finite(tensor)) << tensor.name;
}

TEST(Safetensors, CheckFiniteFindsNanInF64) {
  const double values[2] = {1.0, std::nan("")};
  const SafetensorsFile file = reparse(stx::engine::encode_safetensors({{"d", DType::F64, {2}, values, 16}}));
  EXPECT_TRUE(ThrowsErrorContaining([&] { file.check_finite(*file.find("d")); }, "(element 1)"));
}

TEST(Safetensors, DataRefusesATensorFromAnotherFile) {
  const float value = 1.0f;
  const SafetensorsFile file = reparse(stx::engine::encode_safetensors({{"w", DType::F32, {1}, &value, 4}}));
  TensorInfo stranger = *file.find("w");
  stranger.end = 4096;
  EXPECT_TRUE(ThrowsErrorContaining([&] { file.data(stranger); }, "outside this file's data section"));
}

TEST(Safetensors, WritesAndOpensAFile) {
  std::random_device random;
  const fs::path folder = fs::temp_directory_path() / ("stx-safetensors-test-" + std::to_string(::getpid()) +
                                                       "-" + std::to_string(random()));
  fs::create_directories(folder);
  const std::vector<float> values = {1.0f, 2.0f, 3.0f};
  stx::engine::write_safetensors(folder / "model.safetensors", {{"w", DType::F32, {3}, values.data(), 12}},
                                 {{"step", "7"}});

  const SafetensorsFile file = SafetensorsFile::open(folder / "model.safetensors");
  EXPECT_EQ(file.source_name(), (folder / "model.safetensors").string());
  EXPECT_EQ(values_of<float>(file, *file.find("w")), values);
  EXPECT_EQ(file.metadata().at("step"), "7");

  // Limits apply to open() too, and bad input to write_safetensors names the path and writes nothing.
  stx::engine::SafetensorsLimits small;
  small.max_file_bytes = 16;
  EXPECT_TRUE(ThrowsErrorContaining([&] { SafetensorsFile::open(folder / "model.safetensors", small); },
                                    "more than the limit of 16 bytes"));
  EXPECT_TRUE(ThrowsErrorContaining(
      [&] {
        stx::engine::write_safetensors(folder / "bad.safetensors",
                                       {{"w", DType::F32, {3}, values.data(), 8}});
      },
      "cannot write " + (folder / "bad.safetensors").string() + ": tensor 'w'"));
  EXPECT_FALSE(fs::exists(folder / "bad.safetensors"));
  EXPECT_TRUE(ThrowsErrorContaining([&] { SafetensorsFile::open(folder / "absent.safetensors"); },
                                    (folder / "absent.safetensors").string()));
  fs::remove_all(folder);
}
