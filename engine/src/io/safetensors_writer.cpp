// The safetensors writer: the layout that the reader (and the Python safetensors package) accepts.
#include <cstring>
#include <new>
#include <nlohmann/json.hpp>
#include <set>

#include "stx/engine/io/atomic_file.h"
#include "stx/engine/io/safetensors.h"

namespace stx::engine {
namespace {

// ordered_json keeps the order of the Python package: __metadata__ first, then the tensors as given,
// each with dtype, shape, data_offsets.
using ordered_json = nlohmann::ordered_json;

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// `context` starts every message: "cannot encode safetensors" or "cannot write <path>".
std::string encode(const std::vector<TensorWrite>& tensors,
                   const std::map<std::string, std::string>& metadata, const std::string& context) {
  const auto fail = [&context](const std::string& reason) { return Error(context + ": " + reason); };
  ordered_json header = ordered_json::object();
  if (!metadata.empty()) {
    ordered_json& entries = header["__metadata__"] = ordered_json::object();
    for (const auto& [key, value] : metadata) entries[key] = value;
  }

  std::set<std::string_view> names;
  uint64_t data_size = 0;
  for (const TensorWrite& tensor : tensors) {
    const std::string what = "tensor '" + tensor.name + "'";
    if (tensor.name.empty()) throw fail("a tensor has an empty name");
    if (tensor.name == "__metadata__") throw fail("'__metadata__' is reserved and cannot name a tensor");
    if (!names.insert(tensor.name).second) throw fail(what + " appears twice");
    const size_t element_size = dtype_size(tensor.dtype);
    if (element_size == 0) throw fail(what + " has an unknown dtype");
    uint64_t expected_bytes = element_size;
    for (const int64_t dimension : tensor.shape) {
      if (dimension < 0) throw fail(what + " has a negative dimension in shape " + shape_text(tensor.shape));
      if (__builtin_mul_overflow(expected_bytes, static_cast<uint64_t>(dimension), &expected_bytes)) {
        throw fail(what + ": shape " + shape_text(tensor.shape) + " overflows a 64-bit byte count");
      }
    }
    if (tensor.nbytes != expected_bytes) {
      throw fail(what + " has shape " + shape_text(tensor.shape) + " and dtype " +
                 std::string(dtype_name(tensor.dtype)) + ", which need " + std::to_string(expected_bytes) +
                 " bytes, but " + std::to_string(tensor.nbytes) + " bytes were given");
    }
    if (tensor.nbytes > 0 && tensor.data == nullptr) throw fail(what + " has no data");
    uint64_t end = 0;
    if (__builtin_add_overflow(data_size, tensor.nbytes, &end))
      throw fail("the tensors overflow a 64-bit size");

    ordered_json& entry = header[tensor.name] = ordered_json::object();
    entry["dtype"] = dtype_name(tensor.dtype);
    entry["shape"] = tensor.shape;
    entry["data_offsets"] = ordered_json::array({data_size, end});
    data_size = end;
  }

  std::string header_text;
  try {
    header_text = header.dump();
  } catch (const ordered_json::type_error&) {
    throw fail("a tensor name or metadata string is not valid UTF-8");
  }
  // Padding to 8 bytes puts the data section (and so every F64/I64 tensor) at an aligned offset.
  header_text.append((8 - header_text.size() % 8) % 8, ' ');

  std::string out;
  try {
    out.reserve(8 + header_text.size() + data_size);
  } catch (const std::exception&) {  // bad_alloc or length_error
    throw fail("not enough memory to encode " + std::to_string(data_size) + " bytes of tensors");
  }
  const uint64_t header_size = header_text.size();
  for (size_t i = 0; i < 8; ++i) out.push_back(static_cast<char>((header_size >> (8 * i)) & 0xFF));
  out += header_text;
  for (const TensorWrite& tensor : tensors) {
    if (tensor.nbytes > 0) out.append(static_cast<const char*>(tensor.data), tensor.nbytes);
  }
  return out;
}

}  // namespace

std::string encode_safetensors(const std::vector<TensorWrite>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  return encode(tensors, metadata, "cannot encode safetensors");
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, encode(tensors, metadata, "cannot write " + path.string()));
}

}  // namespace stx::engine
