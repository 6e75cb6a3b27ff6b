// Single-query decode over a KV cache: out = softmax_{j in A(i)}(scale * q . k_j) v_j for i = position.
//
// One thread block per (head, batch). The attended set is enumerated in O(|A(i)|) as the same ranges as
// attended_ranges() in pattern.cpp, but indexed: key_at(t) gives the t-th attended key in O(1), so warps
// can take keys t = warp, warp + kDecodeWarps, ... Each warp runs its own online softmax (a lane holds
// D / 32 dims of q and of the output), and the warps' states are merged through shared memory at the end.
#include "cuda/cuda_common.cuh"

namespace stx::kernels::detail {
namespace {

constexpr int kDecodeWarps = 8;
constexpr int kDecodeThreads = kDecodeWarps * 32;
constexpr int kPatternsPerLaunch = 32;  // patterns travel by value in the kernel arguments

// The attended set of one head at position i as at most two pieces: a run of `count_a` keys described by
// (first_a, step_a, group, group_step) and a final contiguous range [first_b, first_b + count_b).
//   key t < count_a:  first_a + (t / group) * group_step + (t % group) * step_a
//   key t >= count_a: first_b + (t - count_a)
struct AttendedKeys {
  int64_t count_a = 0, first_a = 0, step_a = 1, group = 1, group_step = 0;
  int64_t count_b = 0, first_b = 0;

  __device__ int64_t count() const { return count_a + count_b; }
  __device__ int64_t key_at(int64_t t) const {
    if (t < count_a) return first_a + (t / group) * group_step + (t % group) * step_a;
    return first_b + (t - count_a);
  }
};

// Mirrors attended_ranges(): dense [0, i]; strided columns i mod l, i mod l + l, ... (before the band when
// A1 is also wanted), then the band [max(0, i - l), i]; fixed summary cells [b + lo, b + hi) of every
// earlier block b, then the own block (all of it up to i for A1, its summary cells up to i for A2 alone).
__device__ AttendedKeys attended_keys(const HeadPattern& p, int64_t i) {
  AttendedKeys keys;
  const bool want_a1 = p.subset != Subset::a2, want_a2 = p.subset != Subset::a1;
  if (p.pattern == Pattern::dense) {
    keys.first_b = 0;
    keys.count_b = i + 1;
    return keys;
  }
  const int64_t l = p.stride;
  if (p.pattern == Pattern::strided) {
    const int64_t band_first = i - l > 0 ? i - l : 0;
    const int64_t column = i % l;
    if (want_a2) {
      keys.first_a = column;
      keys.group_step = l;  // group = 1: key t = column + t * l
      // Without A1 every column up to i; with it only those strictly before the band.
      keys.count_a =
          want_a1 ? (band_first > column ? (band_first - column + l - 1) / l : 0) : (i - column) / l + 1;
    }
    if (want_a1) {
      keys.first_b = band_first;
      keys.count_b = i - band_first + 1;
    }
    return keys;
  }
  // fixed
  const int64_t own_first = (i / l) * l;
  const int64_t lo = p.stride - p.summary - p.summary_offset, hi = p.stride - p.summary_offset;
  if (want_a2) {
    keys.first_a = lo;
    keys.group = hi - lo;  // c cells of each earlier block, blocks l apart
    keys.group_step = l;
    keys.count_a = (i / l) * (hi - lo);
  }
  if (want_a1) {
    keys.first_b = own_first;
    keys.count_b = i - own_first + 1;
  } else if (want_a2 && own_first + lo <= i) {
    const int64_t last = own_first + hi - 1 < i ? own_first + hi - 1 : i;
    keys.first_b = own_first + lo;
    keys.count_b = last - keys.first_b + 1;
  }
  return keys;
}

struct PatternChunk {
  HeadPattern patterns[kPatternsPerLaunch];
};

template <class T>
struct DecodeArgs {
  const T* q;        // [batch, heads, dim]
  const T* k_cache;  // [batch, heads, capacity, dim]
  const T* v_cache;  // [batch, heads, capacity, dim]
  T* out;            // [batch, heads, dim]
  float* lse;        // [batch, heads] or null
  Strides q_stride, k_stride, v_stride, out_stride;
  int64_t heads, position, capacity;
  const int64_t* position_in_memory;  // or null: see DecodeParams::position_in_memory
  int64_t columns, rows_per_column;  // the cache's row order: see DecodeParams::cache_columns
  const T* k_window;                 // or null: see DecodeParams::k_window
  const T* v_window;
  Strides k_window_stride, v_window_stride;
  int dim;
  int first_head;  // the head of blockIdx.x == 0 in this launch
  float scale;
};

template <class T, int D>
__global__ void __launch_bounds__(kDecodeThreads) decode_kernel(DecodeArgs<T> a, PatternChunk chunk) {
  constexpr int PER_LANE = D / 32;  // lane holds dims lane, lane + 32, ...
  __shared__ float warp_max_s[kDecodeWarps], warp_sum_s[kDecodeWarps];
  __shared__ float warp_out[kDecodeWarps][D];

  const int64_t head = a.first_head + blockIdx.x, batch = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t position = a.position_in_memory != nullptr ? *a.position_in_memory : a.position;
  T* out = a.out + batch * a.out_stride.batch + head * a.out_stride.head;
  if (position < 0 || position >= a.capacity) {  // only a position read from memory can be out of range
    for (int d = threadIdx.x; d < a.dim; d += kDecodeThreads) store_float(out + d, NAN);
    if (a.lse != nullptr && threadIdx.x == 0) a.lse[batch * a.heads + head] = NAN;
    return;
  }
  const AttendedKeys keys = attended_keys(chunk.patterns[blockIdx.x], position);

  const T* q = a.q + batch * a.q_stride.batch + head * a.q_stride.head;
  const T* k = a.k_cache + batch * a.k_stride.batch + head * a.k_stride.head;
  const T* v = a.v_cache + batch * a.v_stride.batch + head * a.v_stride.head;
  const T* kw = a.k_window ? a.k_window + batch * a.k_window_stride.batch + head * a.k_window_stride.head : nullptr;
  const T* vw = a.v_window ? a.v_window + batch * a.v_window_stride.batch + head * a.v_window_stride.head : nullptr;
  float q_reg[PER_LANE], o[PER_LANE];
#pragma unroll
  for (int x = 0; x < PER_LANE; ++x) {
    const int d = lane + 32 * x;
    q_reg[x] = d < a.dim ? load_float(q + d) * a.scale : 0.0f;
    o[x] = 0.0f;
  }
  float running_max = -INFINITY, running_sum = 0.0f;
  const int64_t count = keys.count();
  for (int64_t t = warp; t < count; t += kDecodeWarps) {
    const int64_t key = keys.key_at(t);
    const bool in_window = kw != nullptr && key > position - a.columns;
    const T* kr = in_window ? kw + (key % a.columns) * a.k_window_stride.seq
                            : k + (a.columns > 0 ? (key % a.columns) * a.rows_per_column + key / a.columns : key) *
                                      a.k_stride.seq;
    const T* vr = in_window ? vw + (key % a.columns) * a.v_window_stride.seq
                            : v + (a.columns > 0 ? (key % a.columns) * a.rows_per_column + key / a.columns : key) *
                                      a.v_stride.seq;
    float dot = 0.0f;
#pragma unroll
    for (int x = 0; x < PER_LANE; ++x) {
      const int d = lane + 32 * x;
      if (d < a.dim) dot += q_reg[x] * load_float(kr + d);
    }
    const float s = warp_sum(dot);
    const float new_max = fmaxf(running_max, s);
    const float rescale = __expf(running_max - new_max);  // 0 on the first key: running_max = -inf
    const float weight = __expf(s - new_max);
    running_sum = running_sum * rescale + weight;
#pragma unroll
    for (int x = 0; x < PER_LANE; ++x) {
      const int d = lane + 32 * x;
      const float value = d < a.dim ? load_float(vr + d) : 0.0f;
      o[x] = o[x] * rescale + weight * value;
    }
    running_max = new_max;
  }
  if (lane == 0) {
    warp_max_s[warp] = running_max;
    warp_sum_s[warp] = running_sum;
  }
#pragma unroll
  for (int x = 0; x < PER_LANE; ++x) warp_out[warp][lane + 32 * x] = o[x];
  __syncthreads();

  // Merge the warps: weights exp(m_w - M); a warp that saw no key has m_w = -inf and weight 0.
  float total_max = -INFINITY;
  for (int w = 0; w < kDecodeWarps; ++w) total_max = fmaxf(total_max, warp_max_s[w]);
  float total_sum = 0.0f;
  if (total_max != -INFINITY)
    for (int w = 0; w < kDecodeWarps; ++w) total_sum += warp_sum_s[w] * __expf(warp_max_s[w] - total_max);
  for (int d = threadIdx.x; d < a.dim; d += kDecodeThreads) {
    float value = 0.0f;
    if (total_sum > 0.0f) {
      for (int w = 0; w < kDecodeWarps; ++w) value += warp_out[w][d] * __expf(warp_max_s[w] - total_max);
      value /= total_sum;
    }
    store_float(out + d, value);
  }
  if (a.lse != nullptr && threadIdx.x == 0)
    a.lse[batch * a.heads + head] = total_sum > 0.0f ? total_max + logf(total_sum) : -INFINITY;
}

template <class T, int D>
void launch_decode(const DecodeParams& p) {
  DecodeArgs<T> a{};
  a.q = static_cast<const T*>(p.q);
  a.k_cache = static_cast<const T*>(p.k_cache);
  a.v_cache = static_cast<const T*>(p.v_cache);
  a.out = static_cast<T*>(p.out);
  a.lse = p.lse;
  a.q_stride = p.q_stride;
  a.k_stride = p.k_stride;
  a.v_stride = p.v_stride;
  a.out_stride = p.out_stride;
  a.heads = p.heads;
  a.position = p.position;
  a.capacity = p.capacity;
  a.position_in_memory = p.position_in_memory;
  a.columns = p.cache_columns;
  a.k_window = static_cast<const T*>(p.k_window);
  a.v_window = static_cast<const T*>(p.v_window);
  a.k_window_stride = p.k_window_stride;
  a.v_window_stride = p.v_window_stride;
  a.rows_per_column = p.cache_columns > 0 ? (p.capacity + p.cache_columns - 1) / p.cache_columns : 0;
  a.dim = static_cast<int>(p.head_dim);
  a.scale = p.scale;
  const cudaStream_t stream = static_cast<cudaStream_t>(p.stream);
  for (int64_t first = 0; first < p.heads; first += kPatternsPerLaunch) {
    const int count =
        static_cast<int>(p.heads - first < kPatternsPerLaunch ? p.heads - first : kPatternsPerLaunch);
    PatternChunk chunk{};
    for (int h = 0; h < count; ++h) chunk.patterns[h] = p.patterns[first + h];
    a.first_head = static_cast<int>(first);
    decode_kernel<T, D><<<dim3(count, static_cast<unsigned>(p.batch)), kDecodeThreads, 0, stream>>>(a, chunk);
    STX_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace

void decode_cuda(const DecodeParams& p) {
  STX_KERNEL_CHECK(p.batch <= 65535,
                   "CUDA attention decode: expected batch <= 65535, got " + std::to_string(p.batch));
  dispatch_dtype(p.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    dispatch_head_dim(p.head_dim, [&](auto dim) { launch_decode<T, decltype(dim)::value>(p); });
  });
}

}  // namespace stx::kernels::detail
