// `stx info` reports only what loads: every way a checkpoint can be broken that `stx sample` refuses, info
// refuses too, in one line naming the file, with exit status 1 and nothing on stdout; and a FIFO where the
// weights belong is refused at once instead of blocking.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "cli_test_support.h"
#include "stx/engine/io/atomic_file.h"
#include "stx/engine/checkpoint.h"
#include "stx/engine/io/safetensors.h"

#ifdef STX_CLI_PATH

namespace {

namespace fs = std::filesystem;
using stx::test::CliResult;

using stx::test::save_tiny;

// model.safetensors split into its parts, edited, and written back as they are (no re-validation).
struct RawWeights {
  nlohmann::json header;
  std::vector<uint8_t> data;
  uint64_t header_size_override = 0;  // when set, written as the header size instead of the real one

  static RawWeights read(const fs::path& file) {
    const std::vector<uint8_t> bytes = stx::engine::read_file(file, 1u << 30);
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    RawWeights raw;
    raw.header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(n));
    raw.data.assign(bytes.begin() + 8 + static_cast<int64_t>(n), bytes.end());
    return raw;
  }
  void write(const fs::path& file) const {
    const std::string text = header.dump();
    const uint64_t n = header_size_override ? header_size_override : text.size();
    std::string bytes(8, '\0');
    std::memcpy(bytes.data(), &n, 8);
    bytes += text;
    bytes.append(reinterpret_cast<const char*>(data.data()), data.size());
    stx::engine::write_file_atomic(file, bytes);
  }
  // The name of the tensor whose bytes come last in the data section.
  std::string last_tensor() const {
    std::string name;
    uint64_t end = 0;
    for (const auto& item : header.items()) {
      if (item.key() == "__metadata__") continue;
      const uint64_t e = item.value()["data_offsets"][1].get<uint64_t>();
      if (e >= end) end = e, name = item.key();
    }
    return name;
  }
  // The first F32 value of `tensor`, to overwrite.
  float* first_value(const std::string& tensor) {
    return reinterpret_cast<float*>(data.data() + header[tensor]["data_offsets"][0].get<uint64_t>());
  }
};

struct Breakage {
  std::string what;  // for the failure message
  std::function<void(const fs::path& folder)> apply;
  std::string reason;  // what the one line must say besides the file
};

std::vector<Breakage> breakages() {
  const auto edit = [](std::function<void(RawWeights&)> change) {
    return [change](const fs::path& folder) {
      RawWeights raw = RawWeights::read(folder / "model.safetensors");
      change(raw);
      raw.write(folder / "model.safetensors");
    };
  };
  return {
      {"NaN weight", edit([](RawWeights& w) { *w.first_value(w.last_tensor()) = std::nanf(""); }), "NaN or Inf"},
      {"Inf weight",
       edit([](RawWeights& w) { *w.first_value(w.last_tensor()) = std::numeric_limits<float>::infinity(); }),
       "NaN or Inf"},
      {"missing tensor", edit([](RawWeights& w) {
         const std::string last = w.last_tensor();
         const uint64_t begin = w.header[last]["data_offsets"][0].get<uint64_t>();
         w.header.erase(last);
         w.data.resize(begin);
       }),
       "is missing"},
      {"shape disagrees with config.json",
       [](const fs::path& folder) {
         nlohmann::json config = nlohmann::json::parse(stx::test::slurp(folder / "config.json"));
         config["d_ff"] = config["d_ff"].get<int64_t>() / 2;
         stx::engine::write_file_atomic(folder / "config.json", config.dump(2));
       },
       "has shape"},
      {"integer dtype", edit([](RawWeights& w) { w.header[w.last_tensor()]["dtype"] = "I32"; }), "dtype I32"},
      {"overlapping offsets", edit([](RawWeights& w) {
         auto& offsets = w.header[w.last_tensor()]["data_offsets"];
         offsets = {offsets[0].get<uint64_t>() - 4, offsets[1].get<uint64_t>() - 4};
         w.data.resize(w.data.size() - 4);
       }),
       "overlaps"},
      {"offsets past the end", edit([](RawWeights& w) {
         auto& offsets = w.header[w.last_tensor()]["data_offsets"];
         offsets = {offsets[0].get<uint64_t>() + 4, offsets[1].get<uint64_t>() + 4};
       }),
       "past the end of the data section"},
      {"header length past the end", edit([](RawWeights& w) { w.header_size_override = 1u << 20; }),
       "does not fit in the file"},
      {"trailing bytes", edit([](RawWeights& w) { w.data.insert(w.data.end(), 16, 0); }), "trailing bytes"},
      {"FIFO as the weights",
       [](const fs::path& folder) {
         fs::remove(folder / "model.safetensors");
         ASSERT_EQ(::mkfifo((folder / "model.safetensors").c_str(), 0600), 0);
       },
       "not a regular file"},
  };
}

TEST(CliInfo, AnIntactCheckpointIsReported) {
  stx::test::TempFolder tmp;
  const fs::path folder = save_tiny(tmp / "m");
  const CliResult r = stx::test::run_stx(tmp, "info --model " + folder.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("weights"), std::string::npos) << r.out;
}

TEST(CliInfo, EveryBrokenCheckpointIsNamedInOneLineWithExitStatusOne) {
  stx::test::TempFolder tmp;
  const std::vector<Breakage> all = breakages();
  for (size_t i = 0; i < all.size(); ++i) {
    const Breakage& broken = all[i];
    const fs::path folder = save_tiny(tmp / ("m-" + std::to_string(i)));
    broken.apply(folder);
    for (const char* json : {"", "--json "}) {
      // A reader that opened the FIFO would wait for a writer for ever: `timeout` turns that into a failure.
      const CliResult r = stx::test::run_stx(tmp, std::string("info ") + json + "--model " + folder.string(), "timeout 60");
      EXPECT_EQ(r.status, 1) << broken.what << json << "\n" << r.out << r.err;
      EXPECT_EQ(r.out, "") << broken.what;
      EXPECT_EQ(stx::test::count_lines(r.err), 1u) << broken.what << ": " << r.err;
      EXPECT_NE(r.err.find((folder / "model.safetensors").string()), std::string::npos) << broken.what << ": " << r.err;
      EXPECT_NE(r.err.find(broken.reason), std::string::npos) << broken.what << ": " << r.err;
    }
  }
}

}  // namespace

#endif  // STX_CLI_PATH
