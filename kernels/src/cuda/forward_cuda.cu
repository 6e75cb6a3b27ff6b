// Fused block-sparse forward: out_i = sum_{j in A(i)} softmax_j(scale * q_i . k_j) v_j, and lse_i.
//
// One thread block per (work item, batch, query tile): a work item is one query block of one lane of
// one part of one head (see WorkItem). The block keeps a TILE x D query tile in shared memory, walks the
// key blocks listed for its query block in TILE-wide chunks, and runs an online softmax over them. Parts
// run as successive launches (slots); each launch merges its part into the previous parts' result
// through the log-sum-exp, so a row is written by exactly one thread block per launch: no races.
#include "cuda/cuda_common.cuh"
#include "cuda/attention_args.cuh"

namespace stx::kernels::detail {
namespace {

// Shared floats used by one thread block: q, k, v tiles, the score tile and five per-row vectors.
template <int D, int TILE>
constexpr size_t forward_shared_bytes() {
  return sizeof(float) * (3 * TILE * (D + 1) + TILE * (TILE + 1) + 5 * TILE);
}

// Copies rows [first, first + rows) of a lane into a TILE x D fp32 tile (row pitch D + 1, which keeps the
// column-wise dot products free of bank conflicts), zero-filling missing rows and dims beyond `dim`.
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

template <class T, int D, int TILE>
__global__ void __launch_bounds__(kThreads) forward_kernel(ForwardArgs<T> a) {
  constexpr int LD = D + 1, SD = TILE + 1;
  constexpr int PER_THREAD = TILE * D / kThreads;
  static_assert(TILE * D % kThreads == 0, "each thread owns a whole number of output elements");
  static_assert(TILE <= 32, "the softmax gives one warp lane to each column of a chunk");
  extern __shared__ float shared[];
  float* q_tile = shared;                  // [TILE][LD]
  float* k_tile = q_tile + TILE * LD;      // [TILE][LD]
  float* v_tile = k_tile + TILE * LD;      // [TILE][LD]
  float* scores = v_tile + TILE * LD;      // [TILE][SD]: scores, then probabilities
  float* row_max = scores + TILE * SD;     // running max of each query row
  float* row_sum = row_max + TILE;         // running softmax denominator
  float* row_rescale = row_sum + TILE;     // exp(old max - new max) of the current chunk
  float* weight_old = row_rescale + TILE;  // merge weights of the previous parts' output...
  float* weight_new = weight_old + TILE;   // ...and of this part's unnormalised output

  const WorkItem item = a.items[blockIdx.x];
  const DevicePart part = a.parts[item.part];
  const int B = part.block;
  const int64_t batch = blockIdx.y, step = part.step, lane = item.lane;
  const int64_t length = lane_length(a.n, lane, step);
  const int tile_row = blockIdx.z * TILE;  // first row of this tile inside the query block
  const int64_t q_first = int64_t{item.block} * B + tile_row;
  if (q_first >= length) return;  // the lane ends before this tile
  const int q_rows = rows_in_tile<TILE>(B - tile_row, length - q_first);

  const T* q = a.q + batch * a.q_stride.batch + item.head * a.q_stride.head;
  const T* k = a.k + batch * a.k_stride.batch + item.head * a.k_stride.head;
  const T* v = a.v + batch * a.v_stride.batch + item.head * a.v_stride.head;
  load_tile<T, D, TILE>(q_tile, q, a.q_stride.seq, lane, step, q_first, q_rows, a.dim);
  if (threadIdx.x < TILE) {
    row_max[threadIdx.x] = -INFINITY;
    row_sum[threadIdx.x] = 0.0f;
  }
  float acc[PER_THREAD];  // element (e / D, e % D) of the unnormalised output tile, e = tid + i * kThreads
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) acc[i] = 0.0f;

  const int warp = threadIdx.x / 32, warp_lane = threadIdx.x % 32;
  const int64_t list_end = part.row_begin[item.block + 1];
  for (int64_t entry = part.row_begin[item.block]; entry < list_end; ++entry) {
    const int64_t kb = part.row_key[entry];
    const int32_t mask_index = part.row_mask[entry];
    const uint64_t* mask = mask_index < 0 ? nullptr : part.masks + int64_t{mask_index} * B * part.mask_words;
    for (int chunk = 0; chunk < B; chunk += TILE) {
      const int64_t k_first = kb * B + chunk;
      if (k_first >= length) break;
      const int k_rows = rows_in_tile<TILE>(B - chunk, length - k_first);
      __syncthreads();  // the previous chunk is done with k_tile, v_tile and scores
      load_tile<T, D, TILE>(k_tile, k, a.k_stride.seq, lane, step, k_first, k_rows, a.dim);
      load_tile<T, D, TILE>(v_tile, v, a.v_stride.seq, lane, step, k_first, k_rows, a.dim);
      __syncthreads();

      // s_rc = scale * q_r . k_c, or -inf where the pair is not attended.
      for (int e = threadIdx.x; e < TILE * TILE; e += kThreads) {
        const int r = e / TILE, c = e % TILE;
        float s = -INFINITY;
        if (r < q_rows && c < k_rows && mask_bit(mask, part.mask_words, tile_row + r, chunk + c)) {
          float dot = 0.0f;
          for (int d = 0; d < a.dim; ++d) dot += q_tile[r * LD + d] * k_tile[c * LD + d];
          s = dot * a.scale;
        }
        scores[r * SD + c] = s;
      }
      __syncthreads();

      // Online softmax, one warp per row: p = exp(s - new max); rescale what came before.
      for (int r = warp; r < TILE; r += kWarps) {
        const float old_max = row_max[r];
        const float s = warp_lane < TILE ? scores[r * SD + warp_lane] : -INFINITY;
        const float new_max = fmaxf(old_max, warp_max(s));
        const float p = s == -INFINITY ? 0.0f : __expf(s - new_max);
        const float chunk_sum = warp_sum(p);
        if (warp_lane < TILE) scores[r * SD + warp_lane] = p;
        if (warp_lane == 0) {
          const float rescale = old_max == -INFINITY ? 0.0f : __expf(old_max - new_max);
          row_max[r] = new_max;
          row_sum[r] = row_sum[r] * rescale + chunk_sum;
          row_rescale[r] = rescale;
        }
      }
      __syncthreads();

      // o_r = o_r * rescale_r + sum_c p_rc v_c
#pragma unroll
      for (int i = 0; i < PER_THREAD; ++i) {
        const int e = threadIdx.x + i * kThreads, r = e / D, d = e % D;
        float o = acc[i] * row_rescale[r];
        for (int c = 0; c < TILE; ++c) o += scores[r * SD + c] * v_tile[c * LD + d];
        acc[i] = o;
      }
    }
  }
  __syncthreads();  // row_sum and row_max are final

  // Merge with the earlier parts: lse = logaddexp(lse_old, lse_part),
  // o = o_old * exp(lse_old - lse) + (acc / sum) * exp(lse_part - lse). Empty rows have lse_part = -inf.
  const bool first = item.flags & kFirstPart, last = item.flags & kLastPart;
  float* lse = a.lse + (batch * a.heads + item.head) * a.n;
  if (threadIdx.x < q_rows) {
    const int r = threadIdx.x;
    const int64_t position = lane + (q_first + r) * step;
    const float sum = row_sum[r];
    const float part_lse = sum > 0.0f ? row_max[r] + logf(sum) : -INFINITY;
    const float old_lse = first ? -INFINITY : lse[position];
    const float new_lse = log_add_exp(old_lse, part_lse);
    weight_old[r] = old_lse == -INFINITY ? 0.0f : expf(old_lse - new_lse);
    weight_new[r] = part_lse == -INFINITY ? 0.0f : expf(part_lse - new_lse) / sum;
    lse[position] = new_lse;  // only this thread reads or writes this row's lse
  }
  __syncthreads();
  T* out = a.out + batch * a.out_stride.batch + item.head * a.out_stride.head;
  float* partial = a.partial + batch * a.partial_stride.batch + item.head * a.partial_stride.head;
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) {
    const int e = threadIdx.x + i * kThreads, r = e / D, d = e % D;
    if (r >= q_rows || d >= a.dim) continue;
    const int64_t position = lane + (q_first + r) * step;
    float o = acc[i] * weight_new[r];
    float* partial_at = partial + position * a.partial_stride.seq + d;
    if (weight_old[r] != 0.0f) o += *partial_at * weight_old[r];
    if (last) {
      store_float(out + position * a.out_stride.seq + d, o);
    } else {
      *partial_at = o;
    }
  }
}

template <class T, int D>
void launch_forward(const ForwardParams& p, const DeviceLayout& layout, float* partial,
                    const Strides& partial_stride) {
  ForwardArgs<T> a = forward_args<T>(p, layout, partial, partial_stride);
  constexpr int TILE = tile_rows(D);
  launch_slots(forward_kernel<T, D, TILE>, a, layout, p.batch, p.layout->block, TILE,
               forward_shared_bytes<D, TILE>(), static_cast<cudaStream_t>(p.stream));
}

}  // namespace

void forward_cuda(const ForwardParams& p) {
  STX_KERNEL_CHECK(p.batch <= 65535,
                   "CUDA attention forward: expected batch <= 65535, got " + std::to_string(p.batch));
  const DeviceLayout& layout = device_layout(*p.layout);
  const cudaStream_t stream = static_cast<cudaStream_t>(p.stream);
  // Between parts the running output stays in fp32: in `out` itself for fp32, else in a scratch buffer.
  const bool scratch = layout.multi_part && p.dtype != DType::f32;
  StreamBuffer buffer(scratch ? static_cast<size_t>(p.batch * p.heads * p.seq_len * p.head_dim) : 0, stream);
  float* partial = scratch ? buffer.get() : static_cast<float*>(p.out);
  const Strides partial_stride = scratch ? Strides::contiguous(p.heads, p.seq_len, p.head_dim) : p.out_stride;
  if (tensor_core_forward_applies(p)) return forward_tc_cuda(p, layout, partial, partial_stride);
  dispatch_dtype(p.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    dispatch_head_dim(p.head_dim, [&](auto dim) {
      launch_forward<T, decltype(dim)::value>(p, layout, partial, partial_stride);
    });
  });
}

}  // namespace stx::kernels::detail
