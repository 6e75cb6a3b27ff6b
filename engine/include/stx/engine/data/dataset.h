#pragma once
// A dataset: a folder (or one file) of images, text or audio turned into two byte streams, train and
// validation, ready for crops (crops.h).
//
//   DatasetOptions options;
//   options.kind = DataKind::image;
//   options.image = {32, 32, 3};
//   Dataset data = open_dataset("/data/cats", options);   // throws Error naming the folder and the reason
//   for (const SkippedFile& s : data.skipped) log(s.reason);
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "stx/engine/data/audio_io.h"
#include "stx/engine/data/image_io.h"
#include "stx/models/data_kind.h"

namespace stx::engine {

// The model's data kind (stx/models/data_kind.h: image, text, audio), which decides the files a dataset reads.
using models::DataKind;
DataKind parse_data_kind(std::string_view name);  // throws Error on an unknown name

struct SkippedFile {
  std::filesystem::path file;
  std::string reason;  // the Error text, naming the file
};

struct Dataset {
  DataKind kind = DataKind::text;
  size_t record_bytes = 1;                 // crops start at multiples of this: H*W*C for images, 1 otherwise
  std::vector<uint8_t> train, validation;  // each split's documents concatenated in name order
  std::vector<std::string> train_files, validation_files;  // relative names, for the user
  std::vector<SkippedFile> skipped;  // unreadable (or empty) files and why; the scan went on past them
  std::vector<std::string> warnings;  // files read anyway with something wrong (a truncated WAV), one line each
};

struct DatasetOptions {
  DataKind kind = DataKind::text;
  ImageShape image;                   // images only: the model's H, W, C
  double validation_fraction = 0.05;  // in (0, 1)
  uint64_t max_text_file_bytes = 1ull << 30;
  uint64_t max_total_bytes = 8ull << 30;  // refuse a dataset larger than this, naming the folder
  ImageLimits image_limits;
  AudioLimits audio_limits;
  // Optional; called as files are read (for IDX files the counts are images). Return false to cancel:
  // open_dataset then throws Error("cancelled").
  std::function<bool(size_t files_done, size_t files_total)> progress;
};

// `path` is a folder (scanned recursively: regular files sorted by relative path, hidden files and folders
// skipped, symlinked folders not followed) or a single file.
//   Image: png/jpg/jpeg/bmp/tga (any case), one document per image. A folder holding
//          train-images-idx3-ubyte.gz (Fashion-MNIST) gives train from it and validation from
//          t10k-images-idx3-ubyte.gz; a single *-idx3-ubyte.gz file (or that folder without t10k) holds out
//          its last `validation_fraction` of images. IDX images are converted to the model's shape like files.
//   Audio: wav/flac/ogg/oga/aiff/aif, 12 kHz mu-law bytes. Text: every regular file, bytes unchanged.
// Other extensions are ignored; unreadable or empty files go to `skipped` and the scan goes on.
// Split of >= 2 documents: in a folder holding both train/ and validation/ subfolders, a document goes to
// validation when it lies under validation/ (anything else is train). Otherwise a document goes to validation when FNV-1a64(relative name, '/' separated)
// % 10000 < fraction * 10000, keeping at least one per side (the last name moves to validation, or the first
// to train). One text/audio document: its last `fraction` of bytes (at least one) is validation.
// Throws Error naming the path: missing, neither folder nor file, no readable files, over max_total_bytes,
// a single image ("needs at least 2 images"), a bad option, or cancelled.
Dataset open_dataset(const std::filesystem::path& path, const DatasetOptions& options);

}  // namespace stx::engine
