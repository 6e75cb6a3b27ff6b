// The parts of the safetensors format shared by the reader and the writer: dtypes and element counts.
#include "stx/engine/io/safetensors.h"

namespace stx::engine {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F64: return 8;
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I64: return 8;
    case DType::I32: return 4;
    case DType::I16: return 2;
    case DType::I8: return 1;
    case DType::U8: return 1;
    case DType::BOOL: return 1;
  }
  return 0;  // not a DType; callers treat 0 as "unknown"
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F64: return "F64";
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I64: return "I64";
    case DType::I32: return "I32";
    case DType::I16: return "I16";
    case DType::I8: return "I8";
    case DType::U8: return "U8";
    case DType::BOOL: return "BOOL";
  }
  return "unknown";
}

uint64_t TensorInfo::numel() const {
  uint64_t count = 1;
  for (const int64_t dimension : shape) count *= static_cast<uint64_t>(dimension);
  return count;
}

}  // namespace stx::engine
