#include "commands.h"

#include <ATen/Parallel.h>
#include <omp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "stx/engine/io/atomic_file.h"
#include "stx/engine/checkpoint.h"
#include "stx/engine/data/crops.h"
#include "stx/engine/data/dataset.h"
#include "stx/engine/error.h"
#include "stx/engine/evaluate.h"
#include "stx/engine/export/export.h"
#include "stx/engine/model_data.h"
#include "stx/engine/threads.h"
#include "stx/models/linear_predictor.h"
#include "tonality_bench.h"

namespace stx::bench {
namespace {

namespace fs = std::filesystem;

struct QualityOptions {
  std::string model;
  std::string data;
  int64_t images = 0;  // images: score only the first N held-out images (0 = all), model and codecs alike
  int64_t batch = 8;
  int threads = 0;  // 0: every core
  std::string markdown_path, json_path;
  std::string work_dir;  // temporary files; default: a fresh folder under the system temp folder
  bool model_part = true, compressors_part = true;  // --skip-model / --skip-compressors
  bool sliding = false;                             // also score the model with sliding windows (text, audio)
  bool samples = false;  // audio: also measure how tonal generated samples are (tonality_bench.h)
  TonalityOptions tonality;  // its settings: the model's own sampling defaults, then the options given
  std::optional<double> temperature, top_p, min_p;
};

struct Row {
  std::string method;
  double alone = -1;        // bits per byte of the held-out bytes compressed on their own (< 0: not measured)
  double given_train = -1;  // size(train + held out) - size(train), in bits per held-out byte
  std::string note;
};

// A model with the linear-prediction expert: the expert alone on the same windows (lambda 0, w 1), which
// the network has to beat to be worth its cost.
Row expert_alone_row(const models::ModelConfig& c, const std::vector<uint8_t>& held_out, size_t record_bytes) {
  std::fprintf(stderr, "the model's linear-prediction expert alone...\n");
  const auto windows = engine::evaluation_windows(held_out.size(), static_cast<size_t>(c.context), record_bytes);
  std::vector<double> bits(windows.size(), 0.0);
  at::parallel_for(0, static_cast<int64_t>(windows.size()), 1, [&](int64_t w0, int64_t w1) {
    std::vector<float> log_probs(256);
    for (int64_t w = w0; w < w1; ++w) {
      models::LinearPredictor predictor(c.expert);
      for (size_t i = windows[static_cast<size_t>(w)].first; i < windows[static_cast<size_t>(w)].second; ++i) {
        predictor.log_probs(log_probs.data());
        bits[static_cast<size_t>(w)] -= log_probs[held_out[i]] / std::log(2.0);
        predictor.push(held_out[i]);
      }
    }
  });
  double total = 0;
  for (double b : bits) total += b;
  return Row{"its linear-prediction expert alone (order " + std::to_string(c.expert.order) + ")",
             total / static_cast<double>(held_out.size()), -1, "each window on its own, without the network"};
}

// One shell command; its failure is an error naming the command and the Debian package that provides it.
void run(const std::string& command, const std::string& package) {
  const int status = std::system(("{ " + command + "; } > /dev/null 2>&1").c_str());
  if (status != 0) {
    throw engine::Error("this command failed (is Debian's " + package + " installed?): " + command);
  }
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

void write_bytes(const fs::path& file, const std::vector<uint8_t>& bytes) {
  std::ofstream out(file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw engine::Error("cannot write " + file.string());
}

uint64_t size_of(const fs::path& file) { return fs::file_size(file); }

// A stream compressor, as a command turning IN into OUT.
struct StreamTool {
  std::string name, package, extension, command;  // command with {in} and {out}; 7z insists on .7z
};

const std::vector<StreamTool>& stream_tools() {
  static const std::vector<StreamTool> tools = {
      {"xz -9e", "xz-utils", "xz", "xz -9e -k -c {in} > {out}"},
      {"bzip2 -9", "bzip2", "bz2", "bzip2 -9 -k -c {in} > {out}"},
      {"zstd --ultra -22", "zstd", "zst", "zstd -q --ultra -22 --long=27 -c {in} > {out}"},
      {"7-Zip PPMd", "p7zip-full", "7z", "rm -f {out} && 7z a -t7z -m0=PPMd:mem=256m:o=16 -mx=9 {out} {in}"},
  };
  return tools;
}

uint64_t compressed_size(const StreamTool& tool, const fs::path& in, const fs::path& out) {
  std::string command = tool.command;
  for (const auto& [key, value] : {std::pair<std::string, fs::path>{"{in}", in}, {"{out}", out}}) {
    for (size_t at; (at = command.find(key)) != std::string::npos;)
      command.replace(at, key.size(), quoted(value));
  }
  run(command, tool.package);
  return size_of(out);
}

// Each stream compressor on the held-out bytes alone and given the training bytes before them.
std::vector<Row> stream_rows(const fs::path& work, const std::vector<uint8_t>& train,
                             const std::vector<uint8_t>& held_out, const std::string& label) {
  const fs::path held_file = work / "held_out.bin", train_file = work / "train.bin",
                 both_file = work / "both.bin";
  write_bytes(held_file, held_out);
  write_bytes(train_file, train);
  std::vector<uint8_t> both = train;
  both.insert(both.end(), held_out.begin(), held_out.end());
  write_bytes(both_file, both);
  const double bits = 8.0 / static_cast<double>(held_out.size());
  std::vector<Row> rows;
  for (const StreamTool& tool : stream_tools()) {
    std::fprintf(stderr, "  %s...\n", tool.name.c_str());
    Row row{tool.name + label, -1, -1, ""};
    const fs::path out = work / ("out." + tool.extension);
    row.alone = static_cast<double>(compressed_size(tool, held_file, out)) * bits;
    const double with = static_cast<double>(compressed_size(tool, both_file, out));
    const double without = static_cast<double>(compressed_size(tool, train_file, out));
    row.given_train = (with - without) * bits;
    rows.push_back(row);
  }
  return rows;
}

// The stream compressors (PPMd aside) on exactly the windows the model scores, each window compressed alone:
// what a compressor reaches when it, like the model, sees nothing before the window. The gap between this
// and the whole-stream rows is what the compressor gains from matches farther back than one context.
std::vector<Row> windowed_stream_rows(const fs::path& work, const std::vector<uint8_t>& held_out,
                                      const models::ModelConfig& c, size_t record_bytes,
                                      const std::string& label) {
  const auto windows =
      engine::evaluation_windows(held_out.size(), static_cast<size_t>(c.context), record_bytes);
  const fs::path window_file = work / "window.bin";
  std::vector<Row> rows;
  for (const StreamTool& tool : stream_tools()) {
    if (tool.package == "p7zip-full") continue;  // its container header alone costs ~100 bytes a window
    std::fprintf(stderr, "  %s, each %lld-byte window alone (%zu windows)...\n", tool.name.c_str(),
                 static_cast<long long>(c.context), windows.size());
    uint64_t total = 0;
    for (const auto& [first, last] : windows) {
      write_bytes(window_file, std::vector<uint8_t>(held_out.begin() + static_cast<std::ptrdiff_t>(first),
                                                    held_out.begin() + static_cast<std::ptrdiff_t>(last)));
      total += compressed_size(tool, window_file, work / ("window." + tool.extension));
    }
    rows.push_back(Row{tool.name + label,
                       8.0 * static_cast<double>(total) / static_cast<double>(held_out.size()), -1,
                       "each " + std::to_string(c.context) + "-byte window alone, as the model"});
  }
  return rows;
}

// Lossless image codecs, one file per held-out image (as a user would store them), summed.
std::vector<Row> image_codec_rows(const fs::path& work, const std::vector<uint8_t>& held_out,
                                  const models::ModelConfig& c) {
  const fs::path folder = work / "images";
  fs::create_directories(folder);
  const size_t record = static_cast<size_t>(c.image_height * c.image_width * c.image_channels);
  const size_t count = held_out.size() / record;
  const std::string magic = c.image_channels == 1 ? "P5" : "P6";
  for (size_t i = 0; i < count; ++i) {  // PNM: what every codec below reads
    char name[32];
    std::snprintf(name, sizeof name, "%06zu.pnm", i);
    std::ofstream out(folder / name, std::ios::binary);
    out << magic << "\n" << c.image_width << " " << c.image_height << "\n255\n";
    out.write(reinterpret_cast<const char*>(held_out.data() + i * record),
              static_cast<std::streamsize>(record));
  }
  struct Codec {
    std::string name, package, extension, command;  // command for one file: $f in, $o out
  };
  const std::vector<Codec> codecs = {
      {"PNG (optipng -o7)", "optipng", "png", "optipng -quiet -o7 -out \"$o\" \"$f\""},
      {"WebP lossless (cwebp -z 9)", "webp", "webp", "cwebp -quiet -lossless -z 9 \"$f\" -o \"$o\""},
      {"JPEG XL lossless (cjxl -d 0 -e 9)", "libjxl-tools", "jxl",
       "cjxl \"$f\" \"$o\" -d 0 -e 9 --quiet 2>/dev/null"},
  };
  std::vector<Row> rows;
  const double bits = 8.0 / static_cast<double>(count * record);
  for (const Codec& codec : codecs) {
    std::fprintf(stderr, "  %s on %zu images...\n", codec.name.c_str(), count);
    // Two shells, each taking every other image, so both cores work.
    std::string script = "cd " + quoted(folder) +
                         " && pids= && for part in 0 1; do (i=0; for f in *.pnm; do " +
                         "if [ $((i % 2)) = $part ]; then o=\"${f%.pnm}." + codec.extension + "\"; " +
                         codec.command + " || exit 1; fi; i=$((i + 1)); done) & pids=\"$pids $!\"; done; " +
                         "for p in $pids; do wait $p || exit 1; done";
    const fs::path script_file = work / "codec.sh";
    std::ofstream(script_file) << script << "\n";
    run("bash " + quoted(script_file), codec.package);
    uint64_t total = 0;
    for (size_t i = 0; i < count; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "%06zu.%s", i, codec.extension.c_str());
      total += size_of(folder / name);
    }
    rows.push_back(Row{codec.name, static_cast<double>(total) * bits, -1, "one file per image"});
  }
  return rows;
}

// FLAC on the held-out samples: the mu-law bytes decoded to 16-bit PCM at 12 kHz, as the model hears them.
Row flac_row(const fs::path& work, const std::vector<uint8_t>& held_out) {
  const fs::path wav = work / "held_out.wav", flac = work / "held_out.flac";
  engine::ExportInfo info;
  info.model_name = "quality bench";
  engine::write_wav(wav, held_out.data(), held_out.size(), 12000, info);
  run("flac -8 -f -s -o " + quoted(flac) + " " + quoted(wav), "flac");
  return Row{"FLAC -8 (mu-law decoded to 16-bit)", static_cast<double>(size_of(flac)) * 8.0 / held_out.size(),
             -1, "bits per sample"};
}

std::string fixed_digits(double x, int digits) {
  if (std::isnan(x)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, x);
  return text;
}

std::string fixed(double x) {
  if (x < 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", x);
  return text;
}

int run_quality(const QualityOptions& given) {
  QualityOptions o = given;
  // Every core, as `stx eval`, unless --threads: Debian's LibTorch starts with one thread.
  engine::set_thread_limit(o.threads);
  engine::use_job_threads();
  engine::ModelBundle bundle = engine::load_checkpoint(engine::resolve_checkpoint(o.model));
  // Samples are drawn as `stx sample` draws them: the model's own defaults where no option was given.
  o.tonality.settings = bundle.sampling;
  if (o.temperature) o.tonality.settings.temperature = *o.temperature;
  if (o.top_p) o.tonality.settings.top_p = *o.top_p;
  if (o.min_p) o.tonality.settings.min_p = *o.min_p;
  const models::ModelConfig& c = bundle.config;
  if (o.samples && c.kind != models::DataKind::audio) {
    throw engine::Error("--samples measures audio models only; " + c.name + " is a " +
                        models::to_string(c.kind) + " model");
  }
  std::fprintf(stderr, "reading %s...\n", o.data.c_str());
  engine::Dataset data = engine::open_dataset(o.data, engine::dataset_options_for(c));
  std::vector<uint8_t> held_out = std::move(data.validation);
  if (c.kind == models::DataKind::image && o.images > 0) {
    held_out.resize(std::min(held_out.size(), static_cast<size_t>(o.images) * data.record_bytes));
  }

  fs::path work = o.work_dir.empty()
                      ? fs::temp_directory_path() / ("stx-quality-" + std::to_string(::getpid()))
                      : fs::path(o.work_dir);
  fs::create_directories(work);
  struct Cleanup {
    fs::path path;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } cleanup{work};

  std::vector<Row> rows;
  engine::EvaluationResult model;
  double model_seconds = 0;
  if (o.model_part) {
    std::fprintf(stderr, "model %s on %zu held-out bytes...\n", c.name.c_str(), held_out.size());
    const auto start = std::chrono::steady_clock::now();
    model = engine::evaluate_bits_per_byte(bundle.model, held_out, c.context,
                                           static_cast<int64_t>(data.record_bytes), 0, o.batch);
    model_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rows.push_back(Row{"STX " + c.name + " model (stx eval)", model.bits_per_byte, -1,
                       "each " + std::to_string(c.context) + "-byte window on its own"});
    if (c.expert.enabled()) rows.push_back(expert_alone_row(c, held_out, data.record_bytes));
    if (o.sliding && c.kind != models::DataKind::image) {
      std::fprintf(stderr, "model %s, sliding windows...\n", c.name.c_str());
      const engine::EvaluationResult sliding =
          engine::evaluate_bits_per_byte_sliding(bundle.model, held_out, c.context, o.batch);
      rows.push_back(Row{"STX " + c.name + " model (stx eval --sliding)", sliding.bits_per_byte, -1,
                         "each byte after at least " + std::to_string(c.context / 2) + " earlier bytes"});
    }
  }
  if (o.compressors_part) {
    const std::string stream_label = c.kind == models::DataKind::audio   ? " (mu-law bytes)"
                                     : c.kind == models::DataKind::image ? " (raw pixel stream)"
                                                                         : "";
    for (Row& row : stream_rows(work, data.train, held_out, stream_label)) rows.push_back(row);
    if (c.kind != models::DataKind::image) {
      for (Row& row : windowed_stream_rows(work, held_out, c, data.record_bytes, stream_label))
        rows.push_back(row);
    }
    if (c.kind == models::DataKind::image) {
      for (Row& row : image_codec_rows(work, held_out, c)) rows.push_back(row);
    }
    if (c.kind == models::DataKind::audio) rows.push_back(flac_row(work, held_out));
  }

  std::vector<TonalityRow> tonality;
  if (o.samples) {
    tonality = measure_tonality(bundle.model, c.name, held_out, data.validation_files, o.data, o.tonality);
  }

  std::ostringstream md;
  if (!rows.empty()) {
    md << "| " << models::to_string(c.kind)
       << ": method | bits/byte, held out alone | given the training data |\n"
       << "|---|---|---|\n";
  }
  for (const Row& row : rows) {
    md << "| " << row.method << (row.note.empty() ? "" : " (" + row.note + ")") << " | " << fixed(row.alone)
       << " | " << fixed(row.given_train) << " |\n";
  }
  if (!tonality.empty()) {
    const double corpus = tonality.front().median_flatness;
    md << (rows.empty() ? "" : "\n") << "| audio: what (temperature "
       << fixed(o.tonality.settings.temperature) << ", min-p " << fixed(o.tonality.settings.min_p)
       << ") | seconds | frames | median spectral flatness | vs held out | tonal peak ratio | note events/s | "
          "vs held out |\n|---|---|---|---|---|---|---|---|\n";
    const double corpus_events = tonality.front().note_events_per_second;
    for (const TonalityRow& row : tonality) {
      md << "| " << row.what << " | " << fixed(row.seconds) << " | " << row.frames << " | "
         << fixed_digits(row.median_flatness, 4) << " | " << fixed_digits(row.median_flatness / corpus, 1)
         << "x | " << fixed_digits(row.tonal_peak_ratio, 3) << " | " << fixed_digits(row.note_events_per_second, 2)
         << " | "
         << (corpus_events > 0 ? fixed_digits(row.note_events_per_second / corpus_events, 2) + "x" : "-") << " |\n";
    }
  }
  std::printf("%s: %s, held out %zu bytes (%s)\n\n%s", c.name.c_str(), o.data.c_str(), held_out.size(),
              data.validation_files.empty() ? "" : data.validation_files.front().c_str(), md.str().c_str());
  if (o.model_part) {
    std::printf("\nmodel: %lld windows in %.0f s\n", static_cast<long long>(model.windows), model_seconds);
  }
  if (!o.markdown_path.empty()) engine::write_file_atomic(o.markdown_path, md.str());
  if (!o.json_path.empty()) {
    nlohmann::ordered_json out = {{"model", bundle.folder.string()},
                                  {"kind", models::to_string(c.kind)},
                                  {"data", o.data},
                                  {"held_out_bytes", held_out.size()},
                                  {"rows", nlohmann::ordered_json::array()}};
    for (const Row& row : rows) {
      const auto measured = [](double x) {
        return x < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(x);
      };
      out["rows"].push_back({{"method", row.method},
                             {"bits_per_byte", measured(row.alone)},
                             {"given_train_bits_per_byte", measured(row.given_train)},
                             {"note", row.note}});
    }
    if (!tonality.empty()) {
      out["samples"] = {{"temperature", o.tonality.settings.temperature},
                        {"top_k", o.tonality.settings.top_k},
                        {"top_p", o.tonality.settings.top_p},
                        {"min_p", o.tonality.settings.min_p},
                        {"rows", nlohmann::ordered_json::array()}};
      for (const TonalityRow& row : tonality) {
        out["samples"]["rows"].push_back(
            {{"what", row.what},
             {"seconds", row.seconds},
             {"frames", row.frames},
             {"median_spectral_flatness", std::isnan(row.median_flatness)
                                              ? nlohmann::ordered_json()
                                              : nlohmann::ordered_json(row.median_flatness)},
             {"tonal_peak_ratio", std::isnan(row.tonal_peak_ratio) ? nlohmann::ordered_json()
                                                                   : nlohmann::ordered_json(row.tonal_peak_ratio)},
             {"note_events_per_second", row.note_events_per_second}});
      }
    }
    engine::write_file_atomic(o.json_path, out.dump(2) + "\n");
  }
  return 0;
}

}  // namespace

void register_quality_command(CLI::App& parent) {
  auto options = std::make_shared<QualityOptions>();
  CLI::App* command = parent.add_subcommand(
      "quality",
      "A model's bits/byte on its held-out data beside xz, bzip2, zstd and PPMd (and PNG, WebP, "
      "JPEG XL for images, FLAC for audio) on the same bytes");
  command
      ->add_option("--model", options->model,
                   "a model folder, run folder or bundled name: image, audio, text")
      ->required();
  command
      ->add_option("--data", options->data,
                   "the data the model was trained on (its held-out split is scored)")
      ->required();
  command->add_option("--images", options->images, "images only: score the first N held-out images (0 = all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option("--batch", options->batch, "windows per forward pass of the model")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  command->add_option("--markdown", options->markdown_path, "also write the table to this file");
  command->add_option("--threads", options->threads, "threads (0: every core, or STX_THREADS)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  command->add_option("--json", options->json_path, "also write the rows as JSON to this file");
  command->add_flag("!--skip-model", options->model_part, "measure only the compressors");
  command->add_flag("--sliding", options->sliding,
                    "text and audio: also score the model with sliding windows (stx eval --sliding)");
  command->add_flag("!--skip-compressors", options->compressors_part, "measure only the model");
  command->add_option("--work-dir", options->work_dir, "folder for temporary files (removed afterwards)");
  command->add_flag(
      "--samples", options->samples,
      "audio: also generate unconditional samples (seeds 1..8 unless --first-seed, 4 s) and continuations of held-out "
      "openings (2 s prompt), and compare their median spectral flatness with the held-out audio's");
  command
      ->add_option("--temperature", options->temperature,
                   "--samples: sampling temperature (default: the model's, else 1)")
      ->check(CLI::Range(0.0, 10.0));
  command->add_option("--top-p", options->top_p, "--samples: nucleus sampling, 1: off (default: the model's, else 1)")
      ->check(CLI::Range(0.001, 1.0));
  command->add_option("--min-p", options->min_p, "--samples: drop bytes less likely than this "
                      "times the most likely one, 0: off (default: the model's, else 0)")
      ->check(CLI::Range(0.0, 0.999));
  command->add_option("--unconditional", options->tonality.unconditional, "--samples: unconditional samples")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  command
      ->add_option("--continuations", options->tonality.continuations,
                   "--samples: held-out openings continued")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  command
      ->add_option("--first-seed", options->tonality.first_seed,
                   "--samples: the unconditional samples' first seed (the continuations' too); another range "
                   "checks sampling settings chosen on the default one on samples they were not chosen on")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  command->add_option("--keep-samples", options->tonality.keep_dir,
                      "--samples: write every sample as a WAV here");
  command->footer(
      "Example:\n  stx-bench quality --model text --data ~/stx-data/kjv/kjv.txt --json kjv.json\n"
      "Needs Debian's xz-utils, bzip2, zstd, p7zip-full, and optipng, webp, libjxl-tools (images), flac "
      "(audio).");
  command->callback([options] { run_quality(*options); });
}

}  // namespace stx::bench
