// The fused activation (see stx/kernels/activation.h), compiled per instruction set next to the
// attention kernels: include after cpu/cpu_kernels_impl.h, which brings simd.h into the namespace.
//
// sigmoid(z) through e = 2^(-|z| log2 e), which never overflows: 1 / (1 + e) for z >= 0, else e / (1 + e).
// Memory-bound, so each element is read once and written once; OpenMP splits the range in static chunks.

namespace stx::kernels::detail::STX_CPU_NAMESPACE {
namespace {

constexpr float kNegSlopeLog2e = -kGeluSigmoidSlope * 1.4426950408889634f;

// s = sigmoid(1.702 x)
inline vfloat sigmoid_of_slope(vfloat x) {
  const vfloat z = x * kGeluSigmoidSlope;
  const vfloat e = exp2v((z < 0.0f ? -x : x) * kNegSlopeLog2e);  // 2^(-|1.702 x| log2 e), in (0, 1]
  const vfloat r = 1.0f / (1.0f + e);
  return z < 0.0f ? e * r : r;
}

inline float sigmoid_of_slope(float x) {
  const float e = std::exp2(std::fabs(x) * kNegSlopeLog2e);
  const float r = 1.0f / (1.0f + e);
  return x < 0.0f ? e * r : r;
}

inline float gelu_grad(float x, float s) { return s + kGeluSigmoidSlope * x * s * (1.0f - s); }

// Element access by type: float, or bfloat16 bits (under CPU autocast the linear layer before the
// activation and the one after it run in bf16, so bf16 in and out spares two casts of the widest
// activation each way). The arithmetic is fp32 either way.
inline vfloat load_as_float(const float* p) { return load(p); }
inline vfloat load_as_float(const uint16_t* p) { return load_bf16(p); }
inline void store_from_float(float* p, vfloat v) { store(p, v); }
inline void store_from_float(uint16_t* p, vfloat v) { store_bf16(p, v); }
inline float as_float(float x) { return x; }
inline float as_float(uint16_t x) { return bf16_to_float(x); }
inline void assign(float& out, float v) { out = v; }
inline void assign(uint16_t& out, float v) { out = float_to_bf16(v); }

template <class T>
void gelu_of(const GeluParams& p, bool backward) {
  const T* x = static_cast<const T*>(p.x);
  const T* dy = static_cast<const T*>(p.grad_out);
  T* out = static_cast<T*>(p.out);
  const int64_t n = p.count;
  constexpr int64_t kChunk = 16384;  // elements per work item, whole vectors
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunk, end = std::min(n, begin + kChunk);
    int64_t i = begin;
    for (; i + W <= end; i += W) {
      const vfloat xv = load_as_float(x + i);
      const vfloat s = sigmoid_of_slope(xv);
      if (backward) {
        store_from_float(out + i, load_as_float(dy + i) * (s + kGeluSigmoidSlope * xv * s * (1.0f - s)));
      } else {
        store_from_float(out + i, xv * s);
      }
    }
    for (; i < end; ++i) {
      const float xi = as_float(x[i]);
      const float s = sigmoid_of_slope(xi);
      assign(out[i], backward ? as_float(dy[i]) * gelu_grad(xi, s) : xi * s);
    }
  }
}

}  // namespace

void gelu(const GeluParams& p, bool backward) {
  if (p.dtype == DType::bf16) return gelu_of<uint16_t>(p, backward);
  gelu_of<float>(p, backward);
}

}  // namespace stx::kernels::detail::STX_CPU_NAMESPACE
