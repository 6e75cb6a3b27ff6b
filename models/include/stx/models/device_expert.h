// The linear-prediction expert (linear_predictor.h) of a batch of samples on the decoder's device (two
// kernels a step, tensor operations for the fits), so that an audio model's decode step stays on the GPU:
// the expert's inputs to the network (its predicted byte and scale feature) and its log probabilities are
// made where the logits are, and nothing of a step waits for the host.
//
//   stx::models::DeviceLinearExpert expert(model, batch, capacity, device);
//   expert.load(expert_decoder);              // the host predictors' state after a prompt
//   expert.catch_up(position, first_inputs);  // once a block: the last input byte, a due refit
//   for (each step) {
//     expert.predict();                       // mean, scale and byte of the next sample
//     logits = network.step_on_device(inputs, expert.embedding_rows());
//     inputs = draw_bytes(logits, u, rule, expert.log_probs(), ...);  // mixes in the expert's log p
//     expert.push(inputs);                    // the drawn bytes into the history
//   }
//
// The same arithmetic as LinearPredictor in double precision, per sample (a step is two kernels of ours,
// kernels::linear_expert_predict and linear_expert_push): the prediction from the last
// fit's coefficients over the last `order` amplitudes, the scale from the last scale_window absolute errors,
// the byte's Laplace mass over its mu-law bin with the floor. The fits come every refit_interval bytes as
// there, over the same window with the same level guard and ridge, solved by LibTorch's Cholesky (a fit
// that breaks down keeps the previous coefficients, as there); their normal equations are summed afresh
// rather than kept up to date, so the coefficients agree with the host's to rounding, not bit for bit.
//
// Like TorchDecoder::step_on_device, predict() and push() read and move a count kept on the device, so a
// block of steps can be captured as a CUDA graph. The fits are host-driven (catch_up(), between blocks):
// a block must not cross a refit point except at its end (refit_due_within()).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "stx/kernels/linear_expert.h"
#include "stx/models/linear_predictor.h"
#include "stx/models/sparse_transformer.h"

namespace stx::models {

class ExpertDecoder;

class DeviceLinearExpert {
 public:
  // `model` has an expert (ModelConfig::expert); its expert weights are copied to `device`.
  DeviceLinearExpert(SparseTransformer& model, int64_t batch, int64_t capacity, const at::Device& device);

  // Every sample's state from `decoder`'s host predictors and byte history: what they read so far, their
  // last fit, their errors and their prediction of the next byte. The host predictors are not advanced
  // by what follows on the device.
  void load(const ExpertDecoder& decoder);
  // Bytes read (the host's count; the device keeps its own, equal between blocks).
  int64_t count() const { return count_; }
  // For benchmarks that time steps at a late position: every sample has read `bytes` ([0, count)), the
  // fit over their last window made, its errors unknown (zero). Not a state generation reaches.
  void fill_for_timing(const uint8_t* bytes, int64_t count);

  // Before a block of steps from `position`: reads the input byte of that position (first_inputs [batch]
  // int64 on the device) when it is not read yet, then makes the fit that is due at this count, if any.
  void catch_up(int64_t position, const at::Tensor& first_inputs);
  // Whether a block of `steps` steps from count() would cross a refit point before its end.
  bool refit_due_within(int64_t steps) const;
  // The most steps a block from `position` may take without crossing a refit point before its end.
  int64_t steps_before_refit(int64_t position) const;

  // The prediction of the next byte (at the device's count): mean, scale, byte, feature, log probabilities.
  void predict();
  // What the expert adds to the network's embedding for the predicted byte: [batch, d] float32.
  at::Tensor embedding_rows() const;
  // lambda * network_logits + w * log p_expert: [batch, 256] float32 (draw_bytes forms it in its kernel).
  at::Tensor mix(const at::Tensor& network_logits) const;
  const at::Tensor& network_weight() const { return network_weight_; }  // lambda, [1] float32
  const at::Tensor& expert_weight() const { return expert_weight_; }    // w, [1] float32
  // Reads the drawn bytes ([batch] int64 on the device), the error of the prediction made for them into the
  // scale's window, and moves the count on by one.
  void push(const at::Tensor& bytes);

  // Keeping the host's count with the device's around a graph: prepare() sets the device's to count() (one
  // small launch, none when equal); a capture runs push()'s host side without its launches, so the caller
  // puts the host's count back with restore_count(); after a replay of k steps, replayed(k).
  void prepare();
  void restore_count(int64_t count);
  void replayed(int64_t steps) { count_ += steps; }

  // The last prediction, for tests: [batch] mean and scale (double), byte (int64), feature (float), and
  // [batch, 256] float log probabilities.
  const at::Tensor& mean() const { return mean_; }
  const at::Tensor& scale() const { return scale_; }
  const at::Tensor& predicted_byte() const { return predicted_; }
  const at::Tensor& scale_feature() const { return feature_; }
  const at::Tensor& log_probs() const { return log_probs_; }

 private:
  void refit();
  kernels::ExpertStepParams step_params();

  LinearExpertConfig config_;
  int64_t batch_ = 0, capacity_ = 0, d_ = 0;
  at::Device device_;
  at::TensorOptions doubles_;
  at::Tensor amplitude_table_;  // [256] double: each byte's amplitude (mulaw_amplitude_table)
  at::Tensor edges_;            // [257] double: the mu-law bin edges, +-inf at the ends
  at::Tensor half_widths_;      // [256] double: kScaleFloorBins x the width of bin clamp(b, 1, 254)
  at::Tensor byte_embedding_, scale_map_;      // [256, d], [d] float32
  at::Tensor network_weight_, expert_weight_;  // [1] float32
  // history_[b][order + t] is sample b's amplitude t (zeros before t = 0), [batch, order + capacity].
  at::Tensor history_;
  at::Tensor coefficients_;  // [batch, order]: a[k] multiplies the amplitude k + 1 back
  at::Tensor errors_;        // [batch, scale_window]: |error| of prediction t in slot t mod scale_window
  // The last prediction and its embedding rows, written in place by the kernels (a graph reads them there).
  at::Tensor mean_, scale_, predicted_, feature_, log_probs_, rows_;
  at::Tensor counts_on_device_;  // [batch] int64, all equal: each sample's own, so the kernels need no sync
  int64_t count_ = 0;
  int64_t fitted_at_ = -1;  // the count of the last fit
  bool count_stale_ = true;
};

}  // namespace stx::models
