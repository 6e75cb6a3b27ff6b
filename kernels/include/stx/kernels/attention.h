// Block-sparse causal attention: fused forward, backward with recomputation, and single-query decode.
//
//   out_i = sum_{j in A(i)} softmax_j(scale * q_i . k_j) v_j,   lse_i = log sum_{j in A(i)} exp(scale * q_i . k_j)
//
// Usage (CPU, fp32, q/k/v/out of shape [B, H, T, D], contiguous):
//   auto layout = stx::kernels::cached_layout(T, 64, stx::kernels::layer_patterns(
//       stx::kernels::Pattern::strided, 128, 0, H, stx::kernels::Combination::merged));
//   stx::kernels::ForwardParams p;
//   p.q = q; p.k = k; p.v = v; p.out = out; p.lse = lse;
//   p.q_stride = p.k_stride = p.v_stride = p.out_stride = stx::kernels::Strides::contiguous(H, T, D);
//   p.batch = B; p.heads = H; p.seq_len = T; p.head_dim = D; p.layout = layout.get();
//   stx::kernels::attention_forward(p);
//
// A query whose attended set is empty (the fixed pattern's A2 alone, before the first summary cell)
// gets out = 0, lse = -inf and zero gradients.
//
// Each entry point checks its inputs and throws stx::kernels::Error naming what was expected and what
// came in. No entry point allocates an n x n matrix.
#pragma once

#include <cstdint>
#include <string>

#include "stx/kernels/error.h"
#include "stx/kernels/layout.h"
#include "stx/kernels/pattern.h"

namespace stx::kernels {

enum class DType : int { f32 = 0, f16 = 1, bf16 = 2 };
enum class Device : int { cpu = 0, cuda = 1 };

// Element strides of a [batch, heads, seq, head_dim] tensor whose last dimension is contiguous.
struct Strides {
  int64_t batch = 0;
  int64_t head = 0;
  int64_t seq = 0;
  static Strides contiguous(int64_t heads, int64_t seq_len, int64_t head_dim) {
    return Strides{heads * seq_len * head_dim, seq_len * head_dim, head_dim};
  }
};

struct ForwardParams {
  const void* q = nullptr;  // [batch, heads, seq_len, head_dim]
  const void* k = nullptr;  // [batch, heads, seq_len, head_dim]
  const void* v = nullptr;  // [batch, heads, seq_len, head_dim]
  void* out = nullptr;      // [batch, heads, seq_len, head_dim], written
  float* lse = nullptr;     // [batch, heads, seq_len] contiguous fp32, written: natural log of the softmax sum
  Strides q_stride, k_stride, v_stride, out_stride;
  int64_t batch = 0, heads = 0, seq_len = 0, head_dim = 0;
  float scale = 0.0f;  // softmax scale; 0 means 1/sqrt(head_dim)
  DType dtype = DType::f32;
  Device device = Device::cpu;
  void* stream = nullptr;           // cudaStream_t for Device::cuda; null is the default stream
  const Layout* layout = nullptr;   // n == seq_len, one pattern per head
};

struct BackwardParams {
  const void* q = nullptr;     // [batch, heads, seq_len, head_dim]
  const void* k = nullptr;     // [batch, heads, seq_len, head_dim]
  const void* v = nullptr;     // [batch, heads, seq_len, head_dim]
  const void* out = nullptr;   // [batch, heads, seq_len, head_dim], the forward's output
  const void* dout = nullptr;  // [batch, heads, seq_len, head_dim], gradient of the loss w.r.t. out
  const float* lse = nullptr;  // [batch, heads, seq_len] contiguous fp32, the forward's log-sum-exp
  void* dq = nullptr;          // [batch, heads, seq_len, head_dim], overwritten
  void* dk = nullptr;          // [batch, heads, seq_len, head_dim], overwritten
  void* dv = nullptr;          // [batch, heads, seq_len, head_dim], overwritten
  Strides q_stride, k_stride, v_stride, out_stride, dout_stride, dq_stride, dk_stride, dv_stride;
  int64_t batch = 0, heads = 0, seq_len = 0, head_dim = 0;
  float scale = 0.0f;
  DType dtype = DType::f32;
  Device device = Device::cpu;
  void* stream = nullptr;
  const Layout* layout = nullptr;
};

// One new query at `position` against a KV cache holding keys 0..position. Touches only A(position).
struct DecodeParams {
  const void* q = nullptr;        // [batch, heads, head_dim]: q_stride.batch, q_stride.head apply
  const void* k_cache = nullptr;  // [batch, heads, capacity, head_dim]
  const void* v_cache = nullptr;  // [batch, heads, capacity, head_dim]
  void* out = nullptr;            // [batch, heads, head_dim]: out_stride.batch, out_stride.head apply
  float* lse = nullptr;           // [batch, heads] contiguous fp32, optional (may be null)
  Strides q_stride, k_stride, v_stride, out_stride;  // .seq unused for q and out
  int64_t batch = 0, heads = 0, head_dim = 0;
  int64_t capacity = 0;  // positions the cache can hold
  int64_t position = 0;  // the query's position i, 0 <= i < capacity
  // Optional: where i is read from when the kernel runs, instead of `position` (device memory on CUDA, host
  // memory on the CPU). A decode step whose position lives on the device has launch arguments that are the
  // same at every position, so that a block of steps can be captured once as a CUDA graph and replayed. On
  // CUDA the value cannot be checked before the launch: one outside [0, capacity) makes out (and lse) NaN.
  const int64_t* position_in_memory = nullptr;
  // The row of the caches that holds position j: j itself when 0 (natural order), else
  // cache_row(j, cache_columns, capacity): the residue classes mod L = cache_columns stored one after
  // another, so every L-th key before i (the strided pattern's A2) is one contiguous run instead of keys
  // L rows apart, each a cache and TLB miss. The caches then hold cache_rows(capacity, L) rows.
  int64_t cache_columns = 0;
  // Optional with cache_columns = L: a second copy of the last L keys and values in natural order,
  // [batch, heads, L, head_dim] with position j in row j mod L (k_window_stride, v_window_stride). Keys
  // j > i - L are read from it, so the band just before i is contiguous too.
  const void* k_window = nullptr;
  const void* v_window = nullptr;
  Strides k_window_stride, v_window_stride;
  float scale = 0.0f;
  DType dtype = DType::f32;
  // Element type of k_cache, v_cache and the windows. On the CPU, f32 or f16 (IEEE half, as written by
  // convert_to_half) with dtype f32: a late step of a batch is bound by reading the attended keys and
  // values, and halves read half the bytes. On CUDA it must equal dtype.
  DType cache_dtype = DType::f32;
  Device device = Device::cpu;
  void* stream = nullptr;
  const HeadPattern* patterns = nullptr;  // [heads]
};

// IEEE half <-> float for the caches of DecodeParams::cache_dtype = f16, on the CPU. To half rounds to
// nearest even and saturates at +-65504, so a large key never becomes inf (and a softmax NaN); NaN stays
// NaN. Every CPU path gives the same bits.
void convert_to_half(const float* src, uint16_t* dst, int64_t count);
void convert_from_half(const uint16_t* src, float* dst, int64_t count);

// Rows a column-ordered cache of `capacity` positions needs: whole columns of ceil(capacity / L) rows.
inline int64_t cache_rows(int64_t capacity, int64_t columns) {
  return columns > 0 ? (capacity + columns - 1) / columns * columns : capacity;
}
// The row of position j in a cache of `capacity` positions with cache_columns = columns.
inline int64_t cache_row(int64_t j, int64_t columns, int64_t capacity) {
  return columns > 0 ? (j % columns) * ((capacity + columns - 1) / columns) + j / columns : j;
}

void attention_forward(const ForwardParams& p);
void attention_backward(const BackwardParams& p);
void attention_decode(const DecodeParams& p);

// The CPU code path, chosen at run time from what the processor supports.
enum class CpuIsa : int { portable = 0, avx2 = 1, avx512 = 2 };
CpuIsa best_cpu_isa();
CpuIsa active_cpu_isa();
// Forces a path (tests use it to check every path); throws Error if the processor lacks it.
void force_cpu_isa(CpuIsa isa);
const char* to_string(CpuIsa isa);

// True when the library was built with CUDA kernels.
bool built_with_cuda();
// True when built with CUDA and a CUDA device is present.
bool cuda_device_available();
// The name of CUDA device `index` ("NVIDIA H100 80GB HBM3"), or "" when there is none or no CUDA build.
std::string cuda_device_name(int index = 0);
// The nodes (kernel launches, copies, memsets) of the CUDA graph being captured on `stream` (a
// cudaStream_t) so far: how many launches a captured block of work replays. -1 when the stream is not
// capturing, or in a build without CUDA.
int64_t cuda_captured_nodes(void* stream);

const char* to_string(DType t);
size_t dtype_size(DType t);

}  // namespace stx::kernels
