// What generation needs of a decoder, whichever device it runs on: one new token per sample per step over a
// KV cache, a shared prompt read once, and one head's attention on request.
//
//   auto decoder = stx::models::make_decoder(model, /*batch=*/4, /*capacity=*/0, stx::kernels::DType::f16,
//                                            at::Device(at::kCUDA, 0));
//   decoder->step(inputs.data(), logits.data());   // logits: [batch, 256] on the host
//
// On the CPU it is IncrementalDecoder (decoder.h): the weights copied into our own kernels, no LibTorch op on
// the hot path. On CUDA it is TorchDecoder (torch_decoder.h): the model's own modules on the device and our
// CUDA decode kernel for the attention, with one copy of the logits to the host per step.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "stx/kernels/attention.h"
#include "stx/models/model_config.h"
#include "stx/models/sparse_transformer.h"

namespace stx::models {

class TokenDecoder {
 public:
  virtual ~TokenDecoder() = default;

  virtual int64_t batch() const = 0;
  virtual int64_t capacity() const = 0;
  // The position the next step() decodes.
  virtual int64_t position() const = 0;

  // input_tokens: [batch] values in 0..256 (256 is the start token); logits: [batch, 256] on the host,
  // written: the distribution of the byte at position(). Throws std::out_of_range past the capacity and
  // std::invalid_argument for a token outside 0..256.
  virtual void step(const int32_t* input_tokens, float* logits) = 0;
  // Steps every sample through `count` positions of a prefix they all share (input_tokens[k] is the input
  // of position position() + k), computed once and copied to every sample; no logits. Only while every
  // step so far was one of these: std::logic_error otherwise.
  virtual void step_common_prefix(const int32_t* input_tokens, int64_t count) = 0;
  // Inputs that are not tokens (the linear expert's, expert_decoder.h): `rows` is added to the embeddings of
  // the next step() ([batch, d_model]) or step_common_prefix() ([count, d_model]) only; nullptr adds
  // nothing. The caller keeps it alive until that call returns.
  virtual void add_to_next_embedding(const float* rows) = 0;
  // Forgets positions >= position; the next step decodes `position`.
  virtual void rewind(int64_t position) = 0;

  // Records what head `head` of block `layer` attends at every later step; -1 turns it off.
  virtual void set_probe(int layer, int head) = 0;
  // After a step with the probe on: the positions `sample` attended at the last step (ascending) and their
  // softmax weights.
  virtual void probe(int64_t sample, std::vector<int64_t>& positions, std::vector<float>& weights) const = 0;
};

// A decoder around another that adds to its inputs or its logits (the history inputs' decoders below):
// what it does not change (sizes, position, the probe) is the wrapped decoder's.
class WrappingDecoder : public TokenDecoder {
 public:
  int64_t batch() const override { return network_->batch(); }
  int64_t capacity() const override { return network_->capacity(); }
  int64_t position() const override { return network_->position(); }
  void set_probe(int layer, int head) override { network_->set_probe(layer, head); }
  void probe(int64_t sample, std::vector<int64_t>& positions, std::vector<float>& weights) const override {
    network_->probe(sample, positions, weights);
  }
  void add_to_next_embedding(const float* rows) override { added_ = rows; }
  // The decoder this one wraps.
  TokenDecoder& network() const { return *network_; }

 protected:
  explicit WrappingDecoder(std::unique_ptr<TokenDecoder> network) : network_(std::move(network)) {}
  // The rows a decoder wrapping this one gave for the next call, or null. That call takes them first thing
  // (std::exchange), so that they serve it alone, whichever way it ends.
  const float* take_added() { return std::exchange(added_, nullptr); }
  std::unique_ptr<TokenDecoder> network_;

 private:
  const float* added_ = nullptr;
};

// The head a decoder's set_probe chose; layer -1 while the probe is off.
struct ProbedHead {
  int layer = -1, head = 0;
  // set_probe's rule for every decoder: a negative layer turns the probe off; otherwise block `layer` of
  // `config` must have a head `head` (std::out_of_range, and the choice is kept).
  void choose(const ModelConfig& config, int layer, int head);
  bool on() const { return layer >= 0; }
};

// `network`, a decoder of `model`'s network alone (IncrementalDecoder or TorchDecoder), wrapped in one
// decoder per input the model reads from its decoded history, each the one owner of its input for every
// backend: AmplitudeDecoder (ModelConfig::amplitude_taps), then ExpertDecoder (ModelConfig::expert, which
// also mixes its output into the logits). A model with neither gets `network` back.
std::unique_ptr<TokenDecoder> with_history_inputs(SparseTransformer& model, std::unique_ptr<TokenDecoder> network);

// The decoder for `device`: IncrementalDecoder on the CPU, TorchDecoder on CUDA, with_history_inputs.
// capacity 0 is the model's context. cache_dtype f32 or f16 (see IncrementalDecoder and TorchDecoder for
// what each keeps exact).
std::unique_ptr<TokenDecoder> make_decoder(SparseTransformer& model, int64_t batch, int64_t capacity,
                                           kernels::DType cache_dtype, const at::Device& device);

}  // namespace stx::models
