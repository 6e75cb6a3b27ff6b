// Folder scans, splits and the errors of open_dataset.
#include <gtest/gtest.h>
#include <sndfile.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "data_test_support.h"
#include "stb_image_write_system.h"
#include "stx/engine/data/dataset.h"

namespace stx::engine {
namespace {

using test::expect_error;

// The split rule as documented, written out independently of the implementation.
bool hashes_to_validation(const std::string& name, double fraction) {
  uint64_t hash = 14695981039346656037ull;
  for (const char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return static_cast<double>(hash % 10000) < fraction * 10000.0;
}

DatasetOptions options_for(DataKind kind, double fraction = 0.05) {
  DatasetOptions options;
  options.kind = kind;
  options.validation_fraction = fraction;
  if (kind == DataKind::image) options.image = {4, 4, 3};
  return options;
}

void write_png(const std::filesystem::path& file, uint8_t value) {
  std::filesystem::create_directories(file.parent_path());
  const std::vector<uint8_t> pixels(8 * 8 * 3, value);
  ASSERT_NE(stbi_write_png(file.string().c_str(), 8, 8, 3, pixels.data(), 8 * 3), 0);
}

void write_wav(const std::filesystem::path& file, size_t frames) {
  SF_INFO info{};
  info.samplerate = 12000;
  info.channels = 1;
  info.format = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
  SNDFILE* sound = sf_open(file.c_str(), SFM_WRITE, &info);
  ASSERT_NE(sound, nullptr) << sf_strerror(nullptr);
  const std::vector<float> samples(frames, 0.0f);
  sf_writef_float(sound, samples.data(), static_cast<sf_count_t>(frames));
  sf_close(sound);
}

std::vector<uint8_t> joined(const Dataset& dataset) {
  std::vector<uint8_t> all = dataset.train;
  all.insert(all.end(), dataset.validation.begin(), dataset.validation.end());
  return all;
}

class OpenDataset : public ::testing::Test {
 protected:
  test::TempFolder folder;
};

TEST(DataKindNames, RoundTripAndUnknownNamesFail) {
  for (const DataKind kind : {DataKind::image, DataKind::text, DataKind::audio}) {
    EXPECT_EQ(parse_data_kind(to_string(kind)), kind);
  }
  EXPECT_STREQ(to_string(DataKind::audio), "audio");
  expect_error([] { parse_data_kind("video"); }, {"video"});
}

TEST_F(OpenDataset, TextBytesComeThroughUnchanged) {
  // NULs, invalid UTF-8, a BOM and CRLF are all data.
  const std::vector<uint8_t> text = {0xEF, 0xBB, 0xBF, 'h',  'i',  0x00, 0xFF,
                                     0xC3, 0x28, '\r', '\n', 0x00, 0x80, 'z'};
  test::write_file(folder / "odd.txt", text);
  const Dataset dataset = open_dataset(folder / "odd.txt", options_for(DataKind::text, 0.3));
  EXPECT_EQ(joined(dataset), text);
  EXPECT_EQ(dataset.validation.size(), 4u);  // round(14 * 0.3)
  EXPECT_EQ(dataset.record_bytes, 1u);
}

TEST_F(OpenDataset, SingleDocumentIsSplitByItsTail) {
  const std::vector<uint8_t> text = test::random_bytes(1000, 11);
  test::write_file(folder / "corpus" / "kjv.txt", text);
  for (const auto& path : {folder / "corpus" / "kjv.txt", folder / "corpus"}) {
    const Dataset dataset = open_dataset(path, options_for(DataKind::text, 0.1));
    EXPECT_EQ(dataset.train, std::vector<uint8_t>(text.begin(), text.begin() + 900));
    EXPECT_EQ(dataset.validation, std::vector<uint8_t>(text.begin() + 900, text.end()));
    EXPECT_EQ(dataset.train_files, std::vector<std::string>{"kjv.txt"});
    EXPECT_EQ(dataset.validation_files, std::vector<std::string>{"kjv.txt"});
  }
  // A tiny fraction still holds out one byte.
  const Dataset tiny = open_dataset(folder / "corpus" / "kjv.txt", options_for(DataKind::text, 1e-9));
  EXPECT_EQ(tiny.validation.size(), 1u);
}

TEST_F(OpenDataset, TextFileSizeLimitSkipsInFoldersAndRefusesAlone) {
  test::write_file(folder / "small.txt", std::string(10, 'a'));
  test::write_file(folder / "big.txt", std::string(11, 'b'));
  test::write_file(folder / "other.txt", std::string(10, 'c'));
  DatasetOptions options = options_for(DataKind::text);
  options.max_text_file_bytes = 10;
  const Dataset dataset = open_dataset(folder.path(), options);
  ASSERT_EQ(dataset.skipped.size(), 1u);
  EXPECT_EQ(dataset.skipped[0].file.filename(), "big.txt");
  EXPECT_NE(dataset.skipped[0].reason.find("over the limit of 10 bytes"), std::string::npos);
  EXPECT_EQ(dataset.train.size() + dataset.validation.size(), 20u);
  expect_error([&] { open_dataset(folder / "big.txt", options); }, {"big.txt", "over the limit of 10 bytes"});
}

TEST_F(OpenDataset, UnreadableImagesAreSkippedWithReasonsWhileGoodOnesLoad) {
  write_png(folder / "a.png", 10);
  write_png(folder / "b.PNG", 20);
  write_png(folder / "sub" / "c.png", 30);
  test::write_file(folder / "broken.png", test::random_bytes(300, 3));
  test::write_file(folder / "notes.txt", std::string("ignored"));
  write_png(folder / ".hidden.png", 40);
  write_png(folder / ".cache" / "d.png", 50);
  const Dataset dataset = open_dataset(folder.path(), options_for(DataKind::image));
  ASSERT_EQ(dataset.skipped.size(), 1u);
  EXPECT_EQ(dataset.skipped[0].file.filename(), "broken.png");
  EXPECT_NE(dataset.skipped[0].reason.find("broken.png"), std::string::npos) << dataset.skipped[0].reason;
  EXPECT_EQ(dataset.record_bytes, 48u);
  EXPECT_EQ(dataset.train.size() + dataset.validation.size(), 3u * 48u);
  std::vector<std::string> names = dataset.train_files;
  names.insert(names.end(), dataset.validation_files.begin(), dataset.validation_files.end());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a.png", "b.PNG", "sub/c.png"}));
}

TEST_F(OpenDataset, SplitIsTheDocumentedHashAndRepeatable) {
  for (int i = 0; i < 40; ++i)
    test::write_file(folder / ("doc" + std::to_string(i) + ".txt"), std::to_string(i) + " text");
  const DatasetOptions options = options_for(DataKind::text, 0.2);
  const Dataset first = open_dataset(folder.path(), options);
  const Dataset second = open_dataset(folder.path(), options);
  EXPECT_EQ(first.train, second.train);
  EXPECT_EQ(first.validation, second.validation);
  EXPECT_EQ(first.validation_files, second.validation_files);
  ASSERT_FALSE(first.train_files.empty());
  ASSERT_FALSE(first.validation_files.empty());
  for (const std::string& name : first.validation_files) EXPECT_TRUE(hashes_to_validation(name, 0.2)) << name;
  for (const std::string& name : first.train_files) EXPECT_FALSE(hashes_to_validation(name, 0.2)) << name;
  EXPECT_TRUE(std::is_sorted(first.train_files.begin(), first.train_files.end()));
  EXPECT_TRUE(std::is_sorted(first.validation_files.begin(), first.validation_files.end()));
}

TEST_F(OpenDataset, TrainAndValidationSubfoldersAreTheSplit) {
  // A recipe holds out whole works by folder; the hash would have scattered them.
  for (int i = 0; i < 6; ++i) {
    test::write_file(folder / "train" / ("piece" + std::to_string(i) + ".txt"), "train " + std::to_string(i));
  }
  test::write_file(folder / "validation" / "held-a.txt", "held a");
  test::write_file(folder / "validation" / "held-b.txt", "held b");
  const Dataset dataset = open_dataset(folder.path(), options_for(DataKind::text, 0.5));
  EXPECT_EQ(dataset.validation_files, (std::vector<std::string>{"validation/held-a.txt", "validation/held-b.txt"}));
  EXPECT_EQ(dataset.train_files.size(), 6u);
  const std::string validation(dataset.validation.begin(), dataset.validation.end());
  EXPECT_EQ(validation, "held aheld b");
  for (const std::string& name : dataset.train_files) EXPECT_EQ(name.rfind("train/", 0), 0u) << name;

  // Either side may be a link to a folder elsewhere (a corpus shared between layouts): it is read as if
  // it were there, and nothing else changes.
  test::TempFolder elsewhere;
  std::filesystem::rename(folder / "train", elsewhere / "train");
  std::filesystem::create_directory_symlink(elsewhere / "train", folder / "train");
  const Dataset linked = open_dataset(folder.path(), options_for(DataKind::text, 0.5));
  EXPECT_EQ(linked.train_files, dataset.train_files);
  EXPECT_EQ(linked.validation_files, dataset.validation_files);
  EXPECT_EQ(linked.train, dataset.train);
  std::filesystem::remove(folder / "train");
  std::filesystem::rename(elsewhere / "train", folder / "train");

  // Without validation/ the same files split by hash again.
  std::filesystem::remove_all(folder / "validation");
  const Dataset hashed = open_dataset(folder.path(), options_for(DataKind::text, 0.5));
  for (const std::string& name : hashed.validation_files) EXPECT_TRUE(hashes_to_validation(name, 0.5)) << name;
}

TEST_F(OpenDataset, EachSideKeepsAtLeastOneDocument) {
  for (const char* name : {"a", "b", "c"}) test::write_file(folder / name, std::string(name));
  ASSERT_FALSE(hashes_to_validation("a", 1e-4) || hashes_to_validation("b", 1e-4) ||
               hashes_to_validation("c", 1e-4));
  const Dataset none_picked = open_dataset(folder.path(), options_for(DataKind::text, 1e-4));
  EXPECT_EQ(none_picked.train_files, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(none_picked.validation_files, std::vector<std::string>{"c"});
  EXPECT_EQ(none_picked.train, (std::vector<uint8_t>{'a', 'b'}));
  EXPECT_EQ(none_picked.validation, std::vector<uint8_t>{'c'});

  ASSERT_TRUE(hashes_to_validation("a", 0.9999) && hashes_to_validation("b", 0.9999) &&
              hashes_to_validation("c", 0.9999));
  const Dataset all_picked = open_dataset(folder.path(), options_for(DataKind::text, 0.9999));
  EXPECT_EQ(all_picked.train_files, std::vector<std::string>{"a"});
  EXPECT_EQ(all_picked.validation_files, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(all_picked.train, std::vector<uint8_t>{'a'});
  EXPECT_EQ(all_picked.validation, (std::vector<uint8_t>{'b', 'c'}));
}

TEST_F(OpenDataset, EmptyAndMissingFoldersAreErrors) {
  std::filesystem::create_directories(folder / "empty");
  expect_error([&] { open_dataset(folder / "empty", options_for(DataKind::image)); },
               {"no readable image files in", "empty"});
  expect_error([&] { open_dataset(folder / "missing", options_for(DataKind::text)); },
               {"missing", "no such file or folder"});
}

TEST_F(OpenDataset, NoReadableFilesNamesTheFirstReason) {
  test::write_file(folder / "x.png", test::random_bytes(100, 1));
  test::write_file(folder / "y.png", test::random_bytes(100, 2));
  test::write_file(folder / "z.png", std::vector<uint8_t>{});
  expect_error([&] { open_dataset(folder.path(), options_for(DataKind::image)); },
               {"no readable image files in " + folder.path().string() + " (3 skipped: ", "x.png"});
}

// Entries that are not regular files are listed with their reasons, never opened (a FIFO would block).
TEST_F(OpenDataset, BrokenLinksAndFifosAreListedWithTheirReasons) {
  test::write_file(folder / "good.txt", std::vector<uint8_t>{'h', 'i', '!'});
  std::filesystem::create_symlink(folder / "gone.txt", folder / "link.txt");
  ASSERT_EQ(mkfifo((folder / "pipe.txt").c_str(), 0600), 0);
  const Dataset data = open_dataset(folder.path(), options_for(DataKind::text));
  EXPECT_EQ(joined(data), (std::vector<uint8_t>{'h', 'i', '!'}));
  ASSERT_EQ(data.skipped.size(), 2u);
  EXPECT_EQ(data.skipped[0].file, folder / "link.txt");
  EXPECT_NE(data.skipped[0].reason.find("link.txt: a symbolic link to " + (folder / "gone.txt").string() +
                                        ", which does not exist"),
            std::string::npos)
      << data.skipped[0].reason;
  EXPECT_EQ(data.skipped[1].reason, (folder / "pipe.txt").string() + ": a FIFO (named pipe), not a regular file");

  // With nothing else, the error names each of them and why.
  std::filesystem::remove(folder / "good.txt");
  expect_error([&] { open_dataset(folder.path(), options_for(DataKind::text)); },
               {"no readable text files in " + folder.path().string() + " (2 skipped: ", "link.txt: a symbolic link",
                "; " + (folder / "pipe.txt").string() + ": a FIFO"});
  // An audio folder lists only what its name says is audio.
  std::filesystem::create_symlink(folder / "gone.wav", folder / "song.wav");
  expect_error([&] { open_dataset(folder.path(), options_for(DataKind::audio)); },
               {"no readable audio files in", "(1 skipped: ", "song.wav: a symbolic link"});
}

TEST_F(OpenDataset, ManySkippedFilesAreCountedNotAllNamed) {
  for (int i = 0; i < 5; ++i) test::write_file(folder / ("bad" + std::to_string(i) + ".png"), test::random_bytes(50, i));
  expect_error([&] { open_dataset(folder.path(), options_for(DataKind::image)); },
               {"(5 skipped: ", "bad0.png", "bad2.png", "; and 2 more)"});
}

TEST_F(OpenDataset, OneImageIsNotADataset) {
  write_png(folder / "only.png", 1);
  expect_error([&] { open_dataset(folder.path(), options_for(DataKind::image)); },
               {"needs at least 2 images"});
  expect_error([&] { open_dataset(folder / "only.png", options_for(DataKind::image)); },
               {"only.png", "needs at least 2 images"});
}

TEST_F(OpenDataset, EmptyFilesAreSkipped) {
  test::write_file(folder / "empty.txt", std::vector<uint8_t>{});
  test::write_file(folder / "full.txt", std::string("0123456789"));
  const Dataset dataset = open_dataset(folder.path(), options_for(DataKind::text, 0.2));
  ASSERT_EQ(dataset.skipped.size(), 1u);
  EXPECT_NE(dataset.skipped[0].reason.find("empty"), std::string::npos);
  EXPECT_EQ(dataset.train.size(), 8u);  // the one document is split by its tail
}

TEST_F(OpenDataset, AudioFolderGivesMulawBytes) {
  write_wav(folder / "one.wav", 1200);
  write_wav(folder / "two.flac.wav", 600);
  test::write_file(folder / "bad.wav", test::random_bytes(500, 9));
  const Dataset dataset = open_dataset(folder.path(), options_for(DataKind::audio));
  ASSERT_EQ(dataset.skipped.size(), 1u);
  EXPECT_NE(dataset.skipped[0].reason.find("libsndfile"), std::string::npos);
  const std::vector<uint8_t> all = joined(dataset);
  EXPECT_EQ(all.size(), 1800u);
  EXPECT_TRUE(std::all_of(all.begin(), all.end(), [](uint8_t b) { return b == 128; }));
}

TEST_F(OpenDataset, TotalLimitRefusesNamingTheFolder) {
  for (int i = 0; i < 5; ++i) test::write_file(folder / ("f" + std::to_string(i)), std::string(100, 'x'));
  DatasetOptions options = options_for(DataKind::text);
  options.max_total_bytes = 450;
  expect_error([&] { open_dataset(folder.path(), options); },
               {folder.path().string(), "over the limit of 450 bytes"});
  options.kind = DataKind::image;
  options.image = {8, 8, 3};
  options.max_total_bytes = 2 * 192 - 1;
  write_png(folder / "i1.png", 1);
  write_png(folder / "i2.png", 2);
  expect_error([&] { open_dataset(folder.path(), options); }, {folder.path().string(), "over the limit"});
}

TEST_F(OpenDataset, ProgressIsReportedAndCanCancel) {
  for (int i = 0; i < 4; ++i) test::write_file(folder / ("f" + std::to_string(i)), std::string("data"));
  DatasetOptions options = options_for(DataKind::text);
  std::vector<std::pair<size_t, size_t>> calls;
  options.progress = [&](size_t done, size_t total) {
    calls.emplace_back(done, total);
    return true;
  };
  open_dataset(folder.path(), options);
  EXPECT_EQ(calls, (std::vector<std::pair<size_t, size_t>>{{1, 4}, {2, 4}, {3, 4}, {4, 4}}));
  options.progress = [](size_t done, size_t) { return done < 2; };
  expect_error([&] { open_dataset(folder.path(), options); }, {"cancelled"});
}

TEST_F(OpenDataset, BadOptionsAreRefused) {
  test::write_file(folder / "a.txt", std::string("abc"));
  for (const double fraction : {0.0, 1.0, -0.5, std::nan("")}) {
    expect_error([&] { open_dataset(folder / "a.txt", options_for(DataKind::text, fraction)); },
                 {"validation fraction"});
  }
  DatasetOptions options = options_for(DataKind::image);
  options.image = {0, 4, 3};
  expect_error([&] { open_dataset(folder.path(), options); }, {"image shape"});
  test::write_file(folder / "b.txt", std::string("x"));
  expect_error([&] { open_dataset(folder / "b.txt", options_for(DataKind::text)); }, {"b.txt", "too few"});
}

TEST_F(OpenDataset, NonRegularPathsAreRefused) {
  const std::filesystem::path fifo = folder / "pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expect_error([&] { open_dataset(fifo, options_for(DataKind::text)); },
               {"pipe", "neither a folder nor a regular file"});
  // A pipe inside a folder is listed as skipped, never opened (which would block the scan).
  test::write_file(folder / "real.txt", std::string("some text"));
  const Dataset dataset = open_dataset(folder.path(), options_for(DataKind::text));
  ASSERT_EQ(dataset.skipped.size(), 1u);
  EXPECT_EQ(dataset.skipped[0].reason, fifo.string() + ": a FIFO (named pipe), not a regular file");
  EXPECT_EQ(dataset.train.size() + dataset.validation.size(), 9u);
}

}  // namespace
}  // namespace stx::engine
