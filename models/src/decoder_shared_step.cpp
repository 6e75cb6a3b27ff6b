// IncrementalDecoder::step_shared: one decoder step of a small batch, run by every thread of one parallel
// region. A step of one sample is about 25 small kernels; forking and joining a team for each cost more
// than the arithmetic of many of them (a fifth of a step in OpenMP's barrier, in perf). Here the threads
// start once per step and meet at five barriers per layer, where a kernel needs all of the last one's
// output. Each thread takes whole register tiles of columns of each product and whole (sample, head)
// pairs of the attention, so every value is computed exactly as by one thread.
#include <omp.h>

#include <algorithm>
#include <exception>
#include <mutex>

#include "decoder_math.h"
#include "stx/kernels/activation.h"
#include "stx/kernels/small_linear.h"
#include "stx/models/decoder.h"

namespace stx::models {

void IncrementalDecoder::step_shared(const int32_t* input_tokens, float* logits, int64_t rows, int part,
                                     int parts, std::exception_ptr& error) {
  // A thread that failed keeps meeting the barriers (leaving would hang the others), but nobody works on.
  static std::mutex error_mutex;
  auto run = [&](auto&& work) {
    {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (error) return;
    }
    try {
      work();
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  const int64_t d = config_.d_model, ff = config_.d_ff, heads = config_.heads;
  float* normed = normed_by_part_[static_cast<size_t>(part)].data();
  // Columns of the d-wide products (attention_out, ff_out) this thread writes: the residual sums follow
  // them, so each thread adds only what it computed itself and no barrier is needed in between.
  const auto [c0, c1] = kernels::small_linear_columns(d, part, parts);
  const auto [f0, f1] = kernels::small_linear_columns(ff, part, parts);
  const int64_t pairs = rows * heads;
  const int64_t pair0 = pairs * part / parts, pair1 = pairs * (part + 1) / parts;
#pragma omp single
  run([&] { embed(input_tokens, 0, rows); });  // a barrier at its end: h is whole
  for (size_t index = 0; index < layers_.size(); ++index) {
    Layer& layer = layers_[index];
    // a = attention(norm(h)); b = ff(norm(h + a)); h += a + b   (paper-notes.md, eqs 13-15)
    run([&] {
      detail::layer_norm(h_.data(), normed, rows, d, layer.norm_attention.gamma, layer.norm_attention.beta);
      detail::linear(normed, rows, layer.qkv, qkv_.data(), part, parts);
    });
#pragma omp barrier
    if (prefix_rows_ > 0) {  // rows are positions: each attends to the keys of the rows before it
      run([&] { append_prefix_rows(layer, pair0, pair1); });
#pragma omp barrier
      run([&] { attend_prefix(layer, static_cast<int>(index), pair0, pair1); });
    } else {
      run([&] { attention(layer, static_cast<int>(index), pair0, pair1); });
    }
#pragma omp barrier
    run([&] {
      detail::linear(attended_.data(), rows, layer.attention_out, a_.data(), part, parts);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = r * d + c0; i < r * d + c1; ++i) b_[i] = h_[i] + a_[i];
      }
    });
#pragma omp barrier
    run([&] {
      detail::layer_norm(b_.data(), normed, rows, d, layer.norm_ff.gamma, layer.norm_ff.beta);
      detail::linear(normed, rows, layer.ff_in, ff_hidden_.data(), part, parts);
      for (int64_t r = 0; r < rows; ++r) {
        kernels::GeluParams g;
        g.x = g.out = ff_hidden_.data() + r * ff + f0;  // elementwise, so in place is safe
        g.count = f1 - f0;
        kernels::gelu_forward(g);
      }
    });
#pragma omp barrier
    run([&] {
      detail::linear(ff_hidden_.data(), rows, layer.ff_out, b_.data(), part, parts);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = r * d + c0; i < r * d + c1; ++i) h_[i] += a_[i] + b_[i];
      }
    });
#pragma omp barrier
  }
  if (logits == nullptr) return;  // a common prefix: nothing is drawn from it
  run([&] {
    detail::layer_norm(h_.data(), normed, rows, d, final_norm_.gamma, final_norm_.beta);
    detail::linear(normed, rows, output_, logits, part, parts);
  });
}

}  // namespace stx::models
