// Models for the front ends behind a torch-free interface: the studio includes this, never the model headers.
//
//   stx::engine::ModelSummary card = stx::engine::describe_model("runs/text");   // no weights read
//   stx::engine::LoadedModel model = stx::engine::LoadedModel::open("runs/text");
//   stx::engine::SampleResult out = model.sample(request, sink, &cancel);
//   stx::engine::AttentionProbe seen = model.inspect(out.samples[0], /*layer=*/1, /*head=*/0, /*position=*/300);
//
// A LoadedModel runs one job at a time; copies share the same weights.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stx/engine/events.h"
#include "stx/engine/sample_request.h"

namespace stx::engine {

// What a model card shows. Read from config.json, the header of model.safetensors, train_state.json and,
// when present, MODEL_CARD.md and held_out.json ({"bits_per_byte": x, ...}).
struct ModelSummary {
  std::filesystem::path folder;  // the checkpoint folder (a run folder resolves to its latest checkpoint)
  std::string name;
  std::string kind;              // "image" | "text" | "audio"
  int64_t context = 0, layers = 0, heads = 0, d_model = 0, d_ff = 0;
  std::string pattern;           // "dense" | "strided" | "fixed"
  std::string mode;              // "interleaved" | "merged" | "multihead"
  int64_t stride = 0, summary = 0;
  int64_t image_height = 0, image_width = 0, image_channels = 0;  // images only
  int64_t parameters = 0;
  int64_t steps_trained = 0;     // 0 when the folder holds no train_state.json
  int64_t steps_planned = 0;     // the training recipe's total steps, 0 when unknown: a run stopped short of
                                 // it (steps_trained < steps_planned) can be resumed
  int64_t batch_trained = 0;     // the recipe's batch (sequences per step), 0 when unknown: where a fine-tune
                                 // starts, since the model's context was chosen to fit it
  // Bits/byte of these weights: the held-out figure when the folder has held_out.json (measured on every
  // held-out byte, e.g. by `stx-bench quality`), else the latest validation during training.
  std::optional<double> bits_per_byte;
  bool bits_per_byte_held_out = false;  // bits_per_byte came from held_out.json
  SamplingSettings sampling;     // config.json's "sampling": the settings a front end starts from
  std::string card;              // the text of MODEL_CARD.md beside config.json, when there is one
  std::string weights_hash;      // identifies the weights in exports; set by LoadedModel::open only
};

// `path`: a checkpoint folder or a run folder. Throws Error naming the file and the reason.
ModelSummary describe_model(const std::filesystem::path& path);

// held_out.json in a checkpoint folder: these weights' bits/byte on every byte of their held-out data, which a
// training-time validation of a few windows can miss by far (written beside each bundled model by its recipe).
// nullopt when there is none; throws Error naming the file when it is not an object with a finite,
// non-negative "bits_per_byte".
std::optional<double> read_held_out_bits_per_byte(const std::filesystem::path& folder);

class LoadedModel {
 public:
  // Loads the weights (checked as load_checkpoint checks them). Throws Error naming the file.
  static LoadedModel open(const std::filesystem::path& path);

  const ModelSummary& summary() const;
  const std::string& weights_hash() const;  // identifies the weights in exports
  std::string device() const;               // where sampling runs: "CPU"

  // See sampler.h: sample() and regenerate() with this model.
  SampleResult sample(const SampleRequest& request, const EventSink& sink, const std::atomic<bool>* cancel);
  SampleResult regenerate(const std::vector<uint8_t>& previous, int64_t keep, const SampleRequest& request,
                          const EventSink& sink, const std::atomic<bool>* cancel);

  // What head `head` of `layer` attended when `position` of `bytes` was generated: the model is run over
  // bytes[0, position) again (O(position) decode steps). Throws Error for a layer, head or position out of
  // range.
  AttentionProbe inspect(const std::vector<uint8_t>& bytes, int layer, int head, int64_t position) const;

  // The positions head `head` of `layer` may read at `position`, from the pattern alone (ascending).
  std::vector<int64_t> pattern_positions(int layer, int head, int64_t position) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace stx::engine
