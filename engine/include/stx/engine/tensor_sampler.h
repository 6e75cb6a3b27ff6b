// pick_byte for a batch of samples on the logits' own device, as one kernel (kernels::draw_bytes, through
// models::draw_bytes): the sampler of a decode step that stays on the GPU (no copy of the logits to the
// host, no synchronisation), and on the CPU the same rule, which the tests hold to pick_byte.
//
//   at::Tensor bytes = stx::engine::pick_bytes(logits, settings, uniforms);   // [B] int64, on logits' device
//
// logits: [B, 256] floating point; uniforms: [B] in [0, 1), one per sample, on the same device (drawn on the
// host from each sample's own random stream and uploaded a block of steps at a time, so a seed gives the
// same draws on either device). Byte b of row i is the one pick_byte(logits[i], settings, uniforms[i]) picks:
// the same ranking (most likely first, ties in byte order), the same min-p floor, top-k and top-p cut and
// inverse-CDF walk, in double precision with the sums in the same order.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "stx/engine/sample_request.h"
#include "stx/models/captured_work.h"
#include "stx/models/device_expert.h"
#include "stx/models/torch_decoder.h"

namespace stx::engine {

at::Tensor pick_bytes(const at::Tensor& logits, const SamplingSettings& settings, const at::Tensor& uniforms);

// A block of steps drawn on the decoder's device: step k feeds the bytes drawn at step k - 1 (first_inputs
// [B] int64 for the first: each sample's last byte, or 256) and draws with uniforms[k] ([steps, B] on the
// device). Returns the drawn bytes [steps, B] int64 on the device: the caller reads a whole block back at
// once, where the host loop copies the logits down every step. The bytes are those of decoder.step() and
// pick_byte() with the same uniforms.
//
// With `expert` (a model with the linear-prediction expert), each step is also the expert's: its prediction
// added to the embedding, its log probabilities mixed into the logits, the drawn bytes read into it, as
// ExpertDecoder does on the host. The caller has run expert->catch_up() for the block, which must not cross
// a refit point before its end (DeviceLinearExpert::refit_due_within).
at::Tensor decode_steps_on_device(models::TorchDecoder& decoder, const at::Tensor& first_inputs,
                                  const SamplingSettings& settings, const at::Tensor& uniforms,
                                  models::DeviceLinearExpert* expert = nullptr);

// decode_steps_on_device block after block, full blocks of `block_steps` replayed from a CUDA graph where
// the device allows (models/captured_work.h): captured at the second full block, once an eager one has
// woken LibTorch's lazily made state, then replayed with each block's first inputs and uniforms copied
// into the graph's own buffers first. Shorter blocks, and every block where no graph can be made (the CPU,
// a LibTorch without CUDA, STX_CUDA_GRAPHS=0, a capture that failed), run eagerly: the same bytes either
// way, as the graph replays the very launches of the eager block.
class DeviceBlockDrawer {
 public:
  // With `expert`, the steps are also its steps (decode_steps_on_device); each draw() first runs its
  // catch_up(), and refuses (std::logic_error) a block that would cross a refit point before its end.
  // capture_graphs false: every block eagerly (a benchmark's comparison).
  DeviceBlockDrawer(models::TorchDecoder& decoder, const SamplingSettings& settings, int64_t block_steps,
                    models::DeviceLinearExpert* expert = nullptr, bool capture_graphs = true);

  // The steps of the next block from the decoder's position, drawing no further than position `end`: up to
  // the next multiple of block_steps (so that every full block is the graph's) and, with the expert, no
  // further than its next fit. 0 at `end`.
  int64_t next_block_steps(int64_t end) const;

  // decode_steps_on_device(decoder, first_inputs, settings, uniforms) with uniforms [n, B], n <= block_steps.
  // The result is valid until the next call (a replay writes the graph's own output buffer).
  at::Tensor draw(const at::Tensor& first_inputs, const at::Tensor& uniforms);

  // Whether full blocks replay a graph, and what it holds or why there is none: "a CUDA graph of 1,984
  // launches a block of 32 steps (62 a step)", or "not tried yet" / the capture's failure.
  bool graphed() const { return graph_.captured(); }
  // Whether a capture was tried (from the second full block on, unless capture_graphs was false).
  bool capture_tried() const { return capture_tried_ || !capture_graphs_; }
  std::string graph_status() const;
  // The graph's launches per step, or -1 without a graph or when unknown.
  double launches_per_step() const;

 private:
  models::TorchDecoder& decoder_;
  models::DeviceLinearExpert* expert_ = nullptr;
  SamplingSettings settings_;
  int64_t block_steps_ = 0;
  int64_t eager_full_blocks_ = 0;
  bool capture_graphs_ = true;
  bool capture_tried_ = false;
  models::CapturedWork graph_;
  at::Tensor first_, uniforms_, drawn_;  // the graph's buffers
};

}  // namespace stx::engine
