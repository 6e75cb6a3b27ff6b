#pragma once
// Our own safetensors reader and writer (https://github.com/huggingface/safetensors), std only, so that
// checkpoints never go through torch::load. The format:
//
//   [8 bytes: N, little-endian u64][N bytes: JSON header][data section]
//   header: {"__metadata__": {"k": "v"}, "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}
//
// Offsets count from the start of the data section. The reader checks every rule of the spec (see
// shared/docs/reliability.md) and throws stx::engine::Error naming the file and the reason.
//
//   auto file = SafetensorsFile::open(folder / "model.safetensors");
//   const TensorInfo* w = file.find("w");              // nullptr if absent
//   file.check_finite(*w);                             // refuses NaN and Inf
//   std::memcpy(out, file.data(*w), w->nbytes());      // data(*w) may be unaligned
//
//   write_safetensors(folder / "model.safetensors", {{"w", DType::F32, {2, 3}, values, 24}});
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "stx/engine/error.h"

namespace stx::engine {

// Tensor data is read and written in the host's byte order, which the format requires to be little-endian.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian");

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);  // "F32", ... as in the safetensors spec

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;   // [] for a scalar; a zero dimension makes an empty tensor
  uint64_t begin = 0, end = 0;  // byte offsets in the data section

  uint64_t numel() const;
  uint64_t nbytes() const { return end - begin; }
};

struct SafetensorsLimits {
  uint64_t max_header_bytes = 100ull << 20;  // the spec's own limit
  uint64_t max_file_bytes = 8ull << 30;
};

class SafetensorsFile {
 public:
  // read_file + parse; source_name is the path.
  static SafetensorsFile open(const std::filesystem::path& path, const SafetensorsLimits& limits = {});
  static SafetensorsFile parse(std::vector<uint8_t> bytes, const std::string& source_name,
                               const SafetensorsLimits& limits = {});

  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // sorted by begin
  const TensorInfo* find(std::string_view name) const;                 // nullptr if absent
  // Start of the tensor's bytes (not aligned to its dtype: copy with memcpy). Throws Error for a
  // TensorInfo whose offsets lie outside this file's data section.
  const uint8_t* data(const TensorInfo& tensor) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }  // "__metadata__"
  const std::string& source_name() const { return source_name_; }

  // For F64/F32/F16/BF16 tensors: throws Error("<source>: tensor '<name>' contains NaN or Inf (element k)").
  // Other dtypes are always finite.
  void check_finite(const TensorInfo& tensor) const;

 private:
  SafetensorsFile() = default;

  std::vector<uint8_t> bytes_;
  uint64_t data_start_ = 0;  // 8 + N
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
  std::string source_name_;
};

struct TensorWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void* data;  // nbytes bytes in the host's (little-endian) order; may be null when nbytes is 0
  uint64_t nbytes;
};

// Encodes a valid file: header JSON padded with spaces to a multiple of 8, tensors in the given order,
// contiguous. Throws Error when the input is inconsistent (nbytes != numel * dtype size, duplicate or
// reserved names, negative dimensions).
std::string encode_safetensors(const std::vector<TensorWrite>& tensors,
                               const std::map<std::string, std::string>& metadata = {});

// encode_safetensors + write_file_atomic.
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace stx::engine
