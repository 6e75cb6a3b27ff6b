// Private to the CUDA backend: error checks, dtype load/store, dispatch helpers, and the device copy of a
// Layout that every kernel reads (uploaded once per layout and device by layout_cuda.cu).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends.h"
#include "stx/kernels/attention.h"
#include "stx/kernels/error.h"
#include "stx/kernels/layout.h"

namespace stx::kernels::detail {

// Throws Error naming the call, the file and line, and CUDA's own description of the failure.
inline void cuda_check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw Error(std::string("CUDA error at ") + file + ":" + std::to_string(line) + ": " + call + " returned " +
              cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

}  // namespace stx::kernels::detail

// STX_CUDA_CHECK(cudaMemcpy(...)); after a launch: STX_CUDA_CHECK(cudaGetLastError()).
#define STX_CUDA_CHECK(call) ::stx::kernels::detail::cuda_check((call), #call, __FILE__, __LINE__)

namespace stx::kernels::detail {

constexpr int kThreads = 128;  // threads per block of the forward and backward kernels: 4 warps
constexpr int kWarps = kThreads / 32;

// ---- dtype helpers: tensors are stored as T, all arithmetic is fp32 --------------------------------

__device__ __forceinline__ float load_float(const float* p) { return *p; }
__device__ __forceinline__ float load_float(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ float load_float(const __nv_bfloat16* p) { return __bfloat162float(*p); }

__device__ __forceinline__ void store_float(float* p, float x) { *p = x; }
__device__ __forceinline__ void store_float(__half* p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void store_float(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }

__device__ __forceinline__ float warp_max(float x) {
  for (int offset = 16; offset > 0; offset >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

__device__ __forceinline__ float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// log(exp(a) + exp(b)) that stays exact when either side is -inf (a row with no keys in a part).
__device__ __forceinline__ float log_add_exp(float a, float b) {
  const float hi = fmaxf(a, b), lo = fminf(a, b);
  if (hi == -INFINITY) return -INFINITY;
  if (lo == -INFINITY) return hi;
  return hi + log1pf(expf(lo - hi));
}

template <class T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<float|__half|__nv_bfloat16>{}) for the runtime dtype.
template <class F>
void dispatch_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: f(TypeTag<float>{}); return;
    case DType::f16: f(TypeTag<__half>{}); return;
    case DType::bf16: f(TypeTag<__nv_bfloat16>{}); return;
  }
  throw Error("CUDA attention: unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

// Calls f(std::integral_constant<int, D>{}) with D the padded head dimension (64, 128 or 256) that
// holds head_dim; shared-memory tiles and per-thread registers are sized by D.
template <class F>
void dispatch_head_dim(int64_t head_dim, F&& f) {
  if (head_dim <= 64) return f(std::integral_constant<int, 64>{});
  if (head_dim <= 128) return f(std::integral_constant<int, 128>{});
  if (head_dim <= 256) return f(std::integral_constant<int, 256>{});
  throw Error("CUDA attention: expected head_dim <= 256, got " + std::to_string(head_dim));
}

// Sets the dynamic shared-memory limit of a kernel above the 48 KiB default and checks that the
// device can give that much.
template <class Kernel>
void allow_shared_memory(Kernel kernel, size_t bytes) {
  int device = 0, limit = 0;
  STX_CUDA_CHECK(cudaGetDevice(&device));
  STX_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (bytes > static_cast<size_t>(limit))
    throw Error("CUDA attention: a tile needs " + std::to_string(bytes) +
                " bytes of shared memory, the device " + "offers " + std::to_string(limit));
  STX_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

// An fp32 scratch buffer allocated and freed in stream order, so no call waits for the device.
class StreamBuffer {
 public:
  StreamBuffer(size_t count, cudaStream_t stream) : stream_(stream) {
    if (count > 0)
      STX_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&data_), count * sizeof(float), stream));
  }
  ~StreamBuffer() {
    if (data_ != nullptr) cudaFreeAsync(data_, stream_);  // an error here surfaces at the next check
  }
  StreamBuffer(const StreamBuffer&) = delete;
  StreamBuffer& operator=(const StreamBuffer&) = delete;
  float* get() const { return data_; }

 private:
  float* data_ = nullptr;
  cudaStream_t stream_;
};

// Rows (queries or keys) per shared-memory tile for a padded head dimension D. 32 reuses each loaded
// chunk for more rows; at D = 256 four 32-row tiles would not fit in shared memory next to each other.
// A tile never spans two blocks: with B = 16 a 32-row tile is half used.
constexpr int tile_rows(int D) { return D >= 256 ? 16 : 32; }

// Rows of a tile that hold data: at most TILE, no further than the block's end or the lane's end.
template <int TILE>
__device__ __forceinline__ int rows_in_tile(int to_block_end, int64_t to_lane_end) {
  int64_t rows = to_block_end < TILE ? to_block_end : TILE;
  if (to_lane_end < rows) rows = to_lane_end;
  return static_cast<int>(rows);
}

// ---- the device copy of a Layout --------------------------------------------------------------------

// One LayoutPart with its lists in device memory (see layout.h for the meaning of every field).
struct DevicePart {
  int64_t step;        // 1 (natural) or l (columns)
  int64_t mask_words;  // 64-bit words per mask row
  int32_t block;       // B
  const int64_t* row_begin;
  const int32_t* row_key;
  const int32_t* row_mask;
  const int64_t* col_begin;
  const int32_t* col_query;
  const int32_t* col_mask;
  const uint64_t* masks;
};

// The lane's positions run lane, lane + step, ...: this many of them lie below n.
__host__ __device__ __forceinline__ int64_t lane_length(int64_t n, int64_t lane, int64_t step) {
  return (n - lane + step - 1) / step;
}

// Does query row `row` of a query block attend key column `col` of a key block? mask is null for a full block.
__device__ __forceinline__ bool mask_bit(const uint64_t* mask, int64_t mask_words, int row, int col) {
  if (mask == nullptr) return true;
  return (mask[row * mask_words + (col >> 6)] >> (col & 63)) & 1u;
}

// The mask of a part's block list entry: null for a full block (mask index -1).
__device__ __forceinline__ const uint64_t* block_mask(const DevicePart& part, int32_t mask_index) {
  return mask_index < 0 ? nullptr : part.masks + int64_t{mask_index} * part.block * part.mask_words;
}

// One thread block's work: a block (query block for the forward and dQ, key block for dK/dV) of one lane
// of one part of one head. Slot s of a layout lists the items of every head's part s; the launches of
// slots 0, 1, ... run in stream order and merge into what the earlier slots wrote.
enum WorkFlags : int32_t { kFirstPart = 1, kLastPart = 2 };
struct WorkItem {
  int32_t head;
  int32_t part;  // index into DeviceLayout::parts
  int32_t lane;
  int32_t block;
  int32_t flags;  // kFirstPart: nothing to merge with; kLastPart: write the final result in the dtype
};

struct DeviceLayout {
  int device = -1;
  void* memory = nullptr;  // one allocation holds everything below
  const DevicePart* parts = nullptr;
  std::vector<const WorkItem*> slot_items;  // per slot, device pointer to its items
  std::vector<int64_t> slot_count;          // per slot, number of items
  bool multi_part = false;                  // some head has more than one part: partial results need fp32
  ~DeviceLayout();
};

// Launches `kernel` once per slot of the layout, in stream order (each slot's parts merge into what the earlier
// slots wrote): a thread block of `threads` per (work item, batch, tile of `tile` rows of a block of `block`).
template <class Kernel, class Args>
void launch_slots(Kernel kernel, Args& a, const DeviceLayout& layout, int64_t batch, int block, int tile,
                  size_t shared, cudaStream_t stream, int threads = kThreads) {
  allow_shared_memory(kernel, shared);
  for (size_t slot = 0; slot < layout.slot_items.size(); ++slot) {
    if (layout.slot_count[slot] == 0) continue;
    a.items = layout.slot_items[slot];
    const dim3 grid(static_cast<unsigned>(layout.slot_count[slot]), static_cast<unsigned>(batch),
                    static_cast<unsigned>((block + tile - 1) / tile));
    kernel<<<grid, threads, shared, stream>>>(a);
    STX_CUDA_CHECK(cudaGetLastError());
  }
}

// The device copy of `layout` for the current device, uploaded on first use and cached in the layout.
const DeviceLayout& device_layout(const Layout& layout);

// Whether the tensor-core kernels run for `dtype` on the current device: float16 or bfloat16, a device of
// compute capability 8.0 or later, a build with sm_80 code, and STX_CUDA_TENSOR_CORES not set to 0 (read at
// the first call; 0 keeps the scalar kernels).
bool tensor_cores_usable(DType dtype);

// The tensor-core forward (forward_tc_cuda.cu): whether it takes these params (tensor_cores_usable and
// head_dim <= 128), and the forward itself, with forward_cuda's fp32 scratch for the running output between
// parts.
bool tensor_core_forward_applies(const ForwardParams& p);
void forward_tc_cuda(const ForwardParams& p, const DeviceLayout& layout, float* partial, const Strides& partial_stride);

}  // namespace stx::kernels::detail
