#include "cpu_decoder_impl.h"

#include <ATen/ATen.h>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "stx/kernels/activation.h"
#include "stx/kernels/attention.h"
#include "stx/kernels/small_linear.h"
#include "decoder_math.h"

namespace stx::models {
namespace {

using detail::layer_norm;
using detail::linear;


std::vector<float> to_floats(const at::Tensor& t) {
  const at::Tensor c = t.detach().to(at::kCPU, at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace

void IncrementalDecoder::Impl::FreeCache::operator()(unsigned char* p) const { std::free(p); }

IncrementalDecoder::Impl::CacheBuffer IncrementalDecoder::Impl::allocate_cache(size_t bytes) {
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t rounded = (std::max<size_t>(bytes, 1) + kHugePage - 1) / kHugePage * kHugePage;
  void* memory = std::aligned_alloc(kHugePage, rounded);
  if (memory == nullptr) throw std::bad_alloc();
  (void)madvise(memory, rounded, MADV_HUGEPAGE);  // a hint: without it, or where refused, 4 KiB pages work too
  return CacheBuffer(static_cast<unsigned char*>(memory));
}

int64_t IncrementalDecoder::Impl::row_bytes() const {
  return config_.head_dim() * static_cast<int64_t>(kernels::dtype_size(cache_dtype_));
}

void IncrementalDecoder::Impl::store_row(const float* src, unsigned char* row) const {
  if (cache_dtype_ == kernels::DType::f16) {
    kernels::convert_to_half(src, reinterpret_cast<uint16_t*>(row), config_.head_dim());
  } else {
    std::memcpy(row, src, sizeof(float) * static_cast<size_t>(config_.head_dim()));
  }
}

void IncrementalDecoder::Impl::load_row(const unsigned char* row, float* dst) const {
  if (cache_dtype_ == kernels::DType::f16) {
    kernels::convert_from_half(reinterpret_cast<const uint16_t*>(row), dst, config_.head_dim());
  } else {
    std::memcpy(dst, row, sizeof(float) * static_cast<size_t>(config_.head_dim()));
  }
}

IncrementalDecoder::Impl::Linear IncrementalDecoder::Impl::snapshot(const torch::nn::Linear& linear, bool half_when_exact) {
  Linear l;
  l.in = linear->weight.size(1);
  l.out = linear->weight.size(0);
  const std::vector<float> weight_t = to_floats(linear->weight.t());
  l.bias = to_floats(linear->bias);
  const auto count = static_cast<int64_t>(weight_t.size());
  const auto packed = static_cast<size_t>(kernels::packed_weight_elements(l.in, l.out));
  if (half_when_exact) {
    // Halves only when they hold every value exactly (compared as bits, so -0.0 and NaNs count too).
    std::vector<uint16_t> half(weight_t.size());
    std::vector<float> back(weight_t.size());
    kernels::convert_to_half(weight_t.data(), half.data(), count);
    kernels::convert_from_half(half.data(), back.data(), count);
    if (std::memcmp(back.data(), weight_t.data(), sizeof(float) * weight_t.size()) == 0) {
      l.weights_half.resize(packed);
      kernels::pack_weight_panels(half.data(), l.in, l.out, l.weights_half.data());
      return l;
    }
  }
  l.weights.resize(packed);
  kernels::pack_weight_panels(weight_t.data(), l.in, l.out, l.weights.data());
  return l;
}

int IncrementalDecoder::Impl::half_weight_matrices() const {
  int count = output_.weights_half.empty() ? 0 : 1;
  for (const Layer& l : layers_) {
    for (const Linear* m : {&l.qkv, &l.attention_out, &l.ff_in, &l.ff_out})
      count += m->weights_half.empty() ? 0 : 1;
  }
  return count;
}

IncrementalDecoder::Impl::Norm IncrementalDecoder::Impl::snapshot(const torch::nn::LayerNorm& norm) {
  return Norm{to_floats(norm->weight), to_floats(norm->bias)};
}

IncrementalDecoder::Impl::Impl(SparseTransformer& model, int64_t batch, int64_t capacity,
                                       kernels::DType cache_dtype, bool half_weights)
    : config_(model->config()),
      batch_(batch),
      capacity_(capacity == 0 ? model->config().context : capacity),
      cache_dtype_(cache_dtype) {
  if (batch < 1) throw std::invalid_argument("decoder: batch must be at least 1, got " + std::to_string(batch));
  if (cache_dtype != kernels::DType::f32 && cache_dtype != kernels::DType::f16) {
    throw std::invalid_argument(std::string("decoder: the KV cache holds float32 or float16, not ") +
                                kernels::to_string(cache_dtype));
  }
  if (capacity_ < 1 || capacity_ > config_.context) {
    throw std::invalid_argument("decoder: capacity must be in 1.." + std::to_string(config_.context) + ", got " +
                                std::to_string(capacity));
  }
  at::NoGradGuard no_grad;
  const int64_t d = config_.d_model;
  token_embedding_ = to_floats(model->token_embedding->weight);
  for (const auto& table : model->position_embeddings) position_tables_.push_back(to_floats(table->weight));
  for (int layer = 0; layer < config_.layers; ++layer) {
    const ResidualBlock& block = model->block_list[static_cast<size_t>(layer)];
    Layer l;
    l.norm_attention = snapshot(block->norm_attention);
    l.norm_ff = snapshot(block->norm_ff);
    l.qkv = snapshot(block->qkv, half_weights);
    l.attention_out = snapshot(block->attention_out, half_weights);
    l.ff_in = snapshot(block->ff_in, half_weights);
    l.ff_out = snapshot(block->ff_out, half_weights);
    l.patterns = block->patterns();
    // Strided heads read every l-th key before i: with the cache in column order those are contiguous.
    const bool all_strided = std::all_of(l.patterns.begin(), l.patterns.end(), [&](const kernels::HeadPattern& h) {
      return h.pattern == kernels::Pattern::strided && h.stride == l.patterns[0].stride;
    });
    l.cache_columns = all_strided && l.patterns[0].stride > 1 ? l.patterns[0].stride : 0;
    l.cache_rows = kernels::cache_rows(capacity_, l.cache_columns);
    const auto cache = static_cast<size_t>(batch_ * config_.heads * l.cache_rows * row_bytes());
    l.k_window.assign(static_cast<size_t>(batch_ * config_.heads * l.cache_columns * row_bytes()), 0);
    l.v_window.assign(l.k_window.size(), 0);
    l.k_cache = allocate_cache(cache);
    l.v_cache = allocate_cache(cache);
    layers_.push_back(std::move(l));
  }
  final_norm_ = snapshot(model->final_norm);
  output_ = snapshot(model->output, half_weights);
  const auto rows = static_cast<size_t>(batch_);
  h_.resize(rows * d);
  normed_.resize(rows * d);
  qkv_.resize(rows * 3 * d);
  attended_.resize(rows * d);
  a_.resize(rows * d);
  ff_hidden_.resize(rows * config_.d_ff);
  b_.resize(rows * d);
}

void IncrementalDecoder::Impl::embed(const int32_t* input_tokens, int64_t b0, int64_t b1) {
  const int64_t d = config_.d_model;
  std::vector<int64_t> coords = config_.position_coordinates(position_);
  for (int64_t b = b0; b < b1; ++b) {
    if (prefix_rows_ > 0) coords = config_.position_coordinates(position_ + b);
    float* h = h_.data() + b * d;
    const float* e = token_embedding_.data() + input_tokens[b] * d;
    for (int64_t i = 0; i < d; ++i) h[i] = e[i];
    for (size_t a = 0; a < position_tables_.size(); ++a) {
      const float* p = position_tables_[a].data() + coords[a] * d;
      for (int64_t i = 0; i < d; ++i) h[i] += p[i];
    }
  }
  if (added_embedding_) {
    for (int64_t b = b0; b < b1; ++b) {
      float* h = h_.data() + b * d;
      const float* add = added_embedding_ + b * d;
      for (int64_t i = 0; i < d; ++i) h[i] += add[i];
    }
  }
}

template <class Call>
void IncrementalDecoder::Impl::for_each_call(int64_t first, int64_t last, Call&& call) const {
  const int64_t heads = config_.heads;
  if (first % heads == 0 && last % heads == 0) {
    call(first, last);
    return;
  }
  for (int64_t p0 = first; p0 < last;) {
    const int64_t p1 = std::min(last, (p0 / heads + 1) * heads);  // the rest of p0's sample
    call(p0, p1);
    p0 = p1;
  }
}

kernels::DecodeParams IncrementalDecoder::Impl::decode_params(const Layer& layer, int64_t p0, int64_t p1,
                                                        int64_t position) const {
  const int64_t d = config_.d_model, heads = config_.heads, dh = config_.head_dim(), rb = row_bytes();
  const int64_t b0 = p0 / heads, h0 = p0 % heads;
  const bool whole_samples = h0 == 0 && p1 % heads == 0;
  const int64_t pair_rows = layer.cache_rows * rb, window_rows = layer.cache_columns * rb;
  // Every buffer is sample-major and head-minor, so whole samples or a sample's heads are an offset.
  kernels::DecodeParams p;
  p.q = qkv_.data() + b0 * 3 * d + h0 * dh;
  p.k_cache = layer.k_cache.get() + p0 * pair_rows;
  p.v_cache = layer.v_cache.get() + p0 * pair_rows;
  p.out = const_cast<float*>(attended_.data()) + b0 * d + h0 * dh;
  p.q_stride = kernels::Strides{3 * d, dh, 0};
  p.k_stride = p.v_stride = kernels::Strides::contiguous(heads, layer.cache_rows, dh);
  p.cache_columns = layer.cache_columns;
  if (layer.cache_columns > 0) {
    p.k_window = layer.k_window.data() + p0 * window_rows;
    p.v_window = layer.v_window.data() + p0 * window_rows;
    p.k_window_stride = p.v_window_stride = kernels::Strides::contiguous(heads, layer.cache_columns, dh);
  }
  p.out_stride = kernels::Strides{d, dh, 0};
  p.batch = whole_samples ? (p1 - p0) / heads : 1;
  p.heads = whole_samples ? heads : p1 - p0;
  p.head_dim = dh;
  p.capacity = capacity_;
  p.position = position;
  p.patterns = layer.patterns.data() + h0;
  p.cache_dtype = cache_dtype_;
  return p;
}

void IncrementalDecoder::Impl::attention(Layer& layer, int layer_index, int64_t first, int64_t last) {
  if (first >= last) return;  // a thread of a shared step with no pair of its own
  const int64_t d = config_.d_model, heads = config_.heads, dh = config_.head_dim();
  // qkv_ rows are [3, heads, head_dim]: append this position's keys and values to the caches.
  const int64_t rb = row_bytes(), row = kernels::cache_row(position_, layer.cache_columns, capacity_);
  for (int64_t bh = first; bh < last; ++bh) {
    const int64_t b = bh / heads, h = bh % heads;
    const int64_t at = (bh * layer.cache_rows + row) * rb;
    store_row(qkv_.data() + b * 3 * d + d + h * dh, layer.k_cache.get() + at);
    store_row(qkv_.data() + b * 3 * d + 2 * d + h * dh, layer.v_cache.get() + at);
    if (layer.cache_columns > 0) {
      const int64_t slot = (bh * layer.cache_columns + position_ % layer.cache_columns) * rb;
      std::memcpy(layer.k_window.data() + slot, layer.k_cache.get() + at, static_cast<size_t>(rb));
      std::memcpy(layer.v_window.data() + slot, layer.v_cache.get() + at, static_cast<size_t>(rb));
    }
  }
  const bool probing = layer_index == probe_.layer;
  for_each_call(first, last, [&](int64_t p0, int64_t p1) {
    kernels::DecodeParams p = decode_params(layer, p0, p1, position_);
    p.lse = probing ? probe_lse_.data() + p0 : nullptr;  // [batch, heads] contiguous: p0 onwards
    kernels::attention_decode(p);
  });
  if (probing) {
    for (int64_t bh = first; bh < last; ++bh) {
      const int64_t b = bh / heads;
      if (bh % heads != probe_.head) continue;
      std::memcpy(probe_q_.data() + b * dh, qkv_.data() + b * 3 * d + probe_.head * dh, sizeof(float) * dh);
    }
  }
}

void IncrementalDecoder::Impl::check_step(const int32_t* input_tokens, int64_t count) const {
  if (position_ >= capacity_) {
    throw std::out_of_range("decoder: position " + std::to_string(position_) + " is past the capacity of " +
                            std::to_string(capacity_));
  }
  for (int64_t b = 0; b < count; ++b) {
    if (input_tokens[b] < 0 || input_tokens[b] > 256) {
      throw std::invalid_argument("decoder: input token " + std::to_string(input_tokens[b]) + " is outside 0..256");
    }
  }
}

void IncrementalDecoder::Impl::step(const int32_t* input_tokens, float* logits) {
  check_step(input_tokens, batch_);
  share_common_prefix();
  // A batch of several row tiles per thread is split by samples: each thread runs the whole step for its
  // own samples, with one fork and join per step instead of one per kernel (about 25), no barrier between
  // the layers' kernels, and the norms and residual sums in parallel too. Each thread then reads all the
  // weights, from the shared L3; a smaller batch splits each kernel's columns or heads instead.
  // Every sample's arithmetic is the same either way, so the logits are bit-identical.
  // The thread count that has been fastest lately (thread_count_chooser.h): all cores on an idle machine,
  // fewer when other work keeps taking some of them.
  const bool nested = omp_in_parallel() != 0;
  const int cores = nested ? 1 : step_threads_.next(omp_get_max_threads());
  const auto start = std::chrono::steady_clock::now();
  const int threads = static_cast<int>(std::min<int64_t>(cores, batch_ / kRowsPerThread));
  if (threads <= 1 && cores > 1 && !omp_in_parallel()) {
    // Too few samples to split by samples: the threads share every kernel of the step in one region.
    prepare_shared_step(cores);
    std::exception_ptr error;
#pragma omp parallel num_threads(cores)
    step_shared(input_tokens, logits, batch_, omp_get_thread_num(), omp_get_num_threads(), error);
    if (error) std::rethrow_exception(error);
  } else if (threads > 1 && !omp_in_parallel()) {
    std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
#pragma omp parallel num_threads(threads)
    {
      const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
      try {
        step_samples(input_tokens, logits, batch_ * t / n, batch_ * (t + 1) / n);
      } catch (...) {  // an exception must not leave an OpenMP region
        errors[static_cast<size_t>(t)] = std::current_exception();
      }
    }
    for (const std::exception_ptr& error : errors) {
      if (error) std::rethrow_exception(error);
    }
  } else {
    // One thread: the kernels would otherwise start their own teams of every core.
    const int before = omp_get_max_threads();
    omp_set_num_threads(1);
    try {
      step_samples(input_tokens, logits, 0, batch_);
    } catch (...) {
      omp_set_num_threads(before);
      throw;
    }
    omp_set_num_threads(before);
  }
  if (!nested) step_threads_.record(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (probe_.on()) probe_position_ = position_;
  probe_of_prefix_ = false;
  ++position_;
}

void IncrementalDecoder::Impl::prepare_shared_step(int threads) {
  const auto parts = static_cast<size_t>(threads);
  if (normed_by_part_.size() < parts) normed_by_part_.resize(parts);
  for (std::vector<float>& normed : normed_by_part_) normed.resize(normed_.size());
  if (rows_ahead_by_part_.size() < parts) rows_ahead_by_part_.resize(parts);
  barrier_.reset();
}

void IncrementalDecoder::Impl::step_samples(const int32_t* input_tokens, float* logits, int64_t b0, int64_t b1) {
  const int64_t d = config_.d_model, rows = b1 - b0, ff = config_.d_ff;
  float* h = h_.data() + b0 * d;
  float* normed = normed_.data() + b0 * d;
  float* a = a_.data() + b0 * d;
  float* b = b_.data() + b0 * d;
  float* hidden = ff_hidden_.data() + b0 * ff;
  embed(input_tokens, b0, b1);
  for (size_t index = 0; index < layers_.size(); ++index) {
    Layer& layer = layers_[index];
    // a = attention(norm(h)); b = ff(norm(h + a)); h += a + b   (paper-notes.md, eqs 13-15)
    layer_norm(h, normed, rows, d, layer.norm_attention.gamma, layer.norm_attention.beta);
    linear(normed, rows, layer.qkv, qkv_.data() + b0 * 3 * d);
    attention(layer, static_cast<int>(index), b0 * config_.heads, b1 * config_.heads);
    linear(attended_.data() + b0 * d, rows, layer.attention_out, a);
    for (int64_t i = 0; i < rows * d; ++i) b[i] = h[i] + a[i];
    layer_norm(b, normed, rows, d, layer.norm_ff.gamma, layer.norm_ff.beta);
    linear(normed, rows, layer.ff_in, hidden);
    kernels::GeluParams g;
    g.x = hidden;
    g.out = hidden;  // elementwise, so in place is safe
    g.count = rows * ff;
    kernels::gelu_forward(g);
    linear(hidden, rows, layer.ff_out, b);
    for (int64_t i = 0; i < rows * d; ++i) h[i] += a[i] + b[i];
  }
  layer_norm(h, normed, rows, d, final_norm_.gamma, final_norm_.beta);
  linear(normed, rows, output_, logits + b0 * output_.out);
}

void IncrementalDecoder::Impl::rewind(int64_t position) {
  if (position < 0 || position > position_) {
    throw std::out_of_range("decoder: cannot rewind to " + std::to_string(position) + " from " +
                            std::to_string(position_));
  }
  share_common_prefix();
  // The window rows of positions before `position` may hold later positions now: refill them from the cache.
  for (Layer& layer : layers_)
    refill_window(layer, batch_ * config_.heads, position - layer.cache_columns, position);
  position_ = position;
  common_prefix_ = std::min(common_prefix_, position);
  shared_until_ = std::min(shared_until_, position);
  probe_position_ = -1;
}

void IncrementalDecoder::Impl::refill_window(Layer& layer, int64_t pairs, int64_t from, int64_t to) {
  const int64_t l = layer.cache_columns, rb = row_bytes();
  if (l == 0) return;
  for (int64_t bh = 0; bh < pairs; ++bh) {
    for (int64_t j = std::max<int64_t>(0, from); j < to; ++j) {
      const int64_t row = (bh * layer.cache_rows + kernels::cache_row(j, l, capacity_)) * rb;
      const int64_t slot = (bh * l + j % l) * rb;
      std::copy_n(layer.k_cache.get() + row, rb, layer.k_window.data() + slot);
      std::copy_n(layer.v_cache.get() + row, rb, layer.v_window.data() + slot);
    }
  }
}

void IncrementalDecoder::Impl::skip_to_for_timing(int64_t position) {
  if (position < position_ || position >= capacity_) {
    throw std::out_of_range("decoder: cannot skip to " + std::to_string(position) + " from " +
                            std::to_string(position_) + " with capacity " + std::to_string(capacity_));
  }
  share_common_prefix();
  // Every sample gets the same zeros: samples that were identical stay so, and a common prefix may follow.
  const bool identical = common_prefix_ == position_;
  // Zero bytes are 0.0 in both cache types.
  const int64_t heads = config_.heads, rb = row_bytes();
  for (Layer& layer : layers_) {
    for (int64_t bh = 0; bh < batch_ * heads; ++bh) {
      for (int64_t j = position_; j < position; ++j) {
        const int64_t row = kernels::cache_row(j, layer.cache_columns, capacity_);
        const auto at = static_cast<size_t>((bh * layer.cache_rows + row) * rb);
        std::fill_n(layer.k_cache.get() + at, rb, 0);
        std::fill_n(layer.v_cache.get() + at, rb, 0);
        if (layer.cache_columns > 0) {
          const auto slot = static_cast<size_t>((bh * layer.cache_columns + j % layer.cache_columns) * rb);
          std::fill_n(layer.k_window.data() + slot, rb, 0);
          std::fill_n(layer.v_window.data() + slot, rb, 0);
        }
      }
    }
  }
  position_ = position;
  if (identical) common_prefix_ = shared_until_ = position;
}

void IncrementalDecoder::Impl::set_probe(int layer, int head) {
  probe_.choose(config_, layer, head);
  probe_q_.assign(static_cast<size_t>(batch_ * config_.head_dim()), 0.0f);
  probe_lse_.assign(static_cast<size_t>(batch_ * config_.heads), 0.0f);
  probe_position_ = -1;
}

void IncrementalDecoder::Impl::probe(int64_t sample, std::vector<int64_t>& positions, std::vector<float>& weights) const {
  positions.clear();
  weights.clear();
  if (!probe_.on() || probe_position_ < 0 || sample < 0 || sample >= batch_) return;
  const Layer& layer = layers_[static_cast<size_t>(probe_.layer)];
  const int64_t dh = config_.head_dim();
  // A common prefix's step computed sample 0 alone, and the others may not have its rows yet: what each
  // would have attended is sample 0's.
  if (probe_of_prefix_) sample = 0;
  positions = kernels::attended_set(layer.patterns[static_cast<size_t>(probe_.head)], probe_position_);
  // w_j = exp(scale q.k_j - lse): the decode kernel's own normaliser, so the weights are the ones it used.
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  const float lse = probe_lse_[static_cast<size_t>(sample * config_.heads + probe_.head)];
  const float* q = probe_q_.data() + sample * dh;
  const int64_t rb = row_bytes();
  const unsigned char* keys = layer.k_cache.get() + (sample * config_.heads + probe_.head) * layer.cache_rows * rb;
  std::vector<float> k(static_cast<size_t>(dh));
  weights.reserve(positions.size());
  for (int64_t j : positions) {
    float s = 0.0f;
    load_row(keys + kernels::cache_row(j, layer.cache_columns, capacity_) * rb, k.data());
    for (int64_t i = 0; i < dh; ++i) s += q[i] * k[i];
    weights.push_back(std::exp(scale * s - lse));
  }
}

// The public class: the state and the work are Impl's.
IncrementalDecoder::IncrementalDecoder(SparseTransformer& model, int64_t batch, int64_t capacity,
                                       kernels::DType cache_dtype, bool half_weights)
    : impl_(std::make_unique<Impl>(model, batch, capacity, cache_dtype, half_weights)) {}
IncrementalDecoder::~IncrementalDecoder() = default;
IncrementalDecoder::IncrementalDecoder(IncrementalDecoder&&) noexcept = default;
IncrementalDecoder& IncrementalDecoder::operator=(IncrementalDecoder&&) noexcept = default;

int64_t IncrementalDecoder::batch() const { return impl_->batch_; }
int64_t IncrementalDecoder::capacity() const { return impl_->capacity_; }
kernels::DType IncrementalDecoder::cache_dtype() const { return impl_->cache_dtype_; }
int IncrementalDecoder::half_weight_matrices() const { return impl_->half_weight_matrices(); }
const ModelConfig& IncrementalDecoder::config() const { return impl_->config_; }
int64_t IncrementalDecoder::position() const { return impl_->position_; }
namespace {
// add_to_next_embedding's rows serve one call, whichever way it ends.
struct AddedEmbeddingScope {
  const float*& rows;
  ~AddedEmbeddingScope() { rows = nullptr; }
};
}  // namespace

void IncrementalDecoder::step(const int32_t* input_tokens, float* logits) {
  const AddedEmbeddingScope scope{impl_->added_embedding_};
  impl_->step(input_tokens, logits);
}
void IncrementalDecoder::step_common_prefix(const int32_t* input_tokens, int64_t count) {
  const AddedEmbeddingScope scope{impl_->added_embedding_};
  impl_->step_common_prefix(input_tokens, count);
}
void IncrementalDecoder::add_to_next_embedding(const float* rows) { impl_->added_embedding_ = rows; }
void IncrementalDecoder::rewind(int64_t position) { impl_->rewind(position); }
void IncrementalDecoder::set_probe(int layer, int head) { impl_->set_probe(layer, head); }
void IncrementalDecoder::probe(int64_t sample, std::vector<int64_t>& positions, std::vector<float>& weights) const {
  impl_->probe(sample, positions, weights);
}
void skip_to_for_timing(IncrementalDecoder& decoder, int64_t position) { decoder.impl_->skip_to_for_timing(position); }

}  // namespace stx::models
