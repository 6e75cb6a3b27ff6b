// Decoding a model that has the linear-prediction expert (ModelConfig::expert), on any device. It wraps the
// network's own decoder (IncrementalDecoder on the CPU, TorchDecoder on CUDA), runs one LinearPredictor per
// sample on the host over the bytes decoded so far, hands the network the expert's inputs (its predicted
// byte and scale, through TokenDecoder::add_to_next_embedding) and returns the product of experts,
// lambda * network + w * log p_expert: the logits SparseTransformer::forward gives at the same position.
// make_decoder() builds it for such a model; the network's decoders know nothing of the expert.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "stx/models/linear_predictor.h"
#include "stx/models/sparse_transformer.h"
#include "stx/models/token_decoder.h"

namespace stx::models {

class ExpertDecoder final : public WrappingDecoder {
 public:
  // `network` decodes `model` (whose config has an expert) for the same batch; its weights for the expert
  // are copied here.
  ExpertDecoder(SparseTransformer& model, std::unique_ptr<TokenDecoder> network);

  void step(const int32_t* input_tokens, float* logits) override;
  void step_common_prefix(const int32_t* input_tokens, int64_t count) override;
  // Rewinds the network, and replays each sample's bytes before `position` through a fresh predictor.
  void rewind(int64_t position) override;
  // The predictor of `sample`, as of the next step (for tests and the level guard's report).
  const LinearPredictor& predictor(int64_t sample) const;
  // The bytes `sample`'s predictor has read, predictor(sample).count() of them (for DeviceLinearExpert).
  const uint8_t* history(int64_t sample) const;
  friend void warm_for_timing(ExpertDecoder& decoder, const uint8_t* bytes, int64_t count);

 private:
  // Reads position() + k's input token into `sample`'s predictor (the start token adds nothing), and
  // writes what the expert adds to that position's embedding into row `row` of rows_, plus row `row` of
  // `added` (what a decoder wrapping this one asked to add; null: nothing).
  void read_input(int64_t sample, int64_t row, int32_t token, int64_t position, const float* added);
  // After a common prefix, the other samples' predictors become sample 0's before their first own step.
  void share_prefix();

  LinearExpertConfig config_;
  int64_t d_ = 0;
  std::vector<float> byte_embedding_;  // [256, d]
  std::vector<float> scale_map_;       // [d]
  float network_weight_ = 0, expert_weight_ = 1;
  std::vector<LinearPredictor> predictors_;
  std::vector<uint8_t> history_;  // [batch, capacity]: byte i of each sample, for rewind
  std::vector<float> rows_;       // what the expert adds to the embeddings of the call under way
  std::vector<float> log_probs_;  // [batch, 256]
  bool prefix_unshared_ = false;
  int64_t common_prefix_ = 0;  // positions [0, common_prefix_) came from step_common_prefix
};

// Reads `count` bytes into every sample's predictor, outside any step: for benchmarks that time steps at a
// late position (after skip_to_for_timing on the network's decoder), so that each timed step pays for the
// expert's fits over a whole window. The samples' expert inputs no longer match their network's history.
void warm_for_timing(ExpertDecoder& decoder, const uint8_t* bytes, int64_t count);

}  // namespace stx::models
