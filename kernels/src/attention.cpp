// The checked entry points: validate shapes, strides and the layout, then dispatch to a backend.
#include <atomic>
#include <cmath>
#include <initializer_list>
#include <string>

#include "backends.h"

namespace stx::kernels {
namespace {

std::atomic<int> forced_isa{-1};

bool cpu_supports(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::portable: return true;
    case CpuIsa::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuIsa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }
  return false;
}

std::string str(int64_t v) { return std::to_string(v); }

// The "<op>: " that starts a check's message, built only when a check fails: the checks run on every
// decode call, several a step, and a string this long took a heap allocation each time.
struct Where {
  const char* op;
  std::string operator()() const { return std::string(op) + ": "; }
};

void check_shape(const char* op, int64_t batch, int64_t heads, int64_t head_dim) {
  const Where where{op};
  STX_KERNEL_CHECK(batch >= 1, where() + "expected batch >= 1, got " + str(batch));
  STX_KERNEL_CHECK(heads >= 1, where() + "expected heads >= 1, got " + str(heads));
  STX_KERNEL_CHECK(head_dim >= 1 && head_dim <= 256,
                   where() + "expected head_dim in 1..256, got " + str(head_dim));
}

void check_tensor(const char* op, const char* name, const void* data, const Strides& s, bool needs_seq) {
  const Where where{op};
  STX_KERNEL_CHECK(data != nullptr, where() + name + " is null");
  STX_KERNEL_CHECK(s.batch >= 0 && s.head >= 0 && s.seq >= 0, where() + "expected non-negative strides for " +
                                                                  name + ", got (" + str(s.batch) + ", " +
                                                                  str(s.head) + ", " + str(s.seq) + ")");
  STX_KERNEL_CHECK(!needs_seq || s.seq >= 1, where() + name + " needs a sequence stride >= 1");
}

void check_layout(const char* op, const Layout* layout, int64_t seq_len, int64_t heads) {
  const Where where{op};
  STX_KERNEL_CHECK(seq_len >= 1, where() + "expected seq_len >= 1, got " + str(seq_len));
  STX_KERNEL_CHECK(layout != nullptr, where() + "no layout given");
  STX_KERNEL_CHECK(layout->n == seq_len, where() + "the layout is for n = " + str(layout->n) +
                                             " but the inputs have seq_len = " + str(seq_len));
  STX_KERNEL_CHECK(layout->num_heads() == heads, where() + "the layout has " + str(layout->num_heads()) +
                                                     " head patterns but the inputs have " + str(heads) +
                                                     " heads");
}

// The params with scale 0 (the default) made 1/sqrt(head_dim).
template <class Params>
Params with_resolved_scale(Params p) {
  if (!(p.scale > 0.0f)) p.scale = 1.0f / std::sqrt(static_cast<float>(p.head_dim));
  return p;
}

}  // namespace

namespace detail {

void check_device(const char* op, Device device, DType dtype) {
  const Where where{op};
  if (device == Device::cpu) {
    STX_KERNEL_CHECK(dtype == DType::f32, where() + "the CPU kernels take float32, got " + to_string(dtype));
    return;
  }
  STX_KERNEL_CHECK(built_with_cuda(),
                   where() + "a CUDA tensor was given, but stx_kernels was built without CUDA");
}

}  // namespace detail

using detail::check_device;

CpuIsa best_cpu_isa() {
  if (cpu_supports(CpuIsa::avx512)) return CpuIsa::avx512;
  if (cpu_supports(CpuIsa::avx2)) return CpuIsa::avx2;
  return CpuIsa::portable;
}

CpuIsa active_cpu_isa() {
  int forced = forced_isa.load();
  return forced >= 0 ? static_cast<CpuIsa>(forced) : best_cpu_isa();
}

void force_cpu_isa(CpuIsa isa) {
  STX_KERNEL_CHECK(cpu_supports(isa), std::string("this processor does not support the ") + to_string(isa) +
                                          " kernels");
  forced_isa.store(static_cast<int>(isa));
}

const char* to_string(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::portable: return "portable";
    case CpuIsa::avx2: return "avx2+fma";
    case CpuIsa::avx512: return "avx512";
  }
  return "?";
}

const char* to_string(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
  }
  return "?";
}

size_t dtype_size(DType t) { return t == DType::f32 ? 4 : 2; }

bool built_with_cuda() {
#ifdef STX_WITH_CUDA
  return true;
#else
  return false;
#endif
}

bool cuda_device_available() {
#ifdef STX_WITH_CUDA
  return detail::cuda_device_count() > 0;
#else
  return false;
#endif
}

std::string cuda_device_name(int index) {
#ifdef STX_WITH_CUDA
  return detail::cuda_device_name(index);
#else
  (void)index;
  return "";
#endif
}

int64_t cuda_captured_nodes(void* stream) {
#ifdef STX_WITH_CUDA
  return detail::cuda_captured_nodes(stream);
#else
  (void)stream;
  return -1;
#endif
}

namespace {
// The checks the forward and the backward share (ForwardParams or BackwardParams).
struct NamedTensor {
  const char* name;
  const void* data;
  Strides strides;
};

// check_tensor of each, all read along the sequence.
void check_sequences(const char* op, std::initializer_list<NamedTensor> tensors) {
  for (const NamedTensor& t : tensors) check_tensor(op, t.name, t.data, t.strides, true);
}

template <class Params>
void check_attention(const char* op, const Params& p) {
  check_shape(op, p.batch, p.heads, p.head_dim);
  check_layout(op, p.layout, p.seq_len, p.heads);
  check_device(op, p.device, p.dtype);
  check_sequences(op, {{"q", p.q, p.q_stride}, {"k", p.k, p.k_stride}, {"v", p.v, p.v_stride},
                       {"out", p.out, p.out_stride}});
  STX_KERNEL_CHECK(p.lse != nullptr, std::string(op) + ": lse is null");
}
}  // namespace

void attention_forward(const ForwardParams& p_in) {
  check_attention("sparse attention forward", p_in);
  const ForwardParams p = with_resolved_scale(p_in);
  STX_RUN_ON_DEVICE(p.device, forward_cuda, forward, p)
}

void attention_backward(const BackwardParams& p_in) {
  const char* op = "sparse attention backward";
  check_attention(op, p_in);
  check_sequences(op, {{"dout", p_in.dout, p_in.dout_stride}, {"dq", p_in.dq, p_in.dq_stride},
                       {"dk", p_in.dk, p_in.dk_stride}, {"dv", p_in.dv, p_in.dv_stride}});
  const BackwardParams p = with_resolved_scale(p_in);
  STX_RUN_ON_DEVICE(p.device, backward_cuda, backward, p)
}

void attention_decode(const DecodeParams& p_in) {
  const char* op = "sparse attention decode";
  check_shape(op, p_in.batch, p_in.heads, p_in.head_dim);
  check_device(op, p_in.device, p_in.dtype);
  check_tensor(op, "q", p_in.q, p_in.q_stride, false);
  check_tensor(op, "k_cache", p_in.k_cache, p_in.k_stride, true);
  check_tensor(op, "v_cache", p_in.v_cache, p_in.v_stride, true);
  check_tensor(op, "out", p_in.out, p_in.out_stride, false);
  STX_KERNEL_CHECK(p_in.patterns != nullptr, std::string(op) + ": no head patterns given");
  STX_KERNEL_CHECK(p_in.capacity >= 1, std::string(op) + ": expected a cache capacity >= 1, got " +
                                           str(p_in.capacity));
  DecodeParams resolved = p_in;
  // On the CPU a position in memory is the host's to read now; on CUDA the kernel reads it.
  if (p_in.position_in_memory != nullptr && p_in.device == Device::cpu) {
    resolved.position = *p_in.position_in_memory;
    resolved.position_in_memory = nullptr;
  }
  STX_KERNEL_CHECK(resolved.position_in_memory != nullptr ||
                       (resolved.position >= 0 && resolved.position < resolved.capacity),
                   std::string(op) + ": expected 0 <= position < capacity (" + str(p_in.capacity) +
                       "), got " + str(resolved.position));
  STX_KERNEL_CHECK(p_in.cache_columns >= 0, std::string(op) + ": cache_columns must be >= 0, got " +
                                                str(p_in.cache_columns));
  STX_KERNEL_CHECK((p_in.k_window == nullptr) == (p_in.v_window == nullptr),
                   std::string(op) + ": give both k_window and v_window, or neither");
  STX_KERNEL_CHECK(p_in.k_window == nullptr || p_in.cache_columns > 0,
                   std::string(op) + ": a window cache needs cache_columns > 0");
  if (p_in.device == Device::cpu) {
    STX_KERNEL_CHECK(p_in.cache_dtype == DType::f32 || p_in.cache_dtype == DType::f16,
                     std::string(op) + ": the CPU kernel takes float32 or float16 caches, got " +
                         to_string(p_in.cache_dtype));
  } else {
    STX_KERNEL_CHECK(p_in.cache_dtype == p_in.dtype, std::string(op) + ": on CUDA the caches must be " +
                                                         to_string(p_in.dtype) + " like q, got " +
                                                         to_string(p_in.cache_dtype));
  }
  for (int64_t h = 0; h < p_in.heads; ++h) validate(p_in.patterns[h]);
  const DecodeParams p = with_resolved_scale(resolved);
  STX_RUN_ON_DEVICE(p.device, decode_cuda, decode, p)
}

void convert_to_half(const float* src, uint16_t* dst, int64_t count) {
  STX_KERNEL_CHECK(count >= 0, "convert_to_half: expected count >= 0, got " + str(count));
  STX_KERNEL_CHECK(count == 0 || (src != nullptr && dst != nullptr), "convert_to_half: a pointer is null");
  STX_RUN_ON_CPU(to_half, src, dst, count)
}

void convert_from_half(const uint16_t* src, float* dst, int64_t count) {
  STX_KERNEL_CHECK(count >= 0, "convert_from_half: expected count >= 0, got " + str(count));
  STX_KERNEL_CHECK(count == 0 || (src != nullptr && dst != nullptr), "convert_from_half: a pointer is null");
  STX_RUN_ON_CPU(from_half, src, dst, count)
}

}  // namespace stx::kernels
