// IncrementalDecoder::Impl::step_shared: one decoder step of a small batch, run by every thread of one parallel
// region. A step of one sample is about 25 small kernels; forking and joining a team for each cost more
// than the arithmetic of many of them (a fifth of a step in OpenMP's barrier, in perf). Here the threads
// start once per step and meet at five barriers per layer, where a kernel needs all of the last one's
// output. Each thread takes whole register tiles of columns of each product and whole (sample, head)
// pairs of the attention, so every value is computed exactly as by one thread.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>

#include "decoder_math.h"
#include "stx/kernels/activation.h"
#include "stx/kernels/small_linear.h"
#include "cpu_decoder_impl.h"

namespace stx::models {

void IncrementalDecoder::Impl::step_shared(const int32_t* input_tokens, float* logits, int64_t rows, int part,
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
  // Where the threads meet, one that arrives early asks for the rows the next step will read from memory
  // (the strided columns, each read once per l steps), until everyone is in. Late in a long context those
  // reads are about a fifth of a step; asked for here, in time that was spent waiting, they come from L3
  // instead (docs/benchmarks.md, "The next step's columns asked for at the barriers").
  // Only once the keys and values written pass kRowsAheadFrom (8 MB): below that they stay in the last-level
  // cache anyway. (With an OpenMP barrier after a count of their own, the requests made image-small, whose
  // caches are a few MB, step 7-9% slower; the count is now the barrier, but there is still nothing to gain.)
  const int64_t cache_bytes =
      position_ * rows * heads * static_cast<int64_t>(layers_.size()) * 2 * row_bytes();
  const bool ask_ahead = prefix_rows_ == 0 && cache_bytes > kRowsAheadFrom;
  RowsAhead& ahead = rows_ahead_by_part_[static_cast<size_t>(part)];
  if (ask_ahead) run([&] { collect_rows_ahead(pair0, pair1, ahead); });
  int32_t barriers = 0;
  const int spins = StepBarrier::spins_for(parts);
  auto meet = [&] {
    barrier_.meet(parts * ++barriers, spins, [&] {
      if (!ask_ahead || ahead.run == ahead.lines.size()) return false;
      for (int k = 0; k < 8 && ahead.run < ahead.lines.size(); ++k) {  // a few lines between looks
        const auto [first, end] = ahead.lines[ahead.run];
        __builtin_prefetch(reinterpret_cast<const void*>(first + ahead.offset), 0, 2);
        ahead.offset += 64;
        if (first + ahead.offset >= end) {
          ++ahead.run;
          ahead.offset = 0;
        }
      }
      return true;
    });
  };
#pragma omp single
  run([&] { embed(input_tokens, 0, rows); });  // a barrier at its end: h is whole
  for (size_t index = 0; index < layers_.size(); ++index) {
    Layer& layer = layers_[index];
    // a = attention(norm(h)); b = ff(norm(h + a)); h += a + b   (paper-notes.md, eqs 13-15)
    run([&] {
      detail::layer_norm(h_.data(), normed, rows, d, layer.norm_attention.gamma, layer.norm_attention.beta);
      detail::linear(normed, rows, layer.qkv, qkv_.data(), part, parts);
    });
    meet();
    if (prefix_rows_ > 0) {  // rows are positions: each attends to the keys of the rows before it
      run([&] { append_prefix_rows(layer, pair0, pair1); });
      meet();
      run([&] { attend_prefix(layer, static_cast<int>(index), pair0, pair1); });
    } else {
      run([&] { attention(layer, static_cast<int>(index), pair0, pair1); });
    }
    meet();
    run([&] {
      detail::linear(attended_.data(), rows, layer.attention_out, a_.data(), part, parts);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = r * d + c0; i < r * d + c1; ++i) b_[i] = h_[i] + a_[i];
      }
    });
    meet();
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
    meet();
    run([&] {
      detail::linear(ff_hidden_.data(), rows, layer.ff_out, b_.data(), part, parts);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = r * d + c0; i < r * d + c1; ++i) h_[i] += a_[i] + b_[i];
      }
    });
    meet();
  }
  if (logits == nullptr) return;  // a common prefix: nothing is drawn from it
  run([&] {
    detail::layer_norm(h_.data(), normed, rows, d, final_norm_.gamma, final_norm_.beta);
    detail::linear(normed, rows, output_, logits, part, parts);
  });
}

void IncrementalDecoder::Impl::collect_rows_ahead(int64_t pair0, int64_t pair1, RowsAhead& ahead) const {
  ahead.lines.clear();
  ahead.run = 0;
  ahead.offset = 0;
  const int64_t next = position_ + 1, heads = config_.heads, rb = row_bytes();
  if (next >= capacity_) return;  // no next step
  for (const Layer& layer : layers_) {
    const int64_t l = layer.cache_columns;
    if (l == 0) continue;  // keys in natural order: no column runs
    for (int64_t pair = pair0; pair < pair1; ++pair) {
      kernels::attended_runs(layer.patterns[static_cast<size_t>(pair % heads)], next, ahead.scratch);
      for (const kernels::KeyRun& r : ahead.scratch) {
        // Runs of one column, wholly in the cache: the last l keys are read from the window instead.
        if (r.step != l || r.first + (r.count - 1) * l > next - l) continue;
        const int64_t at = (pair * layer.cache_rows + kernels::cache_row(r.first, l, capacity_)) * rb;
        for (const unsigned char* cache : {layer.k_cache.get(), layer.v_cache.get()}) {
          const auto first = reinterpret_cast<uintptr_t>(cache + at);
          ahead.lines.push_back({first & ~uintptr_t{63}, first + static_cast<uintptr_t>(r.count * rb)});
        }
      }
    }
  }
}

}  // namespace stx::models
