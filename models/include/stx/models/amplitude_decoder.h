// Decoding a model with amplitude inputs (ModelConfig::amplitude_taps), on any device: the amplitudes of the
// last `taps` bytes before each position, mapped by the model's `amplitude` layer and added to that
// position's embedding, as SparseTransformer::forward adds them (amplitude_inputs). It wraps the network's
// decoder (IncrementalDecoder or TorchDecoder, which know nothing of these inputs) and hands it the rows
// through TokenDecoder::add_to_next_embedding, after any rows given to it by a decoder that wraps it in turn
// (the expert's). with_history_inputs() (token_decoder.h) builds it for such a model.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "stx/models/sparse_transformer.h"
#include "stx/models/token_decoder.h"

namespace stx::models {

class AmplitudeDecoder final : public WrappingDecoder {
 public:
  // `network` decodes `model` (whose config has amplitude taps) for the same batch; the amplitude layer's
  // weights are copied here.
  AmplitudeDecoder(SparseTransformer& model, std::unique_ptr<TokenDecoder> network);

  void step(const int32_t* input_tokens, float* logits) override;
  void step_common_prefix(const int32_t* input_tokens, int64_t count) override;
  // The inputs before `position` stay recorded: nothing to replay.
  void rewind(int64_t position) override { network_->rewind(position); }

 private:
  // Throws as the network would, before anything is recorded: `positions` from position() past the
  // capacity, or one of `count` tokens outside 0..256.
  void check(const int32_t* tokens, int64_t count, int64_t positions) const;
  // Row `row` of rows_: the amplitude layer over `sample`'s inputs at `position`, plus row `row` of the
  // wrapping decoder's `added` when it gave one.
  void fill_row(int64_t sample, int64_t row, int64_t position, const float* added);

  int64_t taps_ = 0, d_ = 0;
  std::vector<float> map_;         // [d, taps]: the amplitude layer's weight
  std::vector<uint16_t> tokens_;   // [batch, capacity]: each position's input token (256: the start)
  std::vector<float> rows_;        // what is added to the embeddings of the call under way
};

}  // namespace stx::models
