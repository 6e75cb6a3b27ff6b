// The fused activation (see stx/kernels/activation.h), compiled per instruction set next to the
// attention kernels: include after cpu/attention_cpu_impl.h, which brings simd.h into the namespace.
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

}  // namespace

void gelu(const GeluParams& p, bool backward) {
  const float* x = static_cast<const float*>(p.x);
  const float* dy = static_cast<const float*>(p.grad_out);
  float* out = static_cast<float*>(p.out);
  const int64_t n = p.count;
  constexpr int64_t kChunk = 16384;  // floats per work item: 64 KiB, whole vectors
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunk, end = std::min(n, begin + kChunk);
    int64_t i = begin;
    for (; i + W <= end; i += W) {
      const vfloat xv = load(x + i);
      const vfloat s = sigmoid_of_slope(xv);
      if (backward) {
        store(out + i, load(dy + i) * (s + kGeluSigmoidSlope * xv * s * (1.0f - s)));
      } else {
        store(out + i, xv * s);
      }
    }
    for (; i < end; ++i) {
      const float s = sigmoid_of_slope(x[i]);
      out[i] = backward ? dy[i] * gelu_grad(x[i], s) : x[i] * s;
    }
  }
}

}  // namespace stx::kernels::detail::STX_CPU_NAMESPACE
