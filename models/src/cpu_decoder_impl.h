// The incremental decoder's state and machinery, behind stx/models/cpu_decoder.h: weights snapshots, KV caches,
// per-step scratch, the shared step's barrier and the thread-count choosers. The public class forwards to it.
#pragma once

#include <cstdint>
#include <exception>
#include <utility>
#include <vector>

#include "step_barrier.h"
#include "stx/kernels/attention.h"
#include "stx/kernels/pattern.h"
#include "stx/models/cpu_decoder.h"
#include "stx/models/model_config.h"
#include "stx/models/sparse_transformer.h"
#include "stx/models/thread_count_chooser.h"

namespace stx::models {

struct IncrementalDecoder::Impl {
  // What decoder.h documents; the public class forwards each call here.
  Impl(SparseTransformer& model, int64_t batch, int64_t capacity, kernels::DType cache_dtype, bool half_weights);

  int half_weight_matrices() const;

  void step(const int32_t* input_tokens, float* logits);
  void step_common_prefix(const int32_t* input_tokens, int64_t count);
  void rewind(int64_t position);
  void skip_to_for_timing(int64_t position);
  void set_probe(int layer, int head);
  void probe(int64_t sample, std::vector<int64_t>& positions, std::vector<float>& weights) const;

  struct Linear {
    // The transposed torch weight [in, out], packed in panels of 16 columns (kernels::pack_weight_panels).
    // One of the two is filled.
    std::vector<float> weights;
    std::vector<uint16_t> weights_half;
    std::vector<float> bias;      // [out]
    int64_t in = 0, out = 0;
  };
  struct Norm {
    std::vector<float> gamma, beta;
  };
  struct FreeCache {
    void operator()(unsigned char* p) const;
  };
  // Huge-page backed where the system allows: the strided pattern reads keys l rows apart, a page or more
  // each, and with 4 KiB pages nearly every key read was a TLB miss. Bytes: rows of fp32 or fp16 values.
  using CacheBuffer = std::unique_ptr<unsigned char[], FreeCache>;
  static CacheBuffer allocate_cache(size_t bytes);
  struct Layer {
    Norm norm_attention, norm_ff;
    Linear qkv, attention_out, ff_in, ff_out;
    std::vector<kernels::HeadPattern> patterns;
    int64_t cache_columns = 0;  // l when every head is strided with stride l: see DecodeParams::cache_columns
    int64_t cache_rows = 0;     // rows per (sample, head)
    CacheBuffer k_cache, v_cache;  // [batch, heads, cache_rows, head_dim], left uninitialised
    // With cache_columns = l: the last l keys and values again, in natural order (row j mod l), so the band
    // before i is contiguous as well as the columns. [batch, heads, l, head_dim].
    std::vector<unsigned char> k_window, v_window;
  };
  // Writes head_dim floats into a cache row, and reads one back, converting when the cache holds halves.
  void store_row(const float* src, unsigned char* row) const;
  void load_row(const unsigned char* row, float* dst) const;
  // Bytes of one (sample, head) row of head_dim values.
  int64_t row_bytes() const;

  // A common prefix's chunk, pairs [first, last) of (row, head) = (pair / heads, pair % heads), the row's
  // position position_ + row: its keys and values into sample 0's caches; its attention, once every
  // thread's rows are in.
  void append_prefix_rows(Layer& layer, int64_t first, int64_t last);
  void attend_prefix(const Layer& layer, int layer_index, int64_t first, int64_t last);
  // Copies positions [from, to) of `pairs` (sample, head) pairs' caches into their windows.
  void refill_window(Layer& layer, int64_t pairs, int64_t from, int64_t to);
  // Copies positions [shared_until_, common_prefix_) of sample 0's caches and its windows to the other
  // samples: before any step of their own, and now and then during a long prefix.
  void share_common_prefix();
  // Throws what step() documents for a step at position() with these tokens.
  void check_step(const int32_t* input_tokens, int64_t count) const;
  // Samples [b0, b1) of a step: step() runs it for the whole batch, or once per thread for a slice.
  void step_samples(const int32_t* input_tokens, float* logits, int64_t b0, int64_t b1);
  // A batch too small to split by samples, or a chunk of a common prefix (its `rows` are then positions
  // of sample 0, and logits is null): every thread of one parallel region runs this, taking part `part` of
  // `parts` of each kernel (columns of the products, (row, head) pairs of the attention), with a barrier
  // only where the next kernel needs all of the last one's output. The first exception of any thread
  // lands in `error`; the others then skip their work but still meet every barrier.
  void step_shared(const int32_t* input_tokens, float* logits, int64_t rows, int part, int parts,
                   std::exception_ptr& error);
  // Sizes step_shared's per-thread buffers for `threads` threads and resets its barrier count.
  void prepare_shared_step(int threads);
  // The cache rows that the next step of pairs [pair0, pair1) will read from memory: the strided columns
  // before the band, one contiguous run per (layer, pair) for keys and one for values. A thread of
  // step_shared asks for them while it waits at a barrier (decoder_shared_step.cpp).
  struct RowsAhead {
    std::vector<std::pair<uintptr_t, uintptr_t>> lines;  // [first, end): 64-byte aligned first line, end byte
    size_t run = 0;  // the next line to ask for: lines[run].first + offset
    uintptr_t offset = 0;
    std::vector<kernels::KeyRun> scratch;
  };
  void collect_rows_ahead(int64_t pair0, int64_t pair1, RowsAhead& ahead) const;
  void embed(const int32_t* input_tokens, int64_t b0, int64_t b1);
  // Appends this position's keys and values of the (sample, head) pairs [first, last) (pair b * heads + h)
  // to the caches, then attends for them.
  void attention(Layer& layer, int layer_index, int64_t first, int64_t last);
  // The decode kernel's params for pairs [p0, p1) of `layer` at `position`: whole samples, or heads of one.
  kernels::DecodeParams decode_params(const Layer& layer, int64_t p0, int64_t p1, int64_t position) const;
  // Calls call(p0, p1) for pairs [first, last) cut into what one DecodeParams can describe.
  template <class Call>
  void for_each_call(int64_t first, int64_t last, Call&& call) const;
  static Linear snapshot(const torch::nn::Linear& linear, bool half_when_exact);
  static Norm snapshot(const torch::nn::LayerNorm& norm);

  // Bytes of keys and values written before step_shared asks for the next step's columns at its barriers.
  static constexpr int64_t kRowsAheadFrom = int64_t{8} << 20;
  // Samples per thread before a step is split by samples: two of small_linear's 4-row tiles.
  static constexpr int64_t kRowsPerThread = 8;

  ModelConfig config_;
  int64_t batch_ = 0, capacity_ = 0, position_ = 0;
  // Positions [0, common_prefix_) were stepped by step_common_prefix, so every sample is the same there;
  // the other samples' caches hold [0, shared_until_) of it, the rest is only in sample 0's.
  int64_t common_prefix_ = 0, shared_until_ = 0;
  bool probe_of_prefix_ = false;  // the probe was recorded by step_common_prefix: it is sample 0's
  // Within step_common_prefix: the chunk's positions, which are then the step's rows (all of sample 0).
  int64_t prefix_rows_ = 0;
  kernels::DType cache_dtype_ = kernels::DType::f32;
  std::vector<float> token_embedding_;                 // [257, d]
  // TokenDecoder::add_to_next_embedding's rows for the step under way, or null.
  const float* added_embedding_ = nullptr;
  std::vector<std::vector<float>> position_tables_;    // per axis: [size, d]
  std::vector<Layer> layers_;
  Norm final_norm_;
  Linear output_;
  // Per-step scratch, [batch, width].
  std::vector<float> h_, normed_, qkv_, attended_, a_, ff_hidden_, b_;
  // step_shared's normalised rows, one whole copy per thread: each thread normalises every row itself,
  // which costs less than a barrier.
  std::vector<std::vector<float>> normed_by_part_;
  std::vector<RowsAhead> rows_ahead_by_part_;
  // Where step_shared's threads meet (step_barrier.h).
  StepBarrier barrier_;
  // Thread counts of steps and of common-prefix chunks, chosen by timing them (thread_count_chooser.h).
  ThreadCountChooser step_threads_, prefix_threads_;
  ProbedHead probe_;  // set_probe's choice
  int64_t probe_position_ = -1;
  std::vector<float> probe_q_, probe_lse_;  // [batch, head_dim], [batch, heads]
};

}  // namespace stx::models
