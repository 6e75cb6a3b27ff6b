// Block-sparse backward with recomputation (FlashAttention-2 style), no n x n matrix:
//   Delta_i = dO_i . O_i,   P_ij = exp(scale * q_i . k_j - lse_i)  (the forward's final lse)
//   dV_j += P_ij dO_i,  dS_ij = P_ij (dO_i . v_j - Delta_i),  dQ_i += scale dS_ij k_j,  dK_j += scale dS_ij q_i
//
// Three kernels, in stream order: Delta per row; dK/dV with one thread block per key tile, walking the
// query blocks of the transposed (column) lists; dQ with one thread block per query tile, walking the row
// lists. Each output row is owned by one thread block per launch, so nothing races and no atomics are
// needed. Parts run as successive launches (slots) whose contributions add up, in fp32 (the gradient
// itself for fp32, a scratch buffer for fp16/bf16) until a head's last part writes the dtype.
#include "cuda/attention_args.cuh"

namespace stx::kernels::detail {
namespace {

// Delta_i = sum_d dO_id O_id, one warp per row.
template <class T>
__global__ void delta_kernel(const T* out, const T* dout, Strides out_stride, Strides dout_stride,
                             int64_t heads, int64_t n, int dim, int64_t rows, float* delta) {
  const int64_t row = int64_t{blockIdx.x} * kWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const int64_t i = row % n, bh = row / n, h = bh % heads, b = bh / heads;
  const T* o = out + b * out_stride.batch + h * out_stride.head + i * out_stride.seq;
  const T* g = dout + b * dout_stride.batch + h * dout_stride.head + i * dout_stride.seq;
  float sum = 0.0f;
  for (int d = threadIdx.x % 32; d < dim; d += 32) sum += load_float(o + d) * load_float(g + d);
  sum = warp_sum(sum);
  if (threadIdx.x % 32 == 0) delta[row] = sum;
}

template <int D, int TILE>
constexpr size_t backward_shared_bytes() {
  return sizeof(float) * (4 * TILE * (D + 1) + 2 * TILE * (TILE + 1) + 2 * TILE);
}

template <class T, int D, int TILE>
__device__ void load_tile(float* tile, const T* head, int64_t seq_stride, int64_t lane, int64_t step,
                          int64_t first, int rows, int dim) {
  for (int e = threadIdx.x; e < TILE * D; e += kThreads) {
    const int r = e / D, d = e % D;
    float x = 0.0f;
    if (r < rows && d < dim) x = load_float(head + (lane + (first + r) * step) * seq_stride + d);
    tile[r * (D + 1) + d] = x;
  }
}

// P and dS of a query tile x key tile: p[r][c] and ds[r][c] for query r, key c; 0 where not attended.
template <int D, int TILE>
__device__ void probabilities(const float* q_tile, const float* k_tile, const float* v_tile,
                              const float* dout_tile, const float* lse, const float* delta, int q_rows,
                              int k_rows, int q_row0, int k_col0, const uint64_t* mask, int64_t mask_words,
                              int dim, float scale, float* p, float* ds) {
  constexpr int LD = D + 1, SD = TILE + 1;
  for (int e = threadIdx.x; e < TILE * TILE; e += kThreads) {
    const int r = e / TILE, c = e % TILE;
    float prob = 0.0f, dscore = 0.0f;
    if (r < q_rows && c < k_rows && lse[r] != -INFINITY &&
        mask_bit(mask, mask_words, q_row0 + r, k_col0 + c)) {
      float s = 0.0f, dp = 0.0f;
      for (int d = 0; d < dim; ++d) {
        s += q_tile[r * LD + d] * k_tile[c * LD + d];
        dp += dout_tile[r * LD + d] * v_tile[c * LD + d];
      }
      prob = __expf(s * scale - lse[r]);
      dscore = prob * (dp - delta[r]);
    }
    p[r * SD + c] = prob;
    ds[r * SD + c] = dscore;
  }
}

// dK, dV of one key tile: the thread block walks every query block that visits its key block.
template <class T, int D, int TILE>
__global__ void __launch_bounds__(kThreads) key_kernel(BackwardArgs<T> a) {
  constexpr int LD = D + 1, SD = TILE + 1;
  constexpr int PER_THREAD = TILE * D / kThreads;
  static_assert(TILE * D % kThreads == 0, "each thread owns a whole number of gradient elements");
  extern __shared__ float shared[];
  float* k_tile = shared;                 // [TILE][LD]
  float* v_tile = k_tile + TILE * LD;     // [TILE][LD]
  float* q_tile = v_tile + TILE * LD;     // [TILE][LD]
  float* dout_tile = q_tile + TILE * LD;  // [TILE][LD]
  float* p = dout_tile + TILE * LD;       // [TILE queries][SD keys]
  float* ds = p + TILE * SD;              // [TILE queries][SD keys]
  float* lse = ds + TILE * SD;            // [TILE]
  float* delta = lse + TILE;              // [TILE]

  const WorkItem item = a.items[blockIdx.x];
  const DevicePart part = a.parts[item.part];
  const int B = part.block;
  const int64_t batch = blockIdx.y, step = part.step, lane = item.lane;
  const int64_t length = lane_length(a.n, lane, step);
  const int tile_col = blockIdx.z * TILE;  // first key of this tile inside the key block
  const int64_t k_first = int64_t{item.block} * B + tile_col;
  if (k_first >= length) return;
  const int k_rows = rows_in_tile<TILE>(B - tile_col, length - k_first);

  const int64_t bh = batch * a.heads + item.head;
  const T* q = a.q + batch * a.q_stride.batch + item.head * a.q_stride.head;
  const T* dout = a.dout + batch * a.dout_stride.batch + item.head * a.dout_stride.head;
  load_tile<T, D, TILE>(k_tile, a.k + batch * a.k_stride.batch + item.head * a.k_stride.head, a.k_stride.seq,
                        lane, step, k_first, k_rows, a.dim);
  load_tile<T, D, TILE>(v_tile, a.v + batch * a.v_stride.batch + item.head * a.v_stride.head, a.v_stride.seq,
                        lane, step, k_first, k_rows, a.dim);
  float dk[PER_THREAD], dv[PER_THREAD];  // element (e / D, e % D) of the key tile, e = tid + i * kThreads
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) dk[i] = dv[i] = 0.0f;

  const int64_t list_end = part.col_begin[item.block + 1];
  for (int64_t entry = part.col_begin[item.block]; entry < list_end; ++entry) {
    const int64_t qb = part.col_query[entry];
    const int32_t mask_index = part.col_mask[entry];
    const uint64_t* mask = mask_index < 0 ? nullptr : part.masks + int64_t{mask_index} * B * part.mask_words;
    for (int chunk = 0; chunk < B; chunk += TILE) {
      const int64_t q_first = qb * B + chunk;
      if (q_first >= length) break;
      const int q_rows = rows_in_tile<TILE>(B - chunk, length - q_first);
      __syncthreads();  // the previous chunk is done with the query-side tiles
      load_tile<T, D, TILE>(q_tile, q, a.q_stride.seq, lane, step, q_first, q_rows, a.dim);
      load_tile<T, D, TILE>(dout_tile, dout, a.dout_stride.seq, lane, step, q_first, q_rows, a.dim);
      if (threadIdx.x < TILE) {
        const int64_t position = lane + (q_first + threadIdx.x) * step;
        const bool valid = static_cast<int>(threadIdx.x) < q_rows;
        lse[threadIdx.x] = valid ? a.lse[bh * a.n + position] : -INFINITY;
        delta[threadIdx.x] = valid ? a.delta[bh * a.n + position] : 0.0f;
      }
      __syncthreads();
      probabilities<D, TILE>(q_tile, k_tile, v_tile, dout_tile, lse, delta, q_rows, k_rows, chunk, tile_col,
                             mask, part.mask_words, a.dim, a.scale, p, ds);
      __syncthreads();
      // dV_c += sum_r P_rc dO_r,  dK_c += sum_r dS_rc q_r  (the scale is applied once at the end)
#pragma unroll
      for (int i = 0; i < PER_THREAD; ++i) {
        const int e = threadIdx.x + i * kThreads, c = e / D, d = e % D;
        float sum_v = dv[i], sum_k = dk[i];
        for (int r = 0; r < TILE; ++r) {
          sum_v += p[r * SD + c] * dout_tile[r * LD + d];
          sum_k += ds[r * SD + c] * q_tile[r * LD + d];
        }
        dv[i] = sum_v;
        dk[i] = sum_k;
      }
    }
  }

  T* grad_k = a.grad_a + batch * a.grad_a_stride.batch + item.head * a.grad_a_stride.head;
  T* grad_v = a.grad_b + batch * a.grad_b_stride.batch + item.head * a.grad_b_stride.head;
  float* partial_k = a.partial_a + batch * a.partial_a_stride.batch + item.head * a.partial_a_stride.head;
  float* partial_v = a.partial_b + batch * a.partial_b_stride.batch + item.head * a.partial_b_stride.head;
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) {
    const int e = threadIdx.x + i * kThreads, c = e / D, d = e % D;
    if (c >= k_rows || d >= a.dim) continue;
    const int64_t position = lane + (k_first + c) * step;
    finish(dk[i] * a.scale, item.flags, partial_k + position * a.partial_a_stride.seq + d,
           grad_k + position * a.grad_a_stride.seq + d);
    finish(dv[i], item.flags, partial_v + position * a.partial_b_stride.seq + d,
           grad_v + position * a.grad_b_stride.seq + d);
  }
}

// dQ of one query tile: the thread block walks the key blocks listed for its query block.
template <class T, int D, int TILE>
__global__ void __launch_bounds__(kThreads) query_kernel(BackwardArgs<T> a) {
  constexpr int LD = D + 1, SD = TILE + 1;
  constexpr int PER_THREAD = TILE * D / kThreads;
  extern __shared__ float shared[];
  float* q_tile = shared;                 // [TILE][LD]
  float* dout_tile = q_tile + TILE * LD;  // [TILE][LD]
  float* k_tile = dout_tile + TILE * LD;  // [TILE][LD]
  float* v_tile = k_tile + TILE * LD;     // [TILE][LD]
  float* p = v_tile + TILE * LD;          // [TILE queries][SD keys]
  float* ds = p + TILE * SD;              // [TILE queries][SD keys]
  float* lse = ds + TILE * SD;            // [TILE]
  float* delta = lse + TILE;              // [TILE]

  const WorkItem item = a.items[blockIdx.x];
  const DevicePart part = a.parts[item.part];
  const int B = part.block;
  const int64_t batch = blockIdx.y, step = part.step, lane = item.lane;
  const int64_t length = lane_length(a.n, lane, step);
  const int tile_row = blockIdx.z * TILE;
  const int64_t q_first = int64_t{item.block} * B + tile_row;
  if (q_first >= length) return;
  const int q_rows = rows_in_tile<TILE>(B - tile_row, length - q_first);

  const int64_t bh = batch * a.heads + item.head;
  const T* k = a.k + batch * a.k_stride.batch + item.head * a.k_stride.head;
  const T* v = a.v + batch * a.v_stride.batch + item.head * a.v_stride.head;
  load_tile<T, D, TILE>(q_tile, a.q + batch * a.q_stride.batch + item.head * a.q_stride.head, a.q_stride.seq,
                        lane, step, q_first, q_rows, a.dim);
  load_tile<T, D, TILE>(dout_tile, a.dout + batch * a.dout_stride.batch + item.head * a.dout_stride.head,
                        a.dout_stride.seq, lane, step, q_first, q_rows, a.dim);
  if (threadIdx.x < TILE) {
    const int64_t position = lane + (q_first + threadIdx.x) * step;
    const bool valid = static_cast<int>(threadIdx.x) < q_rows;
    lse[threadIdx.x] = valid ? a.lse[bh * a.n + position] : -INFINITY;
    delta[threadIdx.x] = valid ? a.delta[bh * a.n + position] : 0.0f;
  }
  float dq[PER_THREAD];  // element (e / D, e % D) of the query tile, e = tid + i * kThreads
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) dq[i] = 0.0f;

  const int64_t list_end = part.row_begin[item.block + 1];
  for (int64_t entry = part.row_begin[item.block]; entry < list_end; ++entry) {
    const int64_t kb = part.row_key[entry];
    const int32_t mask_index = part.row_mask[entry];
    const uint64_t* mask = mask_index < 0 ? nullptr : part.masks + int64_t{mask_index} * B * part.mask_words;
    for (int chunk = 0; chunk < B; chunk += TILE) {
      const int64_t k_first = kb * B + chunk;
      if (k_first >= length) break;
      const int k_rows = rows_in_tile<TILE>(B - chunk, length - k_first);
      __syncthreads();  // the previous chunk is done with the key-side tiles and ds
      load_tile<T, D, TILE>(k_tile, k, a.k_stride.seq, lane, step, k_first, k_rows, a.dim);
      load_tile<T, D, TILE>(v_tile, v, a.v_stride.seq, lane, step, k_first, k_rows, a.dim);
      __syncthreads();
      probabilities<D, TILE>(q_tile, k_tile, v_tile, dout_tile, lse, delta, q_rows, k_rows, tile_row, chunk,
                             mask, part.mask_words, a.dim, a.scale, p, ds);
      __syncthreads();
      // dQ_r += sum_c dS_rc k_c
#pragma unroll
      for (int i = 0; i < PER_THREAD; ++i) {
        const int e = threadIdx.x + i * kThreads, r = e / D, d = e % D;
        float sum = dq[i];
        for (int c = 0; c < TILE; ++c) sum += ds[r * SD + c] * k_tile[c * LD + d];
        dq[i] = sum;
      }
    }
  }

  T* grad_q = a.grad_a + batch * a.grad_a_stride.batch + item.head * a.grad_a_stride.head;
  float* partial_q = a.partial_a + batch * a.partial_a_stride.batch + item.head * a.partial_a_stride.head;
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) {
    const int e = threadIdx.x + i * kThreads, r = e / D, d = e % D;
    if (r >= q_rows || d >= a.dim) continue;
    const int64_t position = lane + (q_first + r) * step;
    finish(dq[i] * a.scale, item.flags, partial_q + position * a.partial_a_stride.seq + d,
           grad_q + position * a.grad_a_stride.seq + d);
  }
}

template <class T, int D>
void launch_backward(const BackwardParams& p, const DeviceLayout& layout, const float* delta,
                     const BackwardScratch& scratch) {
  constexpr int TILE = tile_rows(D);
  constexpr size_t shared = backward_shared_bytes<D, TILE>();
  const cudaStream_t stream = static_cast<cudaStream_t>(p.stream);
  BackwardArgs<T> a = backward_args<T>(p, layout, delta);
  set_key_pass(a, p, scratch);
  launch_slots(key_kernel<T, D, TILE>, a, layout, p.batch, p.layout->block, TILE, shared, stream);
  set_query_pass(a, p, scratch);
  launch_slots(query_kernel<T, D, TILE>, a, layout, p.batch, p.layout->block, TILE, shared, stream);
}

}  // namespace

void backward_cuda(const BackwardParams& p) {
  STX_KERNEL_CHECK(p.batch <= 65535,
                   "CUDA attention backward: expected batch <= 65535, got " + std::to_string(p.batch));
  const DeviceLayout& layout = device_layout(*p.layout);
  const cudaStream_t stream = static_cast<cudaStream_t>(p.stream);
  const int64_t rows = p.batch * p.heads * p.seq_len;
  StreamBuffer delta(static_cast<size_t>(rows), stream);
  // fp16/bf16 gradients of a head with several parts are summed in fp32 first: room for dK and dV.
  const bool need_scratch = layout.multi_part && p.dtype != DType::f32;
  StreamBuffer scratch(need_scratch ? static_cast<size_t>(2 * rows * p.head_dim) : 0, stream);
  dispatch_dtype(p.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    const unsigned blocks = static_cast<unsigned>((rows + kWarps - 1) / kWarps);
    delta_kernel<T><<<blocks, kThreads, 0, stream>>>(
        static_cast<const T*>(p.out), static_cast<const T*>(p.dout), p.out_stride, p.dout_stride, p.heads,
        p.seq_len, static_cast<int>(p.head_dim), rows, delta.get());
    STX_CUDA_CHECK(cudaGetLastError());
    const BackwardScratch passes_scratch{scratch.get()};
    if (tensor_core_backward_applies(p)) return backward_tc_cuda(p, layout, delta.get(), passes_scratch);
    dispatch_head_dim(p.head_dim, [&](auto dim) {
      launch_backward<T, decltype(dim)::value>(p, layout, delta.get(), passes_scratch);
    });
  });
}

}  // namespace stx::kernels::detail
