// Incremental decoding on the CPU: one new token per sample per step, each layer attending only to A(i)
// through the decode kernel over a KV cache, with no LibTorch op on the hot path.
//
//   stx::models::IncrementalDecoder decoder(model, /*batch=*/4);
//   std::vector<float> logits(4 * 256);
//   std::vector<int32_t> inputs(4, 256);          // position 0 sees the start token
//   decoder.step(inputs.data(), logits.data());   // logits of byte 0, for each of the 4 samples
//
// Step i takes the input token of position i (byte i-1, or 256 at i = 0) and returns the logits of byte i,
// exactly what SparseTransformer::forward gives at row i. It decodes the network alone: a model's inputs
// from its decoded history (amplitude taps, the linear-prediction expert) come from the decoders
// with_history_inputs() wraps it in (token_decoder.h); make_decoder() builds the whole. The decoder
// copies the weights once (fp32, or
// fp16 where that is exact; transposed for the matrix-vector products), so later changes to the model do
// not reach it.
//
// Why not eager LibTorch: a step is about 15 small ops per layer, and at about 5 us of dispatch each the
// ops alone would cap a small audio model far below real time (12,000 samples/s). Here the cost of a step
// is the weights read once for the whole batch, plus |A(i)| keys per head, whatever i is.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "stx/kernels/attention.h"
#include "stx/models/model_config.h"
#include "stx/models/sparse_transformer.h"
#include "stx/models/token_decoder.h"

namespace stx::models {

class IncrementalDecoder final : public TokenDecoder {
 public:
  // Snapshot of `model`'s weights (any device or dtype; copied to fp32 CPU). batch >= 1 samples are
  // decoded together, each with its own KV cache of `capacity` positions (0: the model's context). The
  // caches take 2 * layers * batch * capacity * d_model values, touched only as positions are reached.
  // cache_dtype f32 keeps the keys and values exactly; f16 stores them as IEEE halves: half the memory,
  // and late steps of a batch, which are bound by reading the cache, run faster. Logits then differ from
  // the forward pass by the rounding of k and v (about 1e-3 relative), the same for every run.
  //
  // A weight matrix whose every value is an IEEE half already (a model exported with fp16 weights, as the
  // bundled ones are) is kept as halves and widened in registers: one sample's step is bound by reading the
  // weights, and halves are half the bytes. Widening is exact, so the logits are bit for bit those of
  // float32 weights; half_weights false keeps float32 anyway. Any other matrix stays float32.
  IncrementalDecoder(SparseTransformer& model, int64_t batch, int64_t capacity = 0,
                     kernels::DType cache_dtype = kernels::DType::f32, bool half_weights = true);

  ~IncrementalDecoder() override;
  IncrementalDecoder(IncrementalDecoder&&) noexcept;
  IncrementalDecoder& operator=(IncrementalDecoder&&) noexcept;

  int64_t batch() const override;
  int64_t capacity() const override;
  kernels::DType cache_dtype() const;
  // Weight matrices kept as halves (see the constructor), of the layers' and the output's.
  int half_weight_matrices() const;
  const ModelConfig& config() const;
  // The position the next step() decodes.
  int64_t position() const override;

  // input_tokens: [batch] values in 0..256; logits: [batch, 256], written. Throws std::out_of_range past
  // the capacity and std::invalid_argument for a token outside 0..256.
  void step(const int32_t* input_tokens, float* logits) override;

  // Steps every sample through `count` positions of a prefix they all share (a prompt): input_tokens[k] is
  // the input of position position() + k for every sample. Sample 0 alone computes them, all `count` at
  // once (each product takes the positions as rows, so a weight is read once for all of them), and the
  // others get its keys and values: bit for bit what their own steps would give, at a fraction of a
  // batch's cost per byte. No logits: a given prefix is not drawn. Only while every step so far was one of
  // these, so that the samples are still identical: std::logic_error otherwise. std::out_of_range past the
  // capacity, std::invalid_argument for a token outside 0..256 or a count below 1.
  void step_common_prefix(const int32_t* input_tokens, int64_t count) override;

  void add_to_next_embedding(const float* rows) override;
  // Forgets positions >= position (0 <= position <= position()); the next step decodes `position`.
  void rewind(int64_t position) override;

  // Records, at every later step, what head `head` of block `layer` attended for each sample; -1 turns it
  // off. While off, nothing is computed or copied for it.
  void set_probe(int layer, int head) override;
  // After a step with the probe on: the positions attended at the last step by `sample` (ascending,
  // exactly A(i) of that head's pattern) and their softmax weights (summing to 1).
  void probe(int64_t sample, std::vector<int64_t>& positions, std::vector<float>& weights) const override;

 private:
  friend void skip_to_for_timing(IncrementalDecoder& decoder, int64_t position);
  struct Impl;  // models/src/decoder_impl.h
  std::unique_ptr<Impl> impl_;
};

// Jumps `decoder` forward to `position` (position() <= position < capacity) without computing the positions
// in between: their cached keys and values are set to zero. Only for benchmarks and tests that measure the
// cost of a step at a late position (a step costs the same whatever the cache holds); samples from there
// are meaningless. Samples still identical (only common prefixes so far) stay so: a common prefix may follow.
void skip_to_for_timing(IncrementalDecoder& decoder, int64_t position);

}  // namespace stx::models
