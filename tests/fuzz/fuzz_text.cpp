// libFuzzer target: open_dataset over text documents (folder scan, split rules), and the gzip IDX reader.
//   ./build-fuzz/tests/fuzz/fuzz_text -max_total_time=60
// The first byte picks the path:
//   0 mod 3: the rest, cut at 0xFF bytes into up to 8 documents, is written to a temporary folder and opened
//            as text with a fraction from the second byte; the splits must hold exactly the documents' bytes.
//   1 mod 3: the rest is a gzip IDX file, decoded from memory.
//   2 mod 3: the rest is gzipped here and decoded, so the fuzzer reaches the IDX header and images directly.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../../engine/src/data/idx_images.h"
#include "stx/engine/data/dataset.h"
#include "stx/engine/error.h"

namespace {

namespace fs = std::filesystem;

// A fresh folder per input, removed before returning: libFuzzer ends runs with _Exit, so nothing at exit
// would clean up after it.
class ScratchFolder {
 public:
  ScratchFolder() {
    std::string pattern = (fs::temp_directory_path() / "stx-fuzz-text-XXXXXX").string();
    if (!mkdtemp(pattern.data())) std::abort();
    path_ = pattern;
  }
  ~ScratchFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void fuzz_text_folder(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const ScratchFolder scratch;
  const fs::path& folder = scratch.path();

  std::vector<std::vector<uint8_t>> documents(1);
  for (size_t i = 1; i < size; ++i) {
    if (data[i] == 0xFF && documents.size() < 8) {
      documents.emplace_back();
    } else {
      documents.back().push_back(data[i]);
    }
  }
  size_t total = 0, nonempty = 0;
  for (size_t d = 0; d < documents.size(); ++d) {
    std::ofstream(folder / ("doc" + std::to_string(d)), std::ios::binary)
        .write(reinterpret_cast<const char*>(documents[d].data()),
               static_cast<std::streamsize>(documents[d].size()));
    total += documents[d].size();
    nonempty += !documents[d].empty();
  }
  stx::engine::DatasetOptions options;
  options.validation_fraction = (data[0] + 1) / 257.0;
  try {
    const stx::engine::Dataset dataset = stx::engine::open_dataset(folder, options);
    if (dataset.train.size() + dataset.validation.size() != total) __builtin_trap();
    if (dataset.train.empty() || dataset.validation.empty()) __builtin_trap();
    if (dataset.skipped.size() != documents.size() - nonempty) __builtin_trap();
  } catch (const stx::engine::Error&) {
    if (nonempty >= 2) __builtin_trap();  // two or more non-empty documents always make a dataset
  }
}

void fuzz_idx(const uint8_t* data, size_t size) {
  stx::engine::ImageLimits limits;
  limits.max_pixels = 1 << 20;
  try {
    const auto images =
        stx::engine::data::decode_idx_images(data, size, {6, 4, 3}, limits, 16u << 20, "fuzz-idx3-ubyte.gz");
    if (images.bytes.size() != images.count * 6 * 4 * 3) __builtin_trap();
  } catch (const stx::engine::Error&) {
  }
}

void fuzz_idx_content(const uint8_t* data, size_t size) {
  z_stream stream{};
  if (deflateInit2(&stream, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::vector<uint8_t> gzip(deflateBound(&stream, static_cast<uLong>(size)) + 32);
  stream.next_in = const_cast<Bytef*>(data);
  stream.avail_in = static_cast<uInt>(size);
  stream.next_out = gzip.data();
  stream.avail_out = static_cast<uInt>(gzip.size());
  if (deflate(&stream, Z_FINISH) != Z_STREAM_END) std::abort();
  gzip.resize(stream.total_out);
  deflateEnd(&stream);
  fuzz_idx(gzip.data(), gzip.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  switch (data[0] % 3) {
    case 0: fuzz_text_folder(data + 1, size - 1); break;
    case 1: fuzz_idx(data + 1, size - 1); break;
    case 2: fuzz_idx_content(data + 1, size - 1); break;
  }
  return 0;
}
