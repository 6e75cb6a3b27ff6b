#include "idx_images.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <memory>

#include "file_bytes.h"
#include "image_fit.h"
#include "stx/engine/error.h"

namespace stx::engine::data {
namespace {

constexpr uint32_t kIdxImageMagic = 0x00000803;  // 0x08: unsigned bytes, 0x03: three dimensions
constexpr uint32_t kMaxSide = 1 << 16;
// Deflate cannot expand data by more than about 1032:1; a header promising more than that is lying.
constexpr uint64_t kMaxDeflateRatio = 1032;
constexpr size_t kProgressEvery = 1000;

// Inflates a gzip buffer on demand, so that images are converted as they come and the raw pixels are
// never held whole.
class GzipReader {
 public:
  GzipReader(const uint8_t* data, size_t size, const std::string& source_name)
      : next_(data), remaining_(size), source_name_(source_name) {
    if (inflateInit2(&stream_, 16 + MAX_WBITS) != Z_OK) {  // 16 +: gzip wrapper only
      throw Error(source_name_ + ": cannot start the gzip decoder");
    }
  }
  ~GzipReader() { inflateEnd(&stream_); }
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  bool ended() const { return ended_; }

  // Fills up to n bytes; returns how many, fewer only at the end of the stream or of the input.
  size_t read(uint8_t* out, size_t n) {
    size_t filled = 0;
    while (filled < n && !ended_) {
      if (stream_.avail_in == 0) {
        if (remaining_ == 0) break;  // input exhausted before the gzip stream ended: truncated
        const size_t chunk = std::min<size_t>(remaining_, UINT_MAX);
        stream_.next_in = const_cast<Bytef*>(next_);  // zlib's API is not const, it does not write input
        stream_.avail_in = static_cast<uInt>(chunk);
        next_ += chunk;
        remaining_ -= chunk;
      }
      const size_t want = std::min<size_t>(n - filled, UINT_MAX);
      stream_.next_out = out + filled;
      stream_.avail_out = static_cast<uInt>(want);
      const int status = inflate(&stream_, Z_NO_FLUSH);
      filled += want - stream_.avail_out;
      if (status == Z_STREAM_END) {
        ended_ = true;
      } else if (status == Z_NEED_DICT || status == Z_DATA_ERROR) {
        throw Error(source_name_ +
                    ": damaged gzip data (zlib: " + (stream_.msg ? stream_.msg : "data error") + ")");
      } else if (status == Z_MEM_ERROR) {
        throw Error(source_name_ + ": out of memory in the gzip decoder");
      }
      // Z_OK and Z_BUF_ERROR (no progress for want of input) loop to feed more input or stop.
    }
    return filled;
  }

 private:
  z_stream stream_{};
  const uint8_t* next_;
  size_t remaining_;
  bool ended_ = false;
  const std::string& source_name_;
};

uint32_t big_endian_u32(const uint8_t* bytes) {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) |
         uint32_t{bytes[3]};
}

}  // namespace

bool is_idx_images_name(const std::filesystem::path& file) {
  const std::string name = file.filename().string();
  const std::string suffix = "-idx3-ubyte.gz";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

IdxImages decode_idx_images(const uint8_t* gzip_data, size_t size, ImageShape shape,
                            const ImageLimits& limits, uint64_t max_output_bytes,
                            const std::string& source_name, const ImageProgress& progress) {
  check_image_shape(shape, limits, source_name);
  GzipReader reader(gzip_data, size, source_name);
  uint8_t header[16];
  if (reader.read(header, sizeof header) != sizeof header) {
    throw Error(source_name + ": too short for an IDX header (16 bytes)");
  }
  const uint32_t magic = big_endian_u32(header);
  if (magic != kIdxImageMagic) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", magic);
    throw Error(source_name + ": not an IDX image file (magic " + text + ", expected 0x00000803)");
  }
  const uint32_t count = big_endian_u32(header + 4), rows = big_endian_u32(header + 8),
                 cols = big_endian_u32(header + 12);
  const std::string dims =
      std::to_string(count) + " images of " + std::to_string(rows) + "x" + std::to_string(cols);
  if (count == 0 || rows == 0 || cols == 0 || rows > kMaxSide || cols > kMaxSide) {
    throw Error(source_name + ": the IDX header's dimensions (" + dims + ") are not usable");
  }
  const uint64_t image_pixels = uint64_t{rows} * cols;
  if (image_pixels > limits.max_pixels) {
    throw Error(source_name + ": IDX images of " + std::to_string(rows) + "x" + std::to_string(cols) +
                " are over the limit of " + std::to_string(limits.max_pixels) + " pixels");
  }
  const uint64_t raw_bytes = uint64_t{count} * image_pixels;  // < 2^32 * 2^32: no overflow
  if (raw_bytes / kMaxDeflateRatio > size) {
    throw Error(source_name + ": the IDX header promises " + dims + ", more than " + std::to_string(size) +
                " bytes of gzip can hold");
  }
  const uint64_t record_bytes = uint64_t(shape.height) * uint64_t(shape.width) * uint64_t(shape.channels);
  if (count > max_output_bytes / record_bytes) {
    throw Error(source_name + ": " + std::to_string(count) + " images of " + std::to_string(record_bytes) +
                " bytes are over the dataset limit of " + std::to_string(max_output_bytes) + " bytes");
  }

  IdxImages images;
  // Grown as the data proves itself, rather than reserved from the header's count.
  images.bytes.reserve(static_cast<size_t>(std::min<uint64_t>(uint64_t{count} * record_bytes, 64u << 20)));
  std::vector<uint8_t> gray(static_cast<size_t>(image_pixels));
  std::vector<uint8_t> rgb(shape.channels == 3 ? gray.size() * 3 : 0);
  for (uint32_t i = 0; i < count; ++i) {
    if (reader.read(gray.data(), gray.size()) != gray.size()) {
      throw Error(source_name + ": truncated, the header promises " + dims + " but the data ends in image " +
                  std::to_string(i + 1));
    }
    const uint8_t* pixels = gray.data();
    if (shape.channels == 3) {  // gray to RGB repeats the value, as stb does for gray files
      for (size_t p = 0; p < gray.size(); ++p) rgb[3 * p] = rgb[3 * p + 1] = rgb[3 * p + 2] = gray[p];
      pixels = rgb.data();
    }
    const std::vector<uint8_t> fitted =
        fit_to_shape(pixels, static_cast<int>(cols), static_cast<int>(rows), shape, source_name);
    images.bytes.insert(images.bytes.end(), fitted.begin(), fitted.end());
    ++images.count;
    if (progress && (images.count % kProgressEvery == 0 || images.count == count) &&
        !progress(images.count, count)) {
      throw Error("cancelled");
    }
  }
  uint8_t extra = 0;
  if (reader.read(&extra, 1) != 0) {
    throw Error(source_name + ": more data than the IDX header's " + dims);
  }
  if (!reader.ended()) throw Error(source_name + ": truncated, the gzip stream has no end");
  return images;
}

IdxImages load_idx_images(const std::filesystem::path& file, ImageShape shape, const ImageLimits& limits,
                          uint64_t max_output_bytes, const ImageProgress& progress) {
  check_image_shape(shape, limits, file.string());
  const std::vector<uint8_t> bytes = read_file_bytes(file, limits.max_file_bytes);
  return decode_idx_images(bytes.data(), bytes.size(), shape, limits, max_output_bytes, file.string(),
                           progress);
}

}  // namespace stx::engine::data
