// The safetensors reader. Files are untrusted: every rule of the spec is checked before any tensor byte
// is handed out, and every refusal is an Error naming the file and the reason.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>

#include "stx/engine/io/atomic_file.h"
#include "stx/engine/io/safetensors.h"

namespace stx::engine {
namespace {

using json = nlohmann::json;

constexpr uint64_t kHeaderSizeBytes = 8;
// A valid header nests three deep (header, tensor entry, shape); the limit stops "[[[[..." from
// building a deep tree before it is refused.
constexpr size_t kMaxHeaderDepth = 8;

// Names from the file go into one-line messages: control characters are escaped, long names cut.
std::string printable(std::string_view text) {
  constexpr size_t kMaxShown = 80;
  size_t shown = std::min(text.size(), kMaxShown);
  while (shown < text.size() && shown > 0 && (static_cast<unsigned char>(text[shown]) & 0xC0) == 0x80) {
    --shown;  // do not cut a UTF-8 sequence in half
  }
  std::string out = "'";
  for (const char c : text.substr(0, shown)) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  if (shown < text.size()) out += "...";
  return out + "'";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// Builds the header's JSON tree like nlohmann's own DOM parser, but stops at duplicate keys (which the
// DOM parser would silently merge, hiding a duplicate tensor name) and at excessive nesting.
class HeaderBuilder final : public nlohmann::json_sax<json> {
 public:
  explicit HeaderBuilder(json& root) : root_(root) {}
  const std::string& problem() const { return problem_; }

  bool null() override { return add(nullptr); }
  bool boolean(bool value) override { return add(value); }
  bool number_integer(number_integer_t value) override { return add(value); }
  bool number_unsigned(number_unsigned_t value) override { return add(value); }
  bool number_float(number_float_t value, const string_t&) override { return add(value); }
  bool string(string_t& value) override { return add(std::move(value)); }
  bool binary(binary_t&) override { return stop("header holds binary data"); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& key) override {
    if (stack_.back()->contains(key)) return stop("header has a duplicate key " + printable(key));
    key_ = std::move(key);
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const json::exception&) override {
    return stop("header is not valid JSON (error at byte " + std::to_string(position) + " of the header)");
  }

 private:
  json* place(json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    json& slot = parent[key_];
    slot = std::move(value);
    return &slot;
  }
  bool add(json value) {
    place(std::move(value));
    return true;
  }
  bool open(json container) {
    if (stack_.size() >= kMaxHeaderDepth) {
      return stop("header nests deeper than " + std::to_string(kMaxHeaderDepth) + " levels");
    }
    stack_.push_back(place(std::move(container)));
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  bool stop(std::string problem) {
    problem_ = std::move(problem);
    return false;
  }

  json& root_;
  std::vector<json*> stack_;  // the open containers; each is the last child of the one below it
  std::string key_;
  std::string problem_;
};

// Reads a JSON value that must be an integer in [0, max].
bool read_count(const json& value, uint64_t max, uint64_t& out) {
  // nlohmann stores non-negative integers as unsigned, negative ones as signed, anything else as float.
  if (!value.is_number_unsigned()) return false;
  out = value.get<uint64_t>();
  return out <= max;
}

bool parse_dtype(std::string_view name, DType& out) {
  for (const DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32,
                            DType::I16, DType::I8, DType::U8, DType::BOOL}) {
    if (dtype_name(dtype) == name) {
      out = dtype;
      return true;
    }
  }
  return false;
}

// One "name": {"dtype", "shape", "data_offsets"} entry; `fail` prefixes the source name.
template <typename Fail>
TensorInfo read_tensor_entry(const std::string& name, const json& entry, uint64_t data_size, Fail fail) {
  const std::string tensor = "tensor " + printable(name);
  if (!entry.is_object()) throw fail(tensor + ": entry is not a JSON object");
  TensorInfo info;
  info.name = name;

  const auto dtype = entry.find("dtype");
  if (dtype == entry.end()) throw fail(tensor + " has no dtype");
  if (!dtype->is_string()) throw fail(tensor + ": dtype is not a string");
  if (!parse_dtype(dtype->get_ref<const std::string&>(), info.dtype)) {
    throw fail(tensor + " has unknown dtype " + printable(dtype->get_ref<const std::string&>()));
  }

  const auto shape = entry.find("shape");
  if (shape == entry.end()) throw fail(tensor + " has no shape");
  if (!shape->is_array()) throw fail(tensor + ": shape is not an array");
  for (const json& dimension : *shape) {
    uint64_t size = 0;
    if (!read_count(dimension, static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), size)) {
      throw fail(tensor + ": shape must hold non-negative integers, got " + printable(dimension.dump()));
    }
    info.shape.push_back(static_cast<int64_t>(size));
  }

  const auto offsets = entry.find("data_offsets");
  if (offsets == entry.end()) throw fail(tensor + " has no data_offsets");
  if (!offsets->is_array() || offsets->size() != 2 ||
      !read_count((*offsets)[0], std::numeric_limits<uint64_t>::max(), info.begin) ||
      !read_count((*offsets)[1], std::numeric_limits<uint64_t>::max(), info.end)) {
    throw fail(tensor + ": data_offsets must be [begin, end], two non-negative integers");
  }
  if (info.begin > info.end) {
    throw fail(tensor + ": data_offsets begin " + std::to_string(info.begin) + " is after end " +
               std::to_string(info.end));
  }
  if (info.end > data_size) {
    throw fail(tensor + " ends at byte " + std::to_string(info.end) + ", past the end of the data section (" +
               std::to_string(data_size) + " bytes)");
  }

  // A hostile shape must not wrap around to a small byte count that happens to match the offsets.
  uint64_t expected_bytes = dtype_size(info.dtype);
  for (const int64_t dimension : info.shape) {
    if (__builtin_mul_overflow(expected_bytes, static_cast<uint64_t>(dimension), &expected_bytes)) {
      throw fail(tensor + ": shape " + shape_text(info.shape) + " overflows a 64-bit byte count");
    }
  }
  if (expected_bytes != info.nbytes()) {
    throw fail(tensor + " has shape " + shape_text(info.shape) + " and dtype " +
               std::string(dtype_name(info.dtype)) + ", which need " + std::to_string(expected_bytes) +
               " bytes, but its data_offsets hold " + std::to_string(info.nbytes()) + " bytes");
  }
  return info;
}

template <typename Fail>
std::map<std::string, std::string> read_metadata(const json& entry, Fail fail) {
  if (!entry.is_object()) throw fail("__metadata__ is not a JSON object");
  std::map<std::string, std::string> metadata;
  for (auto item = entry.begin(); item != entry.end(); ++item) {
    if (!item->is_string())
      throw fail("__metadata__ value for key " + printable(item.key()) + " is not a string");
    metadata.emplace(item.key(), item->get_ref<const std::string&>());
  }
  return metadata;
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path, const SafetensorsLimits& limits) {
  return parse(read_file(path, limits.max_file_bytes), path.string(), limits);
}

SafetensorsFile SafetensorsFile::parse(std::vector<uint8_t> bytes, const std::string& source_name,
                                       const SafetensorsLimits& limits) {
  const auto fail = [&source_name](const std::string& reason) { return Error(source_name + ": " + reason); };
  const uint64_t file_size = bytes.size();
  if (file_size > limits.max_file_bytes) {
    throw fail("the file is " + std::to_string(file_size) + " bytes, more than the limit of " +
               std::to_string(limits.max_file_bytes) + " bytes");
  }
  if (file_size < kHeaderSizeBytes) {
    throw fail("file is too short (" + std::to_string(file_size) + " bytes) to hold the 8-byte header size");
  }
  uint64_t header_size = 0;
  for (size_t i = 0; i < kHeaderSizeBytes; ++i) header_size |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  if (header_size > limits.max_header_bytes) {
    throw fail("header size " + std::to_string(header_size) + " is larger than the limit of " +
               std::to_string(limits.max_header_bytes) + " bytes");
  }
  if (header_size > file_size - kHeaderSizeBytes) {
    throw fail("header size " + std::to_string(header_size) + " does not fit in the file (" +
               std::to_string(file_size) + " bytes)");
  }
  if (header_size == 0 || bytes[kHeaderSizeBytes] != '{') throw fail("header does not start with '{'");

  const char* header_begin = reinterpret_cast<const char*>(bytes.data() + kHeaderSizeBytes);
  // nlohmann's lexer takes a NUL byte for the end of input and would accept "{}\0anything"; valid JSON
  // never holds a raw NUL (strings escape it), so any NUL is an error.
  if (const void* nul = std::memchr(header_begin, '\0', header_size)) {
    throw fail("header is not valid JSON (NUL byte at byte " +
               std::to_string(static_cast<const char*>(nul) - header_begin) + " of the header)");
  }
  json header;
  HeaderBuilder builder(header);
  bool parsed = false;
  try {
    parsed = json::sax_parse(header_begin, header_begin + header_size, &builder);
  } catch (const json::exception&) {
    parsed = false;  // the SAX parser reports through parse_error; this is a second line of defence
  }
  if (!parsed) throw fail(builder.problem().empty() ? "header is not valid JSON" : builder.problem());
  if (!header.is_object()) throw fail("header is not a JSON object");

  SafetensorsFile file;
  file.source_name_ = source_name;
  file.data_start_ = kHeaderSizeBytes + header_size;
  const uint64_t data_size = file_size - file.data_start_;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      file.metadata_ = read_metadata(entry, fail);
    } else {
      file.tensors_.push_back(read_tensor_entry(name, entry, data_size, fail));
    }
  }

  // Sorted by position, each tensor must start where the previous one ended: no gaps, no overlaps.
  std::sort(file.tensors_.begin(), file.tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  uint64_t expected_begin = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo& tensor : file.tensors_) {
    if (tensor.begin > expected_begin) {
      throw fail("gap in the data section: bytes " + std::to_string(expected_begin) + " to " +
                 std::to_string(tensor.begin) + " before tensor " + printable(tensor.name) +
                 " belong to no tensor");
    }
    if (tensor.begin < expected_begin) {
      throw fail("tensor " + printable(tensor.name) + " overlaps tensor " + printable(previous->name));
    }
    expected_begin = tensor.end;
    previous = &tensor;
  }
  if (expected_begin != data_size) {
    throw fail("the last tensor ends at byte " + std::to_string(expected_begin) +
               " but the data section has " + std::to_string(data_size) +
               " bytes (trailing bytes after the last tensor)");
  }
  file.bytes_ = std::move(bytes);
  return file;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  for (const TensorInfo& tensor : tensors_) {
    if (tensor.name == name) return &tensor;
  }
  return nullptr;
}

const uint8_t* SafetensorsFile::data(const TensorInfo& tensor) const {
  const uint64_t data_size = bytes_.size() - data_start_;
  if (tensor.begin > tensor.end || tensor.end > data_size) {
    throw Error(source_name_ + ": tensor " + printable(tensor.name) +
                " lies outside this file's data section");
  }
  return bytes_.data() + data_start_ + tensor.begin;
}

void SafetensorsFile::check_finite(const TensorInfo& tensor) const {
  // An all-ones exponent field means NaN or Inf in every IEEE-style format; reading bits avoids any
  // dependence on floating-point compiler flags.
  uint64_t exponent_mask = 0;
  switch (tensor.dtype) {
    case DType::F64: exponent_mask = 0x7FF0000000000000ull; break;
    case DType::F32: exponent_mask = 0x7F800000ull; break;
    case DType::F16: exponent_mask = 0x7C00ull; break;
    case DType::BF16: exponent_mask = 0x7F80ull; break;
    default: return;
  }
  const size_t element_size = dtype_size(tensor.dtype);
  const uint8_t* bytes = data(tensor);
  const uint64_t count = tensor.nbytes() / element_size;
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t bits = 0;
    std::memcpy(&bits, bytes + k * element_size, element_size);  // little-endian host: low bytes first
    if ((bits & exponent_mask) == exponent_mask) {
      throw Error(source_name_ + ": tensor " + printable(tensor.name) + " contains NaN or Inf (element " +
                  std::to_string(k) + ")");
    }
  }
}

}  // namespace stx::engine
