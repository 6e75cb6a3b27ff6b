// Running the stx binary from a test: its exit status and what it printed.
#pragma once

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <ATen/ATen.h>

#include "../engine/engine_test_support.h"
#include "stx/engine/checkpoint.h"

#ifdef STX_CLI_PATH

namespace stx::test {

struct CliResult {
  int status = -1;
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `<launcher> stx <arguments>` with stdin from /dev/null; stdout and stderr go through files in `tmp`.
inline CliResult run_stx(const TempFolder& tmp, const std::string& arguments, const std::string& launcher = "") {
  const std::string command = launcher + " " + std::string(STX_CLI_PATH) + " " + arguments + " >" + (tmp / "out.txt").string() +
                              " 2>" + (tmp / "err.txt").string() + " </dev/null";
  const int raw = std::system(command.c_str());
  CliResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(tmp / "out.txt");
  r.err = slurp(tmp / "err.txt");
  return r;
}

// A tiny text model (seeded weights, a 10-step recipe) saved as a checkpoint folder; returns the folder.
inline std::filesystem::path save_tiny(const std::filesystem::path& folder) {
  at::manual_seed(1);
  stx::models::SparseTransformer model(stx::test::tiny_text_config());
  std::filesystem::create_directories(folder);
  stx::engine::write_checkpoint_files(folder, model->config(), {{"steps", 10}}, {}, model, nullptr, nullptr);
  return folder;
}

inline size_t count_lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace stx::test

#endif  // STX_CLI_PATH
