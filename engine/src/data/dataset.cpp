#include "stx/engine/data/dataset.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

#include "file_bytes.h"
#include "idx_images.h"
#include "image_fit.h"
#include "stx/engine/error.h"

namespace stx::engine {
namespace fs = std::filesystem;
namespace {

constexpr const char* kFashionTrain = "train-images-idx3-ubyte.gz";
constexpr const char* kFashionTest = "t10k-images-idx3-ubyte.gz";

struct Candidate {
  fs::path file;
  std::string name;  // relative to the folder, '/' separated: what is hashed, sorted and shown
};

bool has_extension(const fs::path& file, std::initializer_list<std::string_view> extensions) {
  std::string extension = file.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(extensions.begin(), extensions.end(), extension) != extensions.end();
}

bool is_wanted(DataKind kind, const fs::path& file) {
  switch (kind) {
    case DataKind::image: return has_extension(file, {".png", ".jpg", ".jpeg", ".bmp", ".tga"});
    case DataKind::audio: return has_extension(file, {".wav", ".flac", ".ogg", ".oga", ".aiff", ".aif"});
    case DataKind::text: return true;
  }
  return false;
}

uint64_t fnv1a64(std::string_view text) {
  uint64_t hash = 14695981039346656037ull;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

// Why an entry that is neither a folder nor a regular file cannot be read, naming it. Such entries are only
// ever looked at, never opened: opening a FIFO for reading waits for a writer that may never come.
std::string why_not_a_file(const fs::directory_entry& entry) {
  std::error_code ec;
  const std::string name = entry.path().string();
  if (entry.is_symlink(ec) && !fs::exists(entry.status(ec))) {
    const fs::path target = fs::read_symlink(entry.path(), ec);
    return name + ": a symbolic link to " + (ec ? std::string("a target") : target.string()) +
           ", which does not exist";
  }
  const fs::file_type type = entry.status(ec).type();
  if (type == fs::file_type::fifo) return name + ": a FIFO (named pipe), not a regular file";
  if (type == fs::file_type::socket) return name + ": a socket, not a regular file";
  if (type == fs::file_type::block || type == fs::file_type::character) return name + ": a device, not a regular file";
  if (ec) return name + ": cannot look at it (" + ec.message() + ")";
  return name + ": not a regular file";
}

// Regular files under folder (symlinks to files included, symlinked folders not followed), hidden ones and
// those in hidden folders left out, sorted by relative name. Entries of a wanted name that are not regular
// files (a broken symbolic link, a FIFO, a socket, a device) go to `unreadable` with the reason.
std::vector<Candidate> scan_folder(const fs::path& folder, DataKind kind, std::vector<SkippedFile>& unreadable) {
  std::vector<Candidate> candidates;
  try {
    for (auto it = fs::recursive_directory_iterator(folder, fs::directory_options::skip_permission_denied);
         it != fs::recursive_directory_iterator(); ++it) {
      const fs::path& file = it->path();
      std::error_code ec;
      if (file.filename().string().rfind('.', 0) == 0) {
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      if (it->is_directory(ec) || !is_wanted(kind, file)) continue;
      if (!it->is_regular_file(ec)) {
        unreadable.push_back({file, why_not_a_file(*it)});
        continue;
      }
      candidates.push_back({file, file.lexically_relative(folder).generic_string()});
    }
  } catch (const fs::filesystem_error& e) {
    throw Error(folder.string() + ": cannot list the folder (" + e.code().message() + ")");
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const Candidate& a, const Candidate& b) { return a.name < b.name; });
  std::sort(unreadable.begin(), unreadable.end(),
            [](const SkippedFile& a, const SkippedFile& b) { return a.file < b.file; });
  return candidates;
}

// The skipped files for an error message: the first few with their reasons, and how many more.
std::string skipped_summary(const std::vector<SkippedFile>& skipped) {
  constexpr size_t kNamed = 3;
  std::string text = " (" + std::to_string(skipped.size()) + " skipped: ";
  for (size_t i = 0; i < std::min(skipped.size(), kNamed); ++i) text += (i > 0 ? "; " : "") + skipped[i].reason;
  if (skipped.size() > kNamed) text += "; and " + std::to_string(skipped.size() - kNamed) + " more";
  return text + ")";
}

// Appends documents to the split their name hashes to (or, by_subfolder, the split their top folder names),
// then keeps one on each side.
class SplitBuilder {
 public:
  SplitBuilder(Dataset& dataset, double fraction, bool by_subfolder)
      : dataset_(dataset), fraction_(fraction), by_subfolder_(by_subfolder) {}

  void add(const std::string& name, const std::vector<uint8_t>& bytes) {
    const bool to_validation = by_subfolder_ ? name.rfind("validation/", 0) == 0
                                             : static_cast<double>(fnv1a64(name) % 10000) < fraction_ * 10000.0;
    auto& stream = to_validation ? dataset_.validation : dataset_.train;
    stream.insert(stream.end(), bytes.begin(), bytes.end());
    (to_validation ? dataset_.validation_files : dataset_.train_files).push_back(name);
    (to_validation ? validation_sizes_ : train_sizes_).push_back(bytes.size());
  }

  size_t documents() const { return train_sizes_.size() + validation_sizes_.size(); }

  void finish() {
    if (documents() < 2) return;
    // Documents were added in name order, so the last in name order ends train and the first starts validation.
    if (validation_sizes_.empty()) {
      const size_t size = train_sizes_.back();
      dataset_.validation.assign(dataset_.train.end() - static_cast<std::ptrdiff_t>(size),
                                 dataset_.train.end());
      dataset_.train.resize(dataset_.train.size() - size);
      dataset_.validation_files.push_back(dataset_.train_files.back());
      dataset_.train_files.pop_back();
    } else if (train_sizes_.empty()) {
      const size_t size = validation_sizes_.front();
      dataset_.train.assign(dataset_.validation.begin(),
                            dataset_.validation.begin() + static_cast<std::ptrdiff_t>(size));
      dataset_.validation.erase(dataset_.validation.begin(),
                                dataset_.validation.begin() + static_cast<std::ptrdiff_t>(size));
      dataset_.train_files.push_back(dataset_.validation_files.front());
      dataset_.validation_files.erase(dataset_.validation_files.begin());
    }
  }

 private:
  Dataset& dataset_;
  double fraction_;
  bool by_subfolder_;
  std::vector<size_t> train_sizes_, validation_sizes_;
};

// The tail `fraction` of the bytes (at least one record, at least one left) becomes validation.
void split_tail(Dataset& dataset, std::vector<uint8_t> bytes, const std::string& name, double fraction) {
  const size_t records = bytes.size() / dataset.record_bytes;
  const size_t held_out =
      std::clamp<size_t>(static_cast<size_t>(std::llround(records * fraction)), 1, records - 1);
  const auto cut = bytes.end() - static_cast<std::ptrdiff_t>(held_out * dataset.record_bytes);
  dataset.validation.assign(cut, bytes.end());
  bytes.erase(cut, bytes.end());
  dataset.train = std::move(bytes);
  dataset.train_files = {name};
  dataset.validation_files = {name};
}

void check_total(const fs::path& path, uint64_t total, uint64_t limit) {
  if (total > limit) {
    throw Error(path.string() + ": the dataset is over the limit of " + std::to_string(limit) + " bytes");
  }
}

// Fashion-MNIST's folder, or a single IDX file (split by its tail).
Dataset open_idx(const fs::path& path, const DatasetOptions& options, Dataset dataset) {
  std::error_code ec;
  const bool is_folder = fs::is_directory(path, ec);
  const fs::path train_file = is_folder ? path / kFashionTrain : path;
  data::IdxImages train = data::load_idx_images(train_file, options.image, options.image_limits,
                                                options.max_total_bytes, options.progress);
  const fs::path test_file = path / kFashionTest;
  if (is_folder && fs::is_regular_file(test_file, ec)) {
    data::IdxImages test =
        data::load_idx_images(test_file, options.image, options.image_limits,
                              options.max_total_bytes - train.bytes.size(), options.progress);
    dataset.train = std::move(train.bytes);
    dataset.validation = std::move(test.bytes);
    dataset.train_files = {kFashionTrain};
    dataset.validation_files = {kFashionTest};
    return dataset;
  }
  if (train.count < 2) throw Error(train_file.string() + ": an image dataset needs at least 2 images");
  split_tail(dataset, std::move(train.bytes), train_file.filename().string(), options.validation_fraction);
  return dataset;
}

std::vector<uint8_t> read_document(const fs::path& file, const DatasetOptions& options,
                                   std::vector<std::string>& warnings) {
  switch (options.kind) {
    case DataKind::image: return load_image_bytes(file, options.image, options.image_limits);
    case DataKind::audio: {
      AudioWarnings audio;
      std::vector<uint8_t> bytes = load_audio_mulaw(file, options.audio_limits, &audio);
      warnings.insert(warnings.end(), audio.lines.begin(), audio.lines.end());
      return bytes;
    }
    case DataKind::text: return data::read_file_bytes(file, options.max_text_file_bytes);
  }
  return {};
}

Dataset open_single_file(const fs::path& file, const DatasetOptions& options, Dataset dataset) {
  if (options.kind == DataKind::image)
    throw Error(file.string() + ": an image dataset needs at least 2 images: give a folder of images (or a "
                "Fashion-MNIST IDX file), not a single image");
  std::vector<uint8_t> bytes = read_document(file, options, dataset.warnings);
  check_total(file, bytes.size(), options.max_total_bytes);
  if (bytes.size() < 2) {
    throw Error(file.string() + ": " + std::to_string(bytes.size()) +
                " bytes, too few to hold out validation data");
  }
  split_tail(dataset, std::move(bytes), file.filename().string(), options.validation_fraction);
  return dataset;
}

Dataset open_folder(const fs::path& folder, const DatasetOptions& options, Dataset dataset) {
  std::vector<Candidate> candidates = scan_folder(folder, options.kind, dataset.skipped);
  // A recipe that holds out whole works (all renderings of a piece, say) lays them out as train/ and
  // validation/; any other layout is split by name hash.
  std::error_code layout_error;
  const bool by_subfolder =
      fs::is_directory(folder / "train", layout_error) && fs::is_directory(folder / "validation", layout_error);
  if (by_subfolder) {
    // The scan follows no links to folders (a loop would make it endless), but a train/ or validation/ that
    // is one is where the user put that side of the split: read it as if it were there. Without this the
    // split was taken from the layout while the linked side was silently empty.
    for (const std::string part : {"train", "validation"}) {
      if (!fs::is_symlink(folder / part, layout_error)) continue;
      for (Candidate candidate : scan_folder(folder / part, options.kind, dataset.skipped)) {
        candidate.name = part + "/" + candidate.name;
        candidates.push_back(std::move(candidate));
      }
    }
    std::sort(candidates.begin(), candidates.end(),
              [](const Candidate& a, const Candidate& b) { return a.name < b.name; });
  }
  SplitBuilder split(dataset, options.validation_fraction, by_subfolder);
  std::vector<uint8_t> last_document;  // kept for the single-document byte split
  uint64_t total = 0;
  const auto report_progress = [&](size_t done) {
    if (options.progress && !options.progress(done, candidates.size())) throw Error("cancelled");
  };
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& candidate = candidates[i];
    if (options.kind == DataKind::text) {  // refuse before reading what could not fit anyway
      std::error_code ec;
      const uint64_t size = fs::file_size(candidate.file, ec);
      if (!ec) check_total(folder, total + size, options.max_total_bytes);
    }
    std::vector<uint8_t> bytes;
    try {
      bytes = read_document(candidate.file, options, dataset.warnings);
      if (bytes.empty()) throw Error(candidate.file.string() + ": the file is empty");
    } catch (const Error& e) {
      dataset.skipped.push_back({candidate.file, e.what()});
      report_progress(i + 1);
      continue;
    }
    total += bytes.size();
    check_total(folder, total, options.max_total_bytes);
    split.add(candidate.name, bytes);
    last_document = std::move(bytes);
    report_progress(i + 1);
  }

  const std::string noun(to_string(options.kind));
  if (split.documents() == 0) {
    std::string message = "no readable " + noun + " files in " + folder.string();
    if (!dataset.skipped.empty()) message += skipped_summary(dataset.skipped);
    throw Error(message);
  }
  if (split.documents() == 1) {
    if (options.kind == DataKind::image) {
      std::string message = folder.string() + ": an image dataset needs at least 2 images, and only 1 was readable";
      if (!dataset.skipped.empty()) message += skipped_summary(dataset.skipped);
      throw Error(message);
    }
    if (last_document.size() < 2) {
      throw Error(folder.string() + ": one document of 1 byte, too few to hold out validation data");
    }
    const std::string name =
        dataset.train_files.empty() ? dataset.validation_files.front() : dataset.train_files.front();
    dataset.train.clear();
    dataset.validation.clear();
    split_tail(dataset, std::move(last_document), name, options.validation_fraction);
    return dataset;
  }
  split.finish();
  return dataset;
}

}  // namespace

DataKind parse_data_kind(std::string_view name) {
  if (const std::optional<DataKind> kind = models::data_kind_named(name)) return *kind;
  throw Error("unknown data kind \"" + std::string(name) + "\" (expected image, text or audio)");
}

Dataset open_dataset(const fs::path& path, const DatasetOptions& options) {
  if (!(options.validation_fraction > 0.0 && options.validation_fraction < 1.0)) {
    throw Error(path.string() + ": the validation fraction must be between 0 and 1, got " +
                std::to_string(options.validation_fraction));
  }
  Dataset dataset;
  dataset.kind = options.kind;
  if (options.kind == DataKind::image) {
    data::check_image_shape(options.image, options.image_limits, path.string());
    dataset.record_bytes = static_cast<size_t>(options.image.height) *
                           static_cast<size_t>(options.image.width) *
                           static_cast<size_t>(options.image.channels);
  }

  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) throw Error(path.string() + ": no such file or folder");
  if (ec) throw Error(path.string() + ": cannot access (" + ec.message() + ")");
  if (fs::is_directory(status)) {
    if (options.kind == DataKind::image && fs::is_regular_file(path / kFashionTrain, ec)) {
      return open_idx(path, options, std::move(dataset));
    }
    return open_folder(path, options, std::move(dataset));
  }
  if (!fs::is_regular_file(status)) throw Error(path.string() + ": neither a folder nor a regular file");
  if (options.kind == DataKind::image && data::is_idx_images_name(path)) {
    return open_idx(path, options, std::move(dataset));
  }
  return open_single_file(path, options, std::move(dataset));
}

}  // namespace stx::engine
