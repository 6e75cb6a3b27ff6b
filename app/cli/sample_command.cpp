#include "sample_command.h"

#include <CLI/CLI.hpp>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <optional>

#include "interrupt.h"
#include "option_checks.h"
#include "pattern_options.h"
#include "progress_printer.h"
#include "sampling_options.h"
#include "stx/engine/io/atomic_file.h"
#include "stx/engine/data/audio_io.h"
#include "stx/engine/checkpoint.h"
#include "stx/engine/device.h"
#include "stx/engine/error.h"
#include "stx/engine/export/export.h"
#include "stx/engine/data/image_io.h"
#include "stx/engine/sampler.h"
#include "stx/engine/model_types.h"

namespace stx::cli {
namespace {

constexpr int kExitInterrupted = 130;
constexpr uint64_t kMaxPromptFileBytes = 64ull << 20;

void add_common(CLI::App& c, SampleCommandOptions& o, const char* out_help) {
  c.add_option("--model", o.model,
               "a model folder, a run folder (its latest checkpoint), or a bundled model: image, audio, text")
      ->required();
  c.add_option("--out", o.out, out_help)->required();
  c.add_option("--n", o.count, "samples, generated together; with several, FILE-1, FILE-2, ...")->capture_default_str();
  c.add_option("--seed", o.seed, "random seed (default: a fresh one, printed before generation starts)")
      ->check(unsigned_64());
  add_sampling_options(c, o.sampling);
  c.add_option("--kv-cache", o.kv_cache,
               "keys and values kept as float16 (half the memory, faster late in long audio) or float32 (the "
               "forward pass's attention to float rounding)")
      ->check(CLI::IsMember({"float16", "float32"}))
      ->capture_default_str();
  c.add_option("--device", o.device,
               "where to generate: cpu, cuda, or auto (the faster of the two, measured; the CPU without a GPU)")
      ->capture_default_str();
  c.add_flag("--force", o.force, "replace existing output files");
  c.add_flag("--quiet", o.quiet, "print only errors and the result");
}

std::string file_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

std::string a_model(engine::DataKind kind) {
  return std::string(kind == engine::DataKind::image || kind == engine::DataKind::audio ? "an " : "a ") +
         engine::to_string(kind) + " model";
}

void require_kind(const engine::ModelBundle& m, engine::DataKind want, const std::string& task) {
  if (m.config.kind == want) return;
  throw UsageError("the model in " + m.folder.string() + " is " + a_model(m.config.kind) + "; `stx sample " + task +
                   "` needs " + a_model(want));
}

}  // namespace

CLI::App* add_sample_command(CLI::App& app, SampleCommandOptions& o) {
  CLI::App* sample = app.add_subcommand("sample", "Generate images, audio or text with a model and export them");
  sample->require_subcommand(1);
  CLI::App* image = sample->add_subcommand("image", "Generate or complete images (PNG)");
  add_common(*image, o, "the PNG to write");
  image->add_option("--prompt", o.prompt, "an image to complete (any size: converted like the training images)");
  image->add_option("--keep-rows", o.keep_rows, "rows of --prompt kept; the rest is generated")
      ->check(whole_between(0, 65535));
  image->callback([&o] { o.kind = "image"; });
  CLI::App* audio = sample->add_subcommand("audio", "Generate or continue 12 kHz audio (WAV)");
  add_common(*audio, o, "the WAV to write");
  audio->add_option("--prompt", o.prompt, "a clip to continue (WAV, FLAC, OGG, AIFF...: resampled to 12 kHz)");
  audio->add_option("--seconds", o.seconds, "seconds to generate after the prompt")->required();
  audio->add_option("--rate", o.output_rate, "WAV sample rate")->check(CLI::IsMember({12000, 44100, 48000}))
      ->capture_default_str();
  audio->callback([&o] { o.kind = "audio"; });
  CLI::App* text = sample->add_subcommand("text", "Continue text (TXT); the text streams to the terminal");
  add_common(*text, o, "the text file to write");
  auto* prompt = text->add_option("--prompt", o.prompt, "the text to continue");
  text->add_option("--prompt-file", o.prompt_file, "a file whose bytes are the text to continue")
      ->check(non_empty_path())
      ->excludes(prompt);
  text->add_option("--max-bytes", o.max_bytes, "bytes to generate at most")->capture_default_str();
  text->add_option("--stop", o.stop, "end a sample when it generates this string (repeatable)");
  text->callback([&o] { o.kind = "text"; });
  return sample;
}

namespace {

// How the samples began, for the exports' metadata.
struct SampleOrigin {
  std::string began = "unconditional";
  std::optional<int> rows_kept;  // image completion
};

// The request's settings from the options, checked before the model is loaded: a bad value, or --device
// cuda on a machine without one, is a usage error (exit 2).
engine::SampleRequest checked_request(const SampleCommandOptions& o) {
  require_between("--n", o.count, 1, 256);
  engine::SampleRequest request;
  request.count = o.count;
  request.settings = o.sampling.over(engine::SamplingSettings{});  // the given ones checked now; see below
  request.seed = o.seed;
  request.half_precision_cache = o.kv_cache == "float16";
  try {
    request.settings.validate();
    request.device = engine::parse_device_choice(o.device);
    engine::resolve_generation_device(request.device);  // cuda on a machine without one: said before loading
  } catch (const engine::Error& e) {
    throw UsageError(e);
  }
  return request;
}

// An image from nothing, or the kept rows of --prompt completed.
void prepare_image(const SampleCommandOptions& o, const engine::ModelBundle& bundle, engine::SampleRequest& request,
                   SampleOrigin& origin) {
  const engine::ModelConfig& c = bundle.config;
  require_kind(bundle, engine::DataKind::image, "image");
  request.length = c.context;
  const int64_t row_bytes = c.image_width * c.image_channels;
  if (o.keep_rows >= 0 && o.prompt.empty()) throw UsageError("--keep-rows needs --prompt IMAGE");
  if (!o.prompt.empty()) {
    if (o.keep_rows < 0) throw UsageError("--prompt needs --keep-rows K (rows of the prompt to keep)");
    require_between("--keep-rows", o.keep_rows, 0, c.image_height - 1);
    const std::vector<uint8_t> image = engine::load_image_bytes(
        o.prompt, engine::ImageShape{static_cast<int>(c.image_height), static_cast<int>(c.image_width),
                                     static_cast<int>(c.image_channels)});
    request.prompt.assign(image.begin(), image.begin() + o.keep_rows * row_bytes);
    origin.began = "image " + file_name(o.prompt);
    origin.rows_kept = static_cast<int>(o.keep_rows);
  }
}

// --seconds of audio, after --prompt's clip when there is one (its end, when it is longer than the room left).
void prepare_audio(const SampleCommandOptions& o, const engine::ModelBundle& bundle, engine::SampleRequest& request,
                   SampleOrigin& origin) {
  const engine::ModelConfig& c = bundle.config;
  require_kind(bundle, engine::DataKind::audio, "audio");
  if (!(o.seconds > 0) || !std::isfinite(o.seconds)) {
    throw UsageError("--seconds must be a number of seconds above 0 (such as 4 or 2.5)");
  }
  const auto generate = static_cast<int64_t>(std::llround(o.seconds * engine::kSampleRate));
  if (generate < 1) {
    throw UsageError("--seconds is less than one sample at 12 kHz (1/12000 s)");
  }
  if (generate > c.context - 1) {
    char most[32];
    // Rounded down, so that the figure shown is itself accepted.
    std::snprintf(most, sizeof most, "%.2f", std::floor(100.0 * (c.context - 1) / engine::kSampleRate) / 100.0);
    throw UsageError(std::string("--seconds must be at most ") + most + " with this model (context " +
                     std::to_string(c.context) + " samples at 12 kHz)");
  }
  if (!o.prompt.empty()) {
    engine::AudioWarnings warnings;
    std::vector<uint8_t> clip = engine::load_audio_mulaw(o.prompt, {}, &warnings);
    for (const std::string& warning : warnings.lines) std::fprintf(stderr, "stx sample: warning: %s\n", warning.c_str());
    const auto room = static_cast<size_t>(c.context - generate);
    if (clip.size() > room) {
      std::fprintf(stderr, "stx sample: the prompt clip is longer than the model's context leaves room for; "
                           "its last %.2f s are used\n", static_cast<double>(room) / engine::kSampleRate);
      clip.erase(clip.begin(), clip.end() - static_cast<std::ptrdiff_t>(room));
    }
    request.prompt = std::move(clip);
    origin.began = "clip " + file_name(o.prompt);
  }
  request.length = static_cast<int64_t>(request.prompt.size()) + generate;
}

// Up to --max-bytes after the prompt text, ending early at a --stop string.
void prepare_text(const SampleCommandOptions& o, const engine::ModelBundle& bundle, engine::SampleRequest& request,
                  SampleOrigin& origin) {
  const engine::ModelConfig& c = bundle.config;
  require_kind(bundle, engine::DataKind::text, "text");
  if (!o.prompt_file.empty()) {
    request.prompt = engine::read_file(o.prompt_file, kMaxPromptFileBytes);
  } else {
    request.prompt.assign(o.prompt.begin(), o.prompt.end());
  }
  require_between("--max-bytes", o.max_bytes, 1, c.context - 1);
  const auto prompt_bytes = static_cast<int64_t>(request.prompt.size());
  if (prompt_bytes + o.max_bytes > c.context) {
    throw UsageError("the prompt (" + std::to_string(prompt_bytes) + " bytes) and --max-bytes " +
                     std::to_string(o.max_bytes) + " exceed the model's context of " + std::to_string(c.context) +
                     " bytes");
  }
  request.length = prompt_bytes + o.max_bytes;
  request.stop_strings = o.stop;
  origin.began = std::string(request.prompt.begin(), request.prompt.end());
}

// Generates with a progress bar (text instead streams sample 1 to standard output) until done or `stop`.
engine::SampleResult generate(const SampleCommandOptions& o, engine::ModelBundle& bundle,
                              const engine::SampleRequest& request, const std::atomic<bool>& stop) {
  // Text streams sample 1 to standard output as it comes; the bar would garble it, so text shows none.
  const bool stream_text = o.kind == "text";
  ProgressPrinter printer(o.quiet || stream_text);
  if (stream_text && !o.quiet) std::fwrite(request.prompt.data(), 1, request.prompt.size(), stdout);
  engine::SampleResult result = engine::sample(
      bundle.model, request,
      [&](const engine::Event& e) {
        if (const auto* b = std::get_if<engine::SampleBytes>(&e); b && stream_text && b->sample == 0 && !o.quiet) {
          std::fwrite(b->bytes.data(), 1, b->bytes.size(), stdout);
          std::fflush(stdout);
        }
        if (stream_text && !o.quiet) {
          if (const auto* s = std::get_if<engine::SampleStarted>(&e)) {
            std::fprintf(stderr, "seed %llu\n", static_cast<unsigned long long>(s->seed));
            if (!s->device_reason.empty()) {
              std::fprintf(stderr, "device: %s (%s)\n", s->device.c_str(), s->device_reason.c_str());
            }
          }
        }
        printer(e);
      },
      &stop);
  printer(engine::JobEnded{});
  if (stream_text && !o.quiet) std::fputc('\n', stdout);
  return result;
}

// Writes every sample (out, or out-1, out-2...); a file that fails names the ones already written, which stay.
void write_samples(const SampleCommandOptions& o, const engine::ModelBundle& bundle,
                   const engine::SampleRequest& request, const engine::SampleResult& result,
                   const SampleOrigin& origin) {
  const engine::ModelConfig& c = bundle.config;
  const engine::Overwrite overwrite = o.force ? engine::Overwrite::Replace : engine::Overwrite::Refuse;
  std::vector<std::string> written;
  for (int64_t k = 0; k < o.count; ++k) {
    const std::filesystem::path path = engine::numbered_path(o.out, static_cast<int>(k + 1), static_cast<int>(o.count));
    const std::vector<uint8_t>& bytes = result.samples[static_cast<size_t>(k)];
    engine::ExportInfo info = engine::sample_export_info(c.name, bundle.weights_hash, request.settings,
                                                         request.half_precision_cache, result.seed,
                                                         static_cast<int>(k), static_cast<int>(o.count));
    info.prompt = origin.began;
    info.prompt_rows_kept = origin.rows_kept;
    try {
      if (o.kind == "image") {
        std::vector<uint8_t> pixels(static_cast<size_t>(c.context), 0);  // a stopped sample: the rest stays black
        std::copy(bytes.begin(), bytes.end(), pixels.begin());
        engine::write_png_export(path, pixels.data(), static_cast<int>(c.image_width), static_cast<int>(c.image_height),
                                 static_cast<int>(c.image_channels), info, overwrite);
      } else if (o.kind == "audio") {
        engine::write_wav(path, bytes.data(), bytes.size(), o.output_rate, info, overwrite);
      } else {
        engine::write_text(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), overwrite);
      }
    } catch (const engine::Error& e) {
      // What was written stays, and the message says so: a quiet run printed nothing about it yet.
      if (written.empty()) throw;
      std::string kept = written.front();
      if (written.size() > 1) kept += " and " + std::to_string(written.size() - 1) + " more";
      throw engine::Error(std::string(e.what()) + " (" + kept + " written before it " +
                          (written.size() > 1 ? "are" : "is") + " kept)",
                          e.settings());
    }
    written.push_back(path.string());
    if (!o.quiet) std::fprintf(stderr, "wrote %s\n", path.string().c_str());
  }
  // Quiet: one line for every file written, the first and how many.
  if (o.quiet) {
    const std::string first = engine::numbered_path(o.out, 1, static_cast<int>(o.count)).string();
    if (o.count == 1) {
      std::fprintf(stderr, "wrote %s\n", first.c_str());
    } else {
      std::fprintf(stderr, "wrote %s and %lld more\n", first.c_str(), static_cast<long long>(o.count - 1));
    }
  }
}

// The last line: bytes, time and rate of the generation itself, the prompt's reading told apart, the seed.
void print_summary(const engine::SampleRequest& request, const engine::SampleResult& result) {
  // A prompt is read before the first byte is drawn; its time is told apart, so that the rate is the
  // generation's.
  std::string after_prompt;
  if (!request.prompt.empty()) {
    char text[96];
    std::snprintf(text, sizeof text, " after reading a %zu-byte prompt in %.1f s", request.prompt.size(),
                  result.prompt_seconds);
    after_prompt = text;
  }
  std::fprintf(stderr, "%s%lld bytes generated in %.1f s (%.0f tok/s)%s, seed %llu, on %s\n",
               result.cancelled ? "stopped: " : "", static_cast<long long>(result.generated_bytes),
               result.seconds - result.prompt_seconds, result.tokens_per_second, after_prompt.c_str(),
               static_cast<unsigned long long>(result.seed), result.device.c_str());
}

}  // namespace

int run_sample_command(SampleCommandOptions& o) {
  engine::SampleRequest request = checked_request(o);
  engine::ModelBundle bundle = engine::load_checkpoint(engine::resolve_checkpoint(o.model));
  bundle.model->eval();
  // The model's own defaults (config.json "sampling") where an option was left out.
  request.settings = o.sampling.over(bundle.sampling);
  SampleOrigin origin;
  if (o.kind == "image") {
    prepare_image(o, bundle, request, origin);
  } else if (o.kind == "audio") {
    prepare_audio(o, bundle, request, origin);
  } else {
    prepare_text(o, bundle, request, origin);
  }
  // Every output is checked before generating, so a clash shows now rather than after a long run.
  const engine::Overwrite overwrite = o.force ? engine::Overwrite::Replace : engine::Overwrite::Refuse;
  for (int i = 1; i <= o.count; ++i) {
    engine::check_export_target(engine::numbered_path(o.out, i, static_cast<int>(o.count)), overwrite);
  }
  // Said once everything is checked, so that a refused command still gets its one line.
  if (!o.quiet && !engine::sampling_to_json(bundle.sampling).empty()) {
    std::fprintf(stderr, "sampling at %s (the model's defaults where no option was given)\n",
                 describe_sampling(request.settings).c_str());
  }
  // Until the files are written: a Ctrl-C while they are stops nothing half-way.
  const StopOnInterrupt stop("\nstx sample: stopping; what was generated will be written (Ctrl-C again to quit now)\n");
  const engine::SampleResult result = generate(o, bundle, request, stop.flag());
  // Stopped while the prompt was read, nothing was generated: no file would hold more than the prompt.
  if (result.cancelled && !request.prompt.empty() && result.generated_bytes == 0 &&
      result.prompt_seconds >= result.seconds) {
    std::fprintf(
        stderr,
        "stopped after %.1f s while reading the %zu-byte prompt: nothing generated, no file written\n",
        result.seconds, request.prompt.size());
    return kExitInterrupted;
  }
  write_samples(o, bundle, request, result, origin);
  print_summary(request, result);
  return result.cancelled ? kExitInterrupted : 0;
}

}  // namespace stx::cli
