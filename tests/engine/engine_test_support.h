// Fixtures for the engine suites, made by the tests themselves: a fresh temporary folder, a tiny model
// config, and a small text corpus.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>

#include "../support/temp_folder.h"
#include "stx/engine/error.h"
#include "stx/engine/trainer.h"
#include "stx/models/model_config.h"
#include "tiny_model.h"

namespace stx::test {

// The message of the stx::engine::Error that `f` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const engine::Error& e) {
    return e.what();
  }
  return "";
}

inline void write_text(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary);
  out << text;
}

// A corpus a tiny model can learn: short sentences from a small vocabulary, in two files.
inline std::filesystem::path make_text_corpus(const std::filesystem::path& folder, size_t bytes_per_file = 3000) {
  const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far"};
  std::mt19937 rng(5);
  for (const char* name : {"one.txt", "two.txt"}) {
    std::string text;
    while (text.size() < bytes_per_file) {
      text += words[rng() % 10];
      text += rng() % 5 == 0 ? ".\n" : " ";
    }
    write_text(folder / name, text);
  }
  return folder;
}

inline models::ModelConfig tiny_text_config(int64_t context = 64) {
  models::ModelConfig c = tiny_model_config(models::DataKind::text);
  c.context = context;
  return c;
}

inline engine::TrainOptions tiny_train_options(const std::filesystem::path& data, const std::filesystem::path& out) {
  engine::TrainOptions o;
  o.model = tiny_text_config();
  o.data = data;
  o.out = out;
  o.steps = 6;
  o.batch = 4;
  o.learning_rate = 3e-3;
  o.warmup_steps = 2;
  o.eval_every = 0;
  o.eval_windows = 4;
  o.checkpoint_every = 1000;
  o.validation_fraction = 0.5;
  return o;
}

}  // namespace stx::test
