#include "image/image_export.h"

#include <QObject>

namespace stx::studio {

QString describe_prompt_rows(int rows, const QString& source) {
  if (rows <= 0) return QStringLiteral("unconditional");
  // Metadata stays in English whatever the interface language, as the CLI writes it.
  if (rows == 1) return QStringLiteral("row 0 of %1").arg(source);
  return QStringLiteral("rows 0-%1 of %2").arg(rows - 1).arg(source);
}

stx::engine::ExportInfo export_info(const stx::engine::ModelSummary& model, const SampleOrigin& origin) {
  // The studio's requests keep the default KV cache type.
  stx::engine::ExportInfo info = stx::engine::sample_export_info(
      model.name, model.weights_hash, origin.settings, stx::engine::SampleRequest{}.half_precision_cache, origin.seed,
      origin.sample - 1, origin.samples);
  info.prompt = origin.prompt.toStdString();
  if (origin.promptRows > 0) info.prompt_rows_kept = origin.promptRows;
  return info;
}

void write_sample_png(const std::filesystem::path& path, const Bytes& bytes,
                      const stx::engine::ModelSummary& model, const SampleOrigin& origin,
                      stx::engine::Overwrite overwrite) {
  const auto height = static_cast<int>(model.image_height), width = static_cast<int>(model.image_width);
  const auto channels = static_cast<int>(model.image_channels);
  Bytes pixels = bytes;
  pixels.resize(static_cast<size_t>(height) * width * channels, 0);
  stx::engine::write_png_export(path, pixels.data(), width, height, channels, export_info(model, origin),
                                overwrite);
}

}  // namespace stx::studio
