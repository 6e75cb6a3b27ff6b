// ExportInfo as text: the PNG tEXt pairs and the WAV LIST/INFO strings carry the same fields.
#include <charconv>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "stx/engine/export/export.h"

namespace stx::engine {
namespace {

// Shortest round-trip form in the C locale: a GUI sets LC_NUMERIC from the user's locale, which would
// make printf write "0,9" and the metadata unreadable by parsers.
std::string number_text(double value) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

// Cut at kMaxPromptMetadataBytes without splitting a UTF-8 sequence; NULs would end the C strings that
// libsndfile takes, so they become spaces.
std::string prompt_text(const std::string& prompt) {
  std::string text = prompt;
  if (text.size() > kMaxPromptMetadataBytes) {
    size_t cut = kMaxPromptMetadataBytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text.resize(cut);
    text += "...";
  }
  for (char& c : text) {
    if (c == '\0') c = ' ';
  }
  return text;
}

// The fields that describe the sample itself, shared by the PNG pairs and the WAV comment.
PngText sample_fields(const ExportInfo& info) {
  PngText fields;
  if (!info.model_name.empty()) fields.emplace_back("Model", info.model_name);
  if (!info.model_hash.empty()) fields.emplace_back("Model hash", info.model_hash);
  fields.emplace_back("Seed", std::to_string(info.seed));
  if (info.sample_count > 1) {
    fields.emplace_back("Sample", std::to_string(info.sample_number) + " of " + std::to_string(info.sample_count));
  }
  fields.emplace_back("Temperature", number_text(info.temperature));
  fields.emplace_back("Top-k", std::to_string(info.top_k));
  fields.emplace_back("Top-p", number_text(info.top_p));
  if (info.min_p > 0) fields.emplace_back("Min-p", number_text(info.min_p));
  if (!info.kv_cache.empty()) fields.emplace_back("KV cache", info.kv_cache);
  if (info.prompt_rows_kept) fields.emplace_back("Prompt rows kept", std::to_string(*info.prompt_rows_kept));
  if (!info.prompt.empty()) fields.emplace_back("Prompt", prompt_text(info.prompt));
  return fields;
}

}  // namespace

PngText export_png_text(const ExportInfo& info) {
  PngText text;
  if (!info.software.empty()) text.emplace_back("Software", info.software);
  for (auto& field : sample_fields(info)) text.push_back(std::move(field));
  // "Creation Time" is the keyword the PNG specification registers for this.
  if (!info.created.empty()) text.emplace_back("Creation Time", info.created);
  return text;
}

WavInfoText export_wav_info(const ExportInfo& info) {
  WavInfoText text;
  const std::string model = info.model_name.empty() ? std::string("model") : info.model_name;
  text.title = model + " sample, seed " + std::to_string(info.seed);
  text.artist = info.model_name;
  text.software = info.software;
  for (const auto& [key, value] : sample_fields(info)) {
    if (!text.comment.empty()) text.comment += "; ";
    text.comment += key + ": " + value;
  }
  text.date = info.created;
  return text;
}

std::string utc_timestamp_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  return std::string(text, std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc));
}

ExportInfo sample_export_info(const std::string& model_name, const std::string& weights_hash,
                              const SamplingSettings& settings, bool half_precision_cache, uint64_t seed,
                              int index, int count) {
  ExportInfo info;
  info.model_name = model_name;
  info.model_hash = weights_hash;
  info.seed = seed;
  info.temperature = settings.temperature;
  info.top_k = settings.top_k;
  info.top_p = settings.top_p;
  info.min_p = settings.min_p;
  info.kv_cache = kv_cache_name(half_precision_cache);
  info.sample_number = index + 1;
  info.sample_count = count;
  info.created = utc_timestamp_now();
  return info;
}

}  // namespace stx::engine
