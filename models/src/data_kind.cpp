#include "stx/models/data_kind.h"

namespace stx::models {

const char* to_string(DataKind kind) {
  switch (kind) {
    case DataKind::image: return "image";
    case DataKind::text: return "text";
    case DataKind::audio: return "audio";
  }
  return "?";
}

std::optional<DataKind> data_kind_named(std::string_view name) {
  for (const DataKind kind : {DataKind::image, DataKind::text, DataKind::audio}) {
    if (name == to_string(kind)) return kind;
  }
  return std::nullopt;
}

}  // namespace stx::models
