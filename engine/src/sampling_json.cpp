// config.json's "sampling" object: a model's own sampling defaults, read as untrusted input.
#include <cmath>
#include <string>

#include "stx/engine/checkpoint.h"
#include "stx/engine/error.h"

namespace stx::engine {
namespace {

double number_field(const nlohmann::json& j, const char* key, double fallback) {
  if (!j.contains(key)) return fallback;
  const nlohmann::json& v = j.at(key);
  if (!v.is_number()) throw Error(std::string("sampling.") + key + " must be a number, got " + v.dump());
  return v.get<double>();
}

}  // namespace

SamplingSettings sampling_from_json(const nlohmann::json& j) {
  SamplingSettings s;
  if (j.is_null()) return s;
  if (!j.is_object()) throw Error("sampling must be an object, got " + j.dump());
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    if (key != "temperature" && key != "top_k" && key != "top_p" && key != "min_p") {
      throw Error("sampling." + key + " is not a sampling setting (known: temperature, top_k, top_p, min_p)");
    }
  }
  s.temperature = number_field(j, "temperature", s.temperature);
  s.top_p = number_field(j, "top_p", s.top_p);
  s.min_p = number_field(j, "min_p", s.min_p);
  const double top_k = number_field(j, "top_k", s.top_k);
  if (top_k != std::floor(top_k) || top_k < 0 || top_k > 256) {
    throw Error("sampling.top_k must be a whole number in 0..256, got " + j.at("top_k").dump());
  }
  s.top_k = static_cast<int>(top_k);
  try {
    s.validate();
  } catch (const Error& e) {
    throw Error(std::string("sampling: ") + e.what());
  }
  return s;
}

nlohmann::json sampling_to_json(const SamplingSettings& s) {
  const SamplingSettings plain;
  nlohmann::json j = nlohmann::json::object();
  if (s.temperature != plain.temperature) j["temperature"] = s.temperature;
  if (s.top_k != plain.top_k) j["top_k"] = s.top_k;
  if (s.top_p != plain.top_p) j["top_p"] = s.top_p;
  if (s.min_p != plain.min_p) j["min_p"] = s.min_p;
  return j;
}

}  // namespace stx::engine
