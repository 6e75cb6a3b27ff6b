// IncrementalDecoder's common prefix: a prompt every sample shares, read once for all of them.
//
// Read step by step, a prompt costs a whole batch's step per byte: 16 samples read a 36,000-byte clip in
// 40-60 s. Here sample 0 alone reads it, with the prompt's positions as the rows of each product, so that
// each weight is read and widened once for a chunk of positions instead of once per position; then its
// keys and values are copied to the other samples. The arithmetic of every row is that of a step, so the
// samples continue bit for bit as if each had read the prompt itself.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "stx/kernels/attention.h"
#include "cpu_decoder_impl.h"

namespace stx::models {

void IncrementalDecoder::Impl::step_common_prefix(const int32_t* input_tokens, int64_t count) {
  if (count < 1) throw std::invalid_argument("decoder: a common prefix needs at least one position");
  if (position_ + count > capacity_) {
    throw std::out_of_range("decoder: positions " + std::to_string(position_) + ".." +
                            std::to_string(position_ + count - 1) + " run past the capacity of " +
                            std::to_string(capacity_));
  }
  check_step(input_tokens, count);
  if (position_ != common_prefix_) {
    throw std::logic_error("decoder: a common prefix must come first, but position " +
                           std::to_string(position_) + " follows steps of samples of their own");
  }
  const int64_t d = config_.d_model;
  if (static_cast<int64_t>(h_.size()) < count * d) {  // scratch rows: one per position of the chunk
    const auto rows = static_cast<size_t>(count);
    for (std::vector<float>* buffer : {&h_, &normed_, &attended_, &a_, &b_}) buffer->resize(rows * d);
    qkv_.resize(rows * 3 * d);
    ff_hidden_.resize(rows * config_.d_ff);
  }
  const bool nested = omp_in_parallel() != 0;
  const int cores = nested ? 1 : prefix_threads_.next(omp_get_max_threads());
  const auto start = std::chrono::steady_clock::now();
  prepare_shared_step(cores);
  std::exception_ptr error;
  prefix_rows_ = count;
  // Always the shared step: row r attends to the rows before it, which the other threads write.
#pragma omp parallel num_threads(cores)
  step_shared(input_tokens, nullptr, count, omp_get_thread_num(), omp_get_num_threads(), error);
  prefix_rows_ = 0;
  if (error) std::rethrow_exception(error);
  if (!nested) {  // per position: the last chunk of a prompt is shorter
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    prefix_threads_.record(seconds / static_cast<double>(count));
  }
  const int64_t end = position_ + count;
  // The rows went to the caches only: sample 0's window takes the chunk's positions that it keeps.
  for (Layer& layer : layers_) {
    refill_window(layer, config_.heads, std::max(position_, end - layer.cache_columns), end);
  }
  if (probe_.on()) probe_position_ = end - 1;
  probe_of_prefix_ = true;
  position_ = common_prefix_ = end;
  // Copied every 1/32 of the capacity (2,048 positions of 65,536), so that no single call, and no Stop
  // waiting on it, copies a whole long prompt to every sample.
  if (common_prefix_ - shared_until_ >= std::max<int64_t>(1, capacity_ / 32)) share_common_prefix();
}

void IncrementalDecoder::Impl::append_prefix_rows(Layer& layer, int64_t first, int64_t last) {
  const int64_t d = config_.d_model, heads = config_.heads, dh = config_.head_dim(), rb = row_bytes();
  for (int64_t pair = first; pair < last; ++pair) {  // pair r * heads + h: position position_ + r, head h
    const int64_t r = pair / heads, h = pair % heads;
    const int64_t at =
        (h * layer.cache_rows + kernels::cache_row(position_ + r, layer.cache_columns, capacity_)) * rb;
    store_row(qkv_.data() + r * 3 * d + d + h * dh, layer.k_cache.get() + at);
    store_row(qkv_.data() + r * 3 * d + 2 * d + h * dh, layer.v_cache.get() + at);
  }
}

void IncrementalDecoder::Impl::attend_prefix(const Layer& layer, int layer_index, int64_t first, int64_t last) {
  const int64_t d = config_.d_model, heads = config_.heads, dh = config_.head_dim();
  for (int64_t pair = first; pair < last;) {
    // The heads [h0, h1) of row r in one call: sample 0's caches at position position_ + r, read without the
    // window, which is refilled only once the whole chunk is in the caches.
    const int64_t r = pair / heads, h0 = pair % heads, h1 = std::min(heads, h0 + (last - pair));
    kernels::DecodeParams p = decode_params(layer, h0, h1, position_ + r);
    p.q = qkv_.data() + r * 3 * d + h0 * dh;
    p.out = attended_.data() + r * d + h0 * dh;
    p.k_window = p.v_window = nullptr;
    // The probe records the chunk's last position, the step a listener is shown.
    const bool probing =
        layer_index == probe_.layer && r == prefix_rows_ - 1 && probe_.head >= h0 && probe_.head < h1;
    p.lse = probing ? probe_lse_.data() + h0 : nullptr;
    kernels::attention_decode(p);
    if (probing) std::memcpy(probe_q_.data(), qkv_.data() + r * 3 * d + probe_.head * dh, sizeof(float) * dh);
    pair += h1 - h0;
  }
}

void IncrementalDecoder::Impl::share_common_prefix() {
  const int64_t from = shared_until_, to = common_prefix_;
  shared_until_ = to;
  if (from >= to || batch_ == 1) return;
  const int64_t heads = config_.heads, rb = row_bytes();
  // Whole runs of rows, not a row per step: in column order a position's row lies 24 KB or more from the
  // last one's, and copying rows step by step cost each its own miss (2.5 s of 7 for 16 samples' prompt).
  auto copy_runs = [&](const Layer& layer, unsigned char* cache, int64_t pair) {
    const int64_t l = layer.cache_columns;
    const unsigned char* source = cache + (pair % heads) * layer.cache_rows * rb;
    unsigned char* target = cache + pair * layer.cache_rows * rb;
    if (l == 0) {
      std::memcpy(target + from * rb, source + from * rb, static_cast<size_t>((to - from) * rb));
      return;
    }
    for (int64_t column = 0; column < std::min(l, to); ++column) {
      // Rows of the positions j = column + k l in [from, to): k from ceil((from - column) / l) on.
      const int64_t first = std::max<int64_t>(0, (from - column + l - 1) / l),
                    end = (to - column + l - 1) / l;
      if (first >= end) continue;
      const int64_t at = (kernels::cache_row(column, l, capacity_) + first) * rb;
      std::memcpy(target + at, source + at, static_cast<size_t>((end - first) * rb));
    }
  };
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
  for (int64_t b = 1; b < batch_; ++b) {
    for (Layer& layer : layers_) {
      for (int64_t h = 0; h < heads; ++h) {
        copy_runs(layer, layer.k_cache.get(), b * heads + h);
        copy_runs(layer, layer.v_cache.get(), b * heads + h);
      }
      const auto window = static_cast<size_t>(heads * layer.cache_columns * rb);
      std::memcpy(layer.k_window.data() + b * window, layer.k_window.data(), window);
      std::memcpy(layer.v_window.data() + b * window, layer.v_window.data(), window);
    }
  }
}

}  // namespace stx::models
