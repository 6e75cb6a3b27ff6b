// The decode kernel (decode() in backends.h): one query against the KV cache, visiting A(i) run by run
// with an online softmax. Compiled per instruction set next to the attention kernels: include after
// cpu/cpu_kernels_impl.h, which brings simd.h and the shared constants into the namespace. The cache holds
// C = float or uint16_t (IEEE half bits, DecodeParams::cache_dtype); q, out and the arithmetic are fp32.
//
// decode_cache() splits the (sample, head) rows over threads; each row goes through one of two paths:
// decode_row_in_registers() when the head row is a few whole vectors (the usual head sizes), else
// decode_row_general(). HeadRows says where each key's two rows lie.

namespace stx::kernels::detail::STX_CPU_NAMESPACE {
namespace {

inline const float* widen(const float* row, float*, int64_t) { return row; }
inline const float* widen(const uint16_t* row, float* scratch, int64_t d) {
  from_half(row, scratch, d);
  return scratch;
}

// v with the lanes from n on set to 0.
inline vfloat first_lanes(vfloat v, int64_t n) {
  vint lane;
  for (int k = 0; k < W; ++k) lane[k] = k;
  return lane < static_cast<int32_t>(n) ? v : vfloat{};
}

// W keys' dot products, each still spread over a vector's lanes, to W scores: one transpose sums each vector
// into one lane, so no key pays a horizontal reduction. Scales by c, stores the W scores and returns the
// largest of the first n.
inline float dots_to_scores(vfloat* dots, float c, float* scores, int64_t n) {
  transpose_tile(dots);
  vfloat sum = dots[0];
#pragma GCC unroll 16
  for (int t = 1; t < W; ++t) sum += dots[t];
  sum *= c;
  store(scores, sum);
  float largest = kNegInf;
  for (int64_t t = 0; t < n; ++t) largest = std::max(largest, sum[t]);
  return largest;
}

// Asks for a cache row into L2 (a chunk's rows would crowd L1), each 64-byte line of it once. When a step
// reads more rows than stay in a core's L2 between steps (a batch, or one sample far into a long context:
// the strided set's rows are read once per l steps), they come from L3 or DRAM one after another as the dot
// products reach them; asking for each row as its key is gathered puts a chunk's misses in flight together.
// Below that size the rows are in L2 already and the requests only cost instructions (tokens/s in
// docs/benchmarks.md, "Prefetching the decode rows"), so decode_cache() turns it on by the step's size.
template <class C>
inline void prefetch_row(const C* row, int64_t row_bytes) {
  const auto first = reinterpret_cast<uintptr_t>(row) & ~uintptr_t{63};
  const auto last = reinterpret_cast<uintptr_t>(row) + static_cast<uintptr_t>(row_bytes) - 1;
  for (uintptr_t line = first; line <= last; line += 64) __builtin_prefetch(reinterpret_cast<const void*>(line), 0, 2);
}

// The cache's row of position j (cache_row() in stx/kernels/attention.h) and j mod columns, without a
// division per key when columns is a power of two (the usual strides): two divisions per key cost more than
// the key's dot product.
struct CacheColumns {
  int64_t columns = 0, capacity = 0, rows_per_column = 0;
  bool pow2 = false;
  int shift = 0;

  static CacheColumns of(const DecodeParams& p) {
    CacheColumns c;
    c.columns = p.cache_columns;
    c.capacity = p.capacity;
    c.pow2 = c.columns > 0 && (c.columns & (c.columns - 1)) == 0;
    c.shift = c.pow2 ? __builtin_ctzll(static_cast<unsigned long long>(c.columns)) : 0;
    c.rows_per_column = c.columns > 0 ? (c.capacity + c.columns - 1) / c.columns : 0;
    return c;
  }
  int64_t slot(int64_t j) const { return pow2 ? (j & (columns - 1)) : j % columns; }
  int64_t row(int64_t j) const {
    if (columns == 0) return j;
    return pow2 ? (j & (columns - 1)) * rows_per_column + (j >> shift) : cache_row(j, columns, capacity);
  }
};

// Where position j's key and value rows lie for one (sample, head) at step i: in the window of the last
// `columns` positions when the step has one, else in the cache. Held and passed by value: through a
// reference, each key reloaded every field (the row pointers are stored to memory the compiler could not
// tell apart from them).
template <class C>
struct HeadRows {
  const C* key_cache;
  const C* value_cache;
  const C* key_window;  // null: no window, every row is in the cache
  const C* value_window;
  int64_t key_stride, value_stride, key_window_stride, value_window_stride;
  int64_t window_after;  // positions after it lie in the window
  CacheColumns columns;

  // Sets the two rows of j; returns whether they come from the cache rather than the window (only those are
  // worth prefetching: the window is read every step and stays near the core).
  bool operator()(int64_t j, const C*& key, const C*& value) const {
    if (key_window != nullptr && j > window_after) {
      const int64_t slot = columns.slot(j);
      key = key_window + slot * key_window_stride;
      value = value_window + slot * value_window_stride;
      return false;
    }
    const int64_t row = columns.row(j);
    key = key_cache + row * key_stride;
    value = value_cache + row * value_stride;
    return true;
  }
  const C* key_at(int64_t j) const {
    return key_window && j > window_after ? key_window + columns.slot(j) * key_window_stride
                                          : key_cache + columns.row(j) * key_stride;
  }
  const C* value_at(int64_t j) const {
    return value_window && j > window_after ? value_window + columns.slot(j) * value_window_stride
                                            : value_cache + columns.row(j) * value_stride;
  }
};

template <class C>
HeadRows<C> head_rows(const DecodeParams& p, int64_t b, int64_t h, const CacheColumns& columns) {
  HeadRows<C> rows;
  rows.key_cache = static_cast<const C*>(p.k_cache) + b * p.k_stride.batch + h * p.k_stride.head;
  rows.value_cache = static_cast<const C*>(p.v_cache) + b * p.v_stride.batch + h * p.v_stride.head;
  rows.key_window = p.k_window ? static_cast<const C*>(p.k_window) + b * p.k_window_stride.batch +
                                     h * p.k_window_stride.head
                               : nullptr;
  rows.value_window = p.v_window ? static_cast<const C*>(p.v_window) + b * p.v_window_stride.batch +
                                       h * p.v_window_stride.head
                                 : nullptr;
  rows.key_stride = p.k_stride.seq;
  rows.value_stride = p.v_stride.seq;
  rows.key_window_stride = p.k_window_stride.seq;
  rows.value_window_stride = p.v_window_stride.seq;
  rows.window_after = p.position - columns.columns;
  rows.columns = columns;
  return rows;
}

// Keys j and j + step of one column of a column-ordered cache (DecodeParams::cache_columns = step) lie in
// consecutive rows: key_stride and value_stride elements apart. step 0: no such layout.
struct ColumnRows {
  int64_t step = 0;
  int64_t key_stride = 0, value_stride = 0;
};

// One (sample, head) of a decode step whose head row is NV whole vectors (head_dim 48 or 64 with AVX2,
// up to 128 with AVX-512), the usual case: q and the running output stay in registers for the whole of
// A(i), and each key's two cache rows are located once, as the key is gathered. The general path below
// keeps the output in memory and finds every row again for the dot product and for the value, and the
// store-to-load chain through the output bounded it at about 100 cycles a key; here a key costs its
// loads and FMAs (docs/benchmarks.md, "Decode kernel with the output in registers").
template <class C, int NV>
void decode_row_in_registers(const float* q, float c, const std::vector<KeyRun>& runs, const HeadRows<C> locate,
                             const ColumnRows run_rows, bool prefetch, int64_t row_bytes, float* out,
                             float* lse) {
  constexpr int64_t kChunk = 64;
  vfloat qv[NV], acc[NV];
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) {
    qv[v] = load(q + v * W);
    acc[v] = vfloat{};
  }
  const C* keys[kChunk];
  const C* values[kChunk];
  alignas(64) float scores[kChunk] = {};  // whole vectors are exponentiated, past `count` too
  float m = kNegInf, l = 0.0f;
  int64_t count = 0;
  auto flush = [&] {
    float chunk_max = kNegInf;
    for (int64_t t0 = 0; t0 < count; t0 += W) {
      const int64_t n = std::min<int64_t>(W, count - t0);
      vfloat dots[W];
#pragma GCC unroll 16
      for (int t = 0; t < W; ++t) {
        vfloat dot = vfloat{};
        if (t < n) {
          const C* k = keys[t0 + t];
#pragma GCC unroll 16
          for (int v = 0; v < NV; ++v) dot += qv[v] * load_row(k + v * W);
        }
        dots[t] = dot;
      }
      chunk_max = std::max(chunk_max, dots_to_scores(dots, c, scores + t0, n));
    }
    const float m_new = std::max(m, chunk_max);
    const float alpha = m == kNegInf ? 0.0f : std::exp2(m - m_new);
    l *= alpha;
    const vfloat alpha_v = splat(alpha);
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[v] *= alpha_v;
    // The weights' sum by vectors (lanes past `count` masked off), and the values into two sets of
    // accumulators, even and odd keys: one set made every key wait for the last key's FMA (4 cycles), and
    // the compiler stored the captured accumulators back to memory after every key. Local copies stay in
    // registers.
    vfloat weight_sum = vfloat{};
    for (int64_t t = 0; t < count; t += W) {
      const vfloat w = exp2v(load(scores + t) - m_new);
      store(scores + t, w);
      weight_sum += count - t >= W ? w : first_lanes(w, count - t);
    }
    vfloat even[NV], odd[NV];
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      even[v] = acc[v];
      odd[v] = vfloat{};
    }
    int64_t t = 0;
    for (; t + 1 < count; t += 2) {
      const vfloat w0 = splat(scores[t]), w1 = splat(scores[t + 1]);
      const C* v0 = values[t];
      const C* v1 = values[t + 1];
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) {
        even[v] += w0 * load_row(v0 + v * W);
        odd[v] += w1 * load_row(v1 + v * W);
      }
    }
    if (t < count) {
      const vfloat w0 = splat(scores[t]);
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) even[v] += w0 * load_row(values[t] + v * W);
    }
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[v] = even[v] + odd[v];
    l += reduce_sum(weight_sum);
    m = m_new;
    count = 0;
  };
  for (const KeyRun& run : runs) {
    const C* key;
    const C* value;
    if (run.step > 1 && run.step == run_rows.step &&
        locate(run.first + (run.count - 1) * run.step, key, value)) {
      // Every key of the run lies in the cache, in one column: consecutive rows, so no key is located.
      locate(run.first, key, value);
      for (int64_t t = 0; t < run.count; ++t, key += run_rows.key_stride, value += run_rows.value_stride) {
        keys[count] = key;
        values[count] = value;
        if (prefetch) {
          prefetch_row(key, row_bytes);
          prefetch_row(value, row_bytes);
        }
        if (++count == kChunk) flush();
      }
      continue;
    }
    for (int64_t t = 0, j = run.first; t < run.count; ++t, j += run.step) {
      // The window's rows (the band before i) are one contiguous run that stays near the core between
      // steps; the cache's are read once per l steps, from L3 or memory: only those are worth asking for.
      const bool from_cache = locate(j, keys[count], values[count]);
      if (prefetch && from_cache) {
        prefetch_row(keys[count], row_bytes);
        prefetch_row(values[count], row_bytes);
      }
      if (++count == kChunk) flush();
    }
  }
  if (count > 0) flush();
  // An empty attended set (fixed A2 alone, before the first summary cell) gives 0 and lse = -inf.
  const vfloat inv = splat(l > 0.0f ? 1.0f / l : 0.0f);
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) store(out + v * W, acc[v] * inv);
  if (lse) *lse = l > 0.0f ? kLn2 * (m + std::log2(l)) : kNegInf;
}


// Registers hold q and the output: 2 x 8 vectors of the 16 ymm registers with AVX2, fewer than a third of the
// zmm registers at 128 dimensions with AVX-512.
constexpr int64_t kMaxRegisterVectors = 8;

// decode_row_in_registers() for a head row of `vectors` whole vectors (1 .. kMaxRegisterVectors).
template <class C>
void decode_row_in_registers(int64_t vectors, const float* q, float c, const std::vector<KeyRun>& runs,
                             const HeadRows<C>& rows, const ColumnRows run_rows, bool prefetch,
                             int64_t row_bytes, float* out, float* lse) {
  auto decode = [&](auto nv) {
    decode_row_in_registers<C, decltype(nv)::value>(q, c, runs, rows, run_rows, prefetch, row_bytes, out, lse);
  };
  switch (vectors) {
    case 1: decode(std::integral_constant<int, 1>{}); break;
    case 2: decode(std::integral_constant<int, 2>{}); break;
    case 3: decode(std::integral_constant<int, 3>{}); break;
    case 4: decode(std::integral_constant<int, 4>{}); break;
    case 5: decode(std::integral_constant<int, 5>{}); break;
    case 6: decode(std::integral_constant<int, 6>{}); break;
    case 7: decode(std::integral_constant<int, 7>{}); break;
    default: decode(std::integral_constant<int, 8>{}); break;
  }
}

// One (sample, head) of the general path: any head_dim, the running output in memory. Keys go through the
// online softmax kChunk at a time, gathered across runs: the strided pattern's A2 is one run per key, and a
// chunk per run cost more than the keys themselves.
template <class C>
class GeneralRowDecoder {
 public:
  static constexpr int64_t kChunk = 64;

  explicit GeneralRowDecoder(int64_t head_dim)
      : D_(head_dim), acc_(static_cast<size_t>(round_up(head_dim, W))), widened_(static_cast<size_t>(head_dim)) {}

  void decode(const float* q, float c, const std::vector<KeyRun>& runs, const HeadRows<C>& rows, bool prefetch,
              int64_t row_bytes, float* out, float* lse) {
    std::fill(acc_.begin(), acc_.end(), 0.0f);
    m_ = kNegInf;
    l_ = 0.0f;
    count_ = 0;
    for (const KeyRun& run : runs) {
      for (int64_t t = 0, j = run.first; t < run.count; ++t, j += run.step) {
        if (prefetch) {
          prefetch_row(rows.key_at(j), row_bytes);
          prefetch_row(rows.value_at(j), row_bytes);
        }
        keys_[count_++] = j;
        if (count_ == kChunk) flush(q, c, rows);
      }
    }
    if (count_ > 0) flush(q, c, rows);
    // An empty attended set (fixed A2 alone, before the first summary cell) gives 0 and lse = -inf.
    const float inv = l_ > 0.0f ? 1.0f / l_ : 0.0f;
    for (int64_t d = 0; d < D_; ++d) out[d] = acc_[d] * inv;
    if (lse) *lse = l_ > 0.0f ? kLn2 * (m_ + std::log2(l_)) : kNegInf;
  }

 private:
  static constexpr bool kHalf = std::is_same_v<C, uint16_t>;

  // The gathered keys' scores (scale c, base 2) into scores_; returns the largest.
  float score_chunk(const float* q, float c, const HeadRows<C>& rows) {
    float chunk_max = kNegInf;
    if (D_ % W == 0) {
      // W keys at a time: their partial dot products as W vectors, summed by dots_to_scores().
      for (int64_t t0 = 0; t0 < count_; t0 += W) {
        const int64_t n = std::min<int64_t>(W, count_ - t0);
        vfloat dots[W];
#pragma GCC unroll 16
        for (int t = 0; t < W; ++t) {
          vfloat dot = vfloat{};
          if (t < n) {
            const C* k = rows.key_at(keys_[t0 + t]);
            for (int64_t d = 0; d < D_; d += W) dot += load(q + d) * load_row(k + d);
          }
          dots[t] = dot;
        }
        chunk_max = std::max(chunk_max, dots_to_scores(dots, c, scores_ + t0, n));
      }
      return chunk_max;
    }
    // A half row whose length is not whole vectors is widened first, so that its ragged end goes through
    // exactly the float path's arithmetic (the scalar tail would otherwise round differently).
    for (int64_t t = 0; t < count_; ++t) {
      const float* k = widen(rows.key_at(keys_[t]), widened_.data(), D_);
      vfloat dot = vfloat{};
      int64_t d = 0;
      for (; d + W <= D_; d += W) dot += load(q + d) * load(k + d);
      float s = reduce_sum(dot);
      for (; d < D_; ++d) s += q[d] * k[d];
      scores_[t] = s * c;
      chunk_max = std::max(chunk_max, scores_[t]);
    }
    return chunk_max;
  }

  // The online softmax over the gathered keys: rescale what came before to the new maximum, then add the
  // values weighted by their exponentiated scores.
  void flush(const float* q, float c, const HeadRows<C>& rows) {
    const float m_new = std::max(m_, score_chunk(q, c, rows));
    const float alpha = m_ == kNegInf ? 0.0f : std::exp2(m_ - m_new);
    l_ *= alpha;
    for (int64_t d = 0; d < D_; ++d) acc_[d] *= alpha;
    for (int64_t t = 0; t + W <= kChunk; t += W) store(scores_ + t, exp2v(load(scores_ + t) - m_new));
    float* acc = acc_.data();
    for (int64_t t = 0; t < count_; ++t) {
      const float w = scores_[t];
      l_ += w;
      if (kHalf && D_ % W == 0) {
        const C* v = rows.value_at(keys_[t]);
        for (int64_t d = 0; d < D_; d += W) store(acc + d, load(acc + d) + w * load_row(v + d));
        continue;
      }
      const float* v = widen(rows.value_at(keys_[t]), widened_.data(), D_);
      int64_t d = 0;
      for (; d + W <= D_; d += W) store(acc + d, load(acc + d) + w * load(v + d));
      for (; d < D_; ++d) acc[d] += w * v[d];
    }
    m_ = m_new;
    count_ = 0;
  }

  int64_t D_;
  std::vector<float> acc_;
  std::vector<float> widened_;
  int64_t keys_[kChunk];
  float scores_[kChunk] = {};  // whole vectors are exponentiated, past count_ too
  int64_t count_ = 0;
  float m_ = kNegInf, l_ = 0.0f;
};

template <class C>
void decode_cache(const DecodeParams& p) {
  const int64_t D = p.head_dim, i = p.position;
  const float c = p.scale * kLog2e;
  const int64_t work = p.batch * p.heads;
  const CacheColumns columns = CacheColumns::of(p);
  const bool in_registers = D % W == 0 && D / W <= kMaxRegisterVectors;
  const ColumnRows column_rows{columns.columns, p.k_stride.seq, p.v_stride.seq};
  // Prefetching pays once the step's rows outgrow L2 (see prefetch_row()).
  const int64_t row_bytes = D * static_cast<int64_t>(sizeof(C));
  const int64_t keys = attended_count(p.patterns[0], i);
  const bool prefetch = work * keys * 2 * row_bytes > (int64_t{256} << 10);
#pragma omp parallel if (work > 1 && work * keys * D > (1 << 16) && !omp_in_parallel())
  {
    std::vector<KeyRun> runs;
    GeneralRowDecoder<C> general(in_registers ? 0 : D);
#pragma omp for schedule(dynamic, 1)
    for (int64_t bh = 0; bh < work; ++bh) {
      const int64_t b = bh / p.heads, h = bh % p.heads;
      const float* q = static_cast<const float*>(p.q) + b * p.q_stride.batch + h * p.q_stride.head;
      float* out = static_cast<float*>(p.out) + b * p.out_stride.batch + h * p.out_stride.head;
      float* lse = p.lse ? p.lse + bh : nullptr;
      const HeadRows<C> rows = head_rows<C>(p, b, h, columns);
      attended_runs(p.patterns[h], i, runs);
      if (in_registers)
        decode_row_in_registers<C>(D / W, q, c, runs, rows, column_rows, prefetch, row_bytes, out, lse);
      else
        general.decode(q, c, runs, rows, prefetch, row_bytes, out, lse);
    }
  }
}

}  // namespace

void decode(const DecodeParams& p) {
  if (p.cache_dtype == DType::f16) return decode_cache<uint16_t>(p);
  decode_cache<float>(p);
}

}  // namespace stx::kernels::detail::STX_CPU_NAMESPACE
