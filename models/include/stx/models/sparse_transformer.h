// The Sparse Transformer of Child et al. (2019), eqs 9-15, over stx::sparse_attention.
//
//   auto model = stx::models::SparseTransformer(stx::models::preset("text-small"));
//   at::Tensor logits = model->forward(bytes);   // bytes: [B, T] int64 in 0..255, T <= context
//   // logits[:, i] is the distribution of byte i given bytes 0..i-1: the sequence is shifted right by one
//   // inside, behind a learned start token, so the loss is simply cross_entropy(logits, bytes).
//
// H_0 = embed(X); H_k = H_{k-1} + a(H) + b(H) with a(H) = dropout(attention(norm(H))) and
// b(H) = dropout(ff(norm(H + a(H)))); logits = norm(H_N) W_out. The position embedding is the sum of one
// learned table per axis of ModelConfig::position_axes(). Residual output projections start scaled by
// 1/sqrt(2N).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <functional>
#include <vector>

#include "stx/models/linear_expert.h"
#include "stx/models/model_config.h"

namespace stx::models {

// GELU as the paper writes it: x * sigmoid(1.702 x), through the fused kernel where it takes the tensor.
at::Tensor gelu_sigmoid(const at::Tensor& x);

class ResidualBlockImpl : public torch::nn::Module {
 public:
  ResidualBlockImpl(const ModelConfig& config, int layer);
  // h: [B, T, d_model] -> a(h) + b(h), the residual branch only (the caller adds h), with the block's
  // sparse attention over the T positions of h.
  at::Tensor branch(const at::Tensor& h);
  // The attention a branch runs: the projected queries, keys and values [B, T, 3, heads, head_dim] ->
  // the heads' outputs, concatenated, [B, T, d_model].
  using Attend = std::function<at::Tensor(const at::Tensor& qkv)>;
  // The same layer with another attention: the GPU decoder's over its KV caches. The layer (norms,
  // projections, GELU, dropout, residual order) is written here once for the forward and that decoder.
  at::Tensor branch(const at::Tensor& h, const Attend& attend);
  // The pattern of every head of this block.
  const std::vector<kernels::HeadPattern>& patterns() const { return patterns_; }

  torch::nn::LayerNorm norm_attention{nullptr}, norm_ff{nullptr};
  torch::nn::Linear qkv{nullptr}, attention_out{nullptr}, ff_in{nullptr}, ff_out{nullptr};
  torch::nn::Dropout dropout{nullptr};

 private:
  at::Tensor sparse_attention(const at::Tensor& qkv);
  ModelConfig config_;
  std::vector<kernels::HeadPattern> patterns_;
};
TORCH_MODULE(ResidualBlock);

class SparseTransformerImpl : public torch::nn::Module {
 public:
  explicit SparseTransformerImpl(const ModelConfig& config);

  // bytes: [B, T] integer tensor with values in 0..255 and 1 <= T <= context. Returns [B, T, 256] logits.
  // With ModelConfig::expert, the expert reads each row from its start (linear_expert_inputs with no history).
  at::Tensor forward(const at::Tensor& bytes);
  // The same with the expert's inputs given (ModelConfig::expert only): linear_expert_inputs of these bytes,
  // perhaps after a past the network does not see (a training crop's).
  at::Tensor forward(const at::Tensor& bytes, const ExpertInputs& expert);

  // The pieces the incremental sampler needs (engine/sampler): embedding of the input token at each
  // position (token 256 is the start token), the blocks, and the output head.
  at::Tensor embed(const at::Tensor& input_tokens, int64_t first_position);
  // The same at positions held in a tensor ([T] int64 on the tokens' device) rather than given by the host:
  // a decode step whose position lives on the device. The positions are not range-checked (that would read
  // them on the host); they must lie in [0, context).
  at::Tensor embed_at(const at::Tensor& input_tokens, const at::Tensor& positions);
  at::Tensor head(const at::Tensor& h);
  // ModelConfig::expert only: what the expert adds to the embedding ([..., d] for [...] bytes and features),
  // and the product of experts, lambda * network_logits + w * expert_log_probs.
  at::Tensor expert_embedding(const at::Tensor& predicted, const at::Tensor& scale_feature);
  at::Tensor mix_with_expert(const at::Tensor& network_logits, const at::Tensor& expert_log_probs);

  const ModelConfig& config() const { return config_; }
  int64_t parameter_count() const;

  torch::nn::Embedding token_embedding{nullptr};
  // ModelConfig::amplitude_taps > 0 only: [taps] -> [d_model], no bias, zero at first so that a model given
  // it starts out as the same function. Its input at position i: the amplitudes of bytes i - taps .. i - 1,
  // oldest first, zero before the start (amplitude_inputs).
  torch::nn::Linear amplitude{nullptr};
  // ModelConfig::expert only, all starting so that the model starts as the expert alone: the embedding of
  // the expert's predicted byte [256, d] and the map of its scale feature [1] -> [d] (both zero), lambda,
  // the network's weight in the product (zero), and w, the expert's (one); lambda and w are [1] each.
  torch::nn::Embedding expert_byte{nullptr};
  torch::nn::Linear expert_scale{nullptr};
  at::Tensor network_weight, expert_weight;
  std::vector<torch::nn::Embedding> position_embeddings;
  torch::nn::ModuleList blocks{nullptr};
  std::vector<ResidualBlock> block_list;
  torch::nn::LayerNorm final_norm{nullptr};
  torch::nn::Linear output{nullptr};

 private:
  void initialise();
  at::Tensor position_embedding(int64_t first_position, int64_t length, const at::Device& device);
  at::Tensor position_embedding_of(const at::Tensor& coordinates);  // [T, axes] -> [T, d]
  ModelConfig config_;
  // position_coordinates of 0..context-1, one column per axis: [context, axes] int64, built once.
  at::Tensor coordinates_;
};
TORCH_MODULE(SparseTransformer);

// The mu-law byte's amplitude in [-1, 1] (mulaw.h's table), as a float tensor of the bytes' shape.
at::Tensor mulaw_amplitudes(const at::Tensor& bytes);
// [B, T] bytes -> [B, T, taps]: row i holds the amplitudes of bytes i - taps .. i - 1 (zero before 0).
at::Tensor amplitude_inputs(const at::Tensor& bytes, int64_t taps);

// Total bits per byte of `logits` against `bytes`: sum of -log2 p(byte). Divide by the byte count.
double total_bits(const at::Tensor& logits, const at::Tensor& bytes);

}  // namespace stx::models
