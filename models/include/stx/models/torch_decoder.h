// Incremental decoding through the model's own LibTorch modules, on the model's device: the GPU path of
// generation. Each step runs every block's own layer (ResidualBlockImpl::branch, the forward's) on the new
// position only, with an attention that writes its keys and values into a KV cache on the device and attends
// through our decode kernel (kernels::attention_decode, CUDA on a CUDA device), which touches only A(i). The logits come back
// to the host in one small copy per step.
//
//   stx::models::TorchDecoder decoder(model, /*batch=*/4, /*capacity=*/0, stx::kernels::DType::f32,
//                                     at::Device(at::kCUDA, 0));
//   decoder.step(inputs.data(), logits.data());
//
// With cache_dtype f32 the logits are those of SparseTransformer::forward in fp32 at the same position, to
// float rounding (the products are computed one row at a time instead of over the whole sequence). With f16
// the keys, values and queries of the attention are rounded to half (CUDA's decode kernel takes the
// queries in the caches' type): about 1e-3 relative. A model whose config asks for bf16 or fp16 is still
// decoded in fp32 (no autocast), so its logits differ from its autocast forward by that rounding.
//
// It also runs on the CPU, where it is a slow but plain check of IncrementalDecoder and of itself: the
// tests compare both with the forward pass there. Like IncrementalDecoder it decodes the network alone;
// with_history_inputs() (token_decoder.h) adds the model's inputs from its decoded history.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "stx/kernels/attention.h"
#include "stx/kernels/fused_linear.h"
#include "stx/kernels/pattern.h"
#include "stx/models/sparse_transformer.h"
#include "stx/models/token_decoder.h"

namespace stx::models {

class TorchDecoder final : public TokenDecoder {
 public:
  // Copies `model`'s weights to `device` (the caller's model is not moved or changed). capacity 0 is the
  // model's context. The caches take 2 * layers * batch * capacity * d_model values of cache_dtype on the
  // device, allocated at once.
  TorchDecoder(SparseTransformer& model, int64_t batch, int64_t capacity, kernels::DType cache_dtype,
               const at::Device& device);

  int64_t batch() const override { return batch_; }
  int64_t capacity() const override { return capacity_; }
  int64_t position() const override { return position_; }
  const at::Device& device() const { return device_; }

  void step(const int32_t* input_tokens, float* logits) override;
  // The same step with its input and output left on the device (the start of a device-resident decode
  // loop): input_tokens [batch] int64 on device() -> logits [batch, 256] float32 on device(), with no copy to
  // or from the host and no synchronisation. The tokens are not range-checked (that would read them on the
  // host): they are bytes the caller drew, or 256. Rows given to add_to_next_embedding are refused
  // (std::logic_error): the history inputs' decoders work on the host; `added` ([batch, d] float32 on the
  // device, or undefined) is added to the embedding instead.
  //
  // Each layer is four kernels::fused_linear calls (norm, projection, GELU and residual fused) around the
  // attention, and the head one: its logits are step()'s to float rounding (about 1e-6; STX_FUSED_DECODE=0
  // in the environment runs the model's own modules instead, for comparisons).
  //
  // Its position lives on the device too (device_position()): the embedding looks it up there, the caches
  // are written at it and the attention kernel reads it there, and the step ends by adding one to it. So
  // every launch of a step is the same at every position, and k steps captured as a CUDA graph replay as
  // the next k steps (decode_graph.h). The host keeps its own count as well (position()).
  at::Tensor step_on_device(const at::Tensor& input_tokens, const at::Tensor& added = at::Tensor());
  // The position step_on_device reads: [1] int64 on device(). prepare_device_steps() makes it position()
  // (one small launch; none when it already is), and must come before a graph's capture or replay;
  // after a replay of k steps, replayed(k) moves position() on by k, as the k steps did the device's.
  const at::Tensor& device_position() const { return position_on_device_; }
  void prepare_device_steps();
  void replayed(int64_t steps);
  void step_common_prefix(const int32_t* input_tokens, int64_t count) override;
  void add_to_next_embedding(const float* rows) override { added_embedding_ = rows; }
  void rewind(int64_t position) override;
  void set_probe(int layer, int head) override;
  void probe(int64_t sample, std::vector<int64_t>& positions, std::vector<float>& weights) const override;

  // Jumps forward to `position` (position() <= position < capacity) without computing the positions between,
  // their cached keys and values left as they are: for benchmarks of a step's cost at a late position only
  // (as skip_to_for_timing does for the CPU decoder).
  void skip_to_for_timing(int64_t position);

 private:
  // Runs every block over h ([samples, rows, d]: rows new positions from position_ of `samples` samples,
  // all of the batch or sample 0 alone for a prefix), appending the keys and values to the caches;
  // returns the last hidden state.
  at::Tensor run_blocks(at::Tensor h, int64_t samples, int64_t rows);
  // step_on_device's blocks: h [batch, d] float32 through kernels::fused_linear (four a layer) and the
  // attention; returns the last hidden state [batch, d].
  at::Tensor run_blocks_fused(at::Tensor h);
  // x [rows, in] float32 contiguous through `norm` (or none), `linear`, the activation and + residual.
  at::Tensor fused_linear(const at::Tensor& x, const torch::nn::LayerNorm* norm,
                          const torch::nn::Linear& linear, kernels::Activation activation,
                          const at::Tensor& residual) const;
  // Layer `layer`'s attention for qkv [samples, rows, 3, heads, head_dim]: keys and values into the caches,
  // the attention over them, the probe; returns [samples, rows, d] float32.
  at::Tensor attend_cached(int layer, const at::Tensor& qkv, int64_t samples, int64_t rows);
  // Attends q ([samples, rows, heads, head_dim], rows at positions position_ .. position_ + rows - 1) over
  // layer `layer`'s caches into out (same shape and type); lse [samples, heads] of the last row, or undefined.
  void attend(int layer, const at::Tensor& q, const at::Tensor& out, const at::Tensor& lse, int64_t samples,
              int64_t rows) const;
  // Throws past the capacity.
  void check_position() const;
  at::Tensor input_tensor(const int32_t* tokens, int64_t samples, int64_t rows) const;
  // The embedding of `rows` input tokens of `samples` samples from position_ on ([samples, rows, d]), with
  // add_to_next_embedding's rows.
  at::Tensor embed(const int32_t* tokens, int64_t samples, int64_t rows);
  void check_tokens(const int32_t* tokens, int64_t count) const;

  SparseTransformer model_{nullptr};  // our own copy, on device_, in eval mode
  ModelConfig config_;
  at::Device device_;
  int64_t batch_ = 0, capacity_ = 0, position_ = 0;
  // Positions [0, common_prefix_) came from step_common_prefix and are the same for every sample.
  int64_t common_prefix_ = 0;
  kernels::DType cache_dtype_ = kernels::DType::f32;
  // The attention's queries and outputs: the caches' type on CUDA, fp32 on the CPU (its kernel widens halves).
  at::ScalarType attention_type_;
  std::vector<std::vector<kernels::HeadPattern>> patterns_;  // [layer][head]
  std::vector<at::Tensor> k_cache_, v_cache_;                // [layer]: [batch, heads, capacity, head_dim]
  const float* added_embedding_ = nullptr;  // add_to_next_embedding's rows for the next call, or null
  ProbedHead probe_;                        // set_probe's choice
  int64_t probe_position_ = -1;
  bool probe_of_prefix_ = false;    // the last probe was of a prefix: sample 0's, which every sample shares
  // [batch, head_dim] fp32, [batch] fp32 on the device, allocated by set_probe and written in place (rows
  // [0, samples) of the last call), so that a replayed graph leaves its probe where probe() reads it.
  at::Tensor probe_q_, probe_lse_;
  // step_on_device's position, and whether the host has moved position_ since the device's was last set.
  at::Tensor position_on_device_;
  bool device_position_stale_ = true;
  bool on_device_step_ = false;  // run_blocks is under step_on_device: the position is the device's
  bool fused_ = true;            // step_on_device through fused_linear (STX_FUSED_DECODE=0: the modules)
};

}  // namespace stx::models
