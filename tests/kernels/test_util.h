// Shared helpers of the kernel tests: strided fp32 tensors, the error metrics and their tolerances, and
// the CPU code paths to check. The attention cases are in attention_cases.h, the backends in backend.h.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "stx/kernels/attention.h"
#include "stx/kernels/error.h"
#include "stx/kernels/pattern.h"

namespace stx::test {

// ---- Tolerances ------------------------------------------------------------------------------------
// The kernels compute in fp32; the reference computes the same maths in double from the same
// inputs, so the difference is the kernels' own rounding. On the CPU every output (out, lse, dq, dk, dv,
// and decode against the full forward) must satisfy both, on every path:
//   nmse = sum (x - ref)^2 / sum ref^2 <= 5e-4         the normalised bound of style.md for attention
//   |x - ref| <= atol + rtol * |ref|, atol = 1e-4, rtol = 1e-3   for every element (llm.c's form)
// Inputs are N(0, 1), so scores scale * q.k have a spread of about 1 and outputs are O(1); fp32 rounding
// of a row sum over up to 4097 keys stays near 1e-6, two orders below these bounds. Non-finite reference
// values (lse = -inf of a row that attends nothing) must be matched exactly and are left out of the nmse.
// A backend whose bound is on the nmse alone (CUDA in fp16) sets atol = infinity and rtol = 0.
struct Tolerance {
  double max_nmse = 5e-4;
  double atol = 1e-4;
  double rtol = 1e-3;
};
inline constexpr Tolerance kTolerance{};

// ---- Tensors ---------------------------------------------------------------------------------------
enum class Storage {
  contiguous,  // [B, H, T, D] as Strides::contiguous
  seq_major,   // [B, T, H, D + 8]: a fused-projection style tensor read through strides, 8 padding floats
  seq_major_unpadded,  // [B, T, H, D]: heads inner, as a [B, T, H * D] projection split into heads
};

constexpr int64_t kPadding = 8;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
// What output padding holds, and must still hold after a kernel ran; exact in float16 and bfloat16 too.
constexpr float kSentinel = 12288.0f;

// An fp32 tensor of logical shape [batch, heads, seq, dim] whose storage may be strided. Padding
// elements hold `padding_value` so a kernel that reads them (NaN) or writes them (a sentinel) shows up.
class Tensor {
 public:
  Tensor(int64_t batch, int64_t heads, int64_t seq, int64_t dim, Storage storage, float padding_value)
      : batch_(batch), heads_(heads), seq_(seq), dim_(dim), padding_value_(padding_value) {
    if (storage == Storage::contiguous) {
      strides_ = stx::kernels::Strides::contiguous(heads, seq, dim);
      data_.assign(static_cast<size_t>(batch * heads * seq * dim), 0.0f);
    } else {
      const int64_t row = dim + (storage == Storage::seq_major ? kPadding : 0);
      strides_ = stx::kernels::Strides{seq * heads * row, row, heads * row};
      data_.assign(static_cast<size_t>(batch * seq * heads * row), padding_value);
    }
  }

  int64_t index(int64_t b, int64_t h, int64_t t, int64_t x) const {
    return b * strides_.batch + h * strides_.head + t * strides_.seq + x;
  }
  float& at(int64_t b, int64_t h, int64_t t, int64_t x) {
    return data_[static_cast<size_t>(index(b, h, t, x))];
  }
  float at(int64_t b, int64_t h, int64_t t, int64_t x) const {
    return data_[static_cast<size_t>(index(b, h, t, x))];
  }
  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  // The whole storage, padding included: what a backend's buffer holds.
  const std::vector<float>& storage() const { return data_; }
  void load(std::vector<float> storage) {
    if (storage.size() != data_.size()) throw std::length_error("Tensor::load: storage of another size");
    data_ = std::move(storage);
  }
  const stx::kernels::Strides& strides() const { return strides_; }
  int64_t elements() const { return batch_ * heads_ * seq_ * dim_; }

  template <typename F>
  void for_each(F f) {
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t h = 0; h < heads_; ++h)
        for (int64_t t = 0; t < seq_; ++t)
          for (int64_t x = 0; x < dim_; ++x) f(at(b, h, t, x));
  }
  void fill_normal(std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for_each([&](float& e) { e = normal(rng); });
  }
  void fill(float value) {
    for_each([&](float& e) { e = value; });
  }
  // From a contiguous [B, H, T, D] double tensor, rounded to fp32.
  void assign(const std::vector<double>& values) {
    size_t e = 0;
    for_each([&](float& x) { x = static_cast<float>(values[e++]); });
  }
  // The logical elements as a contiguous [B, H, T, D] double tensor.
  std::vector<double> to_double() const {
    std::vector<double> out;
    out.reserve(static_cast<size_t>(elements()));
    const_cast<Tensor*>(this)->for_each([&](float& e) { out.push_back(e); });
    return out;
  }
  // Padding elements that no longer hold the padding value (compared bit for bit, so NaN works).
  int64_t padding_changed() const {
    int64_t changed = 0;
    std::vector<char> logical(data_.size(), 0);
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t h = 0; h < heads_; ++h)
        for (int64_t t = 0; t < seq_; ++t)
          for (int64_t x = 0; x < dim_; ++x) logical[static_cast<size_t>(index(b, h, t, x))] = 1;
    for (size_t e = 0; e < data_.size(); ++e) {
      if (logical[e]) continue;
      const bool same = std::isnan(padding_value_) ? std::isnan(data_[e]) : data_[e] == padding_value_;
      changed += same ? 0 : 1;
    }
    return changed;
  }

 private:
  int64_t batch_, heads_, seq_, dim_;
  float padding_value_;
  stx::kernels::Strides strides_;
  std::vector<float> data_;
};

// ---- Error metrics ---------------------------------------------------------------------------------
// Compares got against ref, both contiguous with the given shape (the last entry varies fastest).
// Names the worst element by its indices so a failure says where to look. norm_floor: the squared norm
// the nmse is measured against when sum ref^2 is smaller (for results that are zero up to rounding).
inline ::testing::AssertionResult matches_reference(const std::string& what, const std::vector<double>& got,
                                                    const std::vector<double>& ref,
                                                    const std::vector<int64_t>& shape,
                                                    const Tolerance& tol = kTolerance,
                                                    double norm_floor = 0.0) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure() << what << ": " << got.size() << " values against " << ref.size();
  auto where = [&](size_t e) {
    std::vector<int64_t> idx(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
      idx[d] = static_cast<int64_t>(e) % shape[d];
      e /= static_cast<size_t>(shape[d]);
    }
    std::ostringstream s;
    s << "[";
    for (size_t d = 0; d < idx.size(); ++d) s << (d ? ", " : "") << idx[d];
    s << "]";
    return s.str();
  };
  double err2 = 0.0, ref2 = 0.0, worst_excess = 0.0;
  size_t worst = 0, bad = 0;
  for (size_t e = 0; e < ref.size(); ++e) {
    if (!std::isfinite(ref[e])) {
      if (!(got[e] == ref[e]))
        return ::testing::AssertionFailure()
               << what << " at " << where(e) << ": expected " << ref[e] << ", got " << got[e];
      continue;
    }
    const double err = std::fabs(got[e] - ref[e]);
    const double bound = tol.atol + tol.rtol * std::fabs(ref[e]);
    if (!(err <= bound)) {  // also catches NaN
      const double excess = std::isnan(err) ? std::numeric_limits<double>::infinity() : err / bound;
      if (bad == 0 || excess > worst_excess) worst_excess = excess, worst = e;
      ++bad;
    }
    err2 += (got[e] - ref[e]) * (got[e] - ref[e]);
    ref2 += ref[e] * ref[e];
  }
  const double norm = std::max(ref2, norm_floor);
  const double nmse = norm > 0.0 ? err2 / norm : err2;
  if (bad > 0)
    return ::testing::AssertionFailure()
           << what << ": " << bad << " of " << ref.size()
           << " elements outside atol + rtol * |ref|; worst at " << where(worst) << ": got " << got[worst]
           << ", expected " << ref[worst] << " (nmse " << nmse << ")";
  if (!(nmse <= tol.max_nmse))
    return ::testing::AssertionFailure() << what << ": nmse " << nmse << " > " << tol.max_nmse;
  return ::testing::AssertionSuccess();
}

// The message of the stx::kernels::Error that f throws, or a note that it threw none.
inline std::string error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const stx::kernels::Error& e) {
    return e.what();
  }
  return "<no stx::kernels::Error thrown>";
}

// Succeeds when message holds every one of parts.
inline ::testing::AssertionResult mentions(const std::string& message,
                                           std::initializer_list<const char*> parts) {
  for (const char* part : parts)
    if (message.find(part) == std::string::npos)
      return ::testing::AssertionFailure()
             << "expected the message to mention '" << part << "', got: " << message;
  return ::testing::AssertionSuccess();
}

inline std::vector<double> to_double(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

// ---- Decode ----------------------------------------------------------------------------------------
// A decode call for batch x heads queries of head_dim: q and out contiguous [batch, heads, head_dim], the
// caches contiguous [batch, heads, cache_rows, head_dim] of `capacity` positions (cache_rows = capacity
// in natural order). The caller sets the pointers and the position.
inline stx::kernels::DecodeParams contiguous_decode(int64_t batch, int64_t heads, int64_t head_dim,
                                                    int64_t capacity, int64_t cache_rows,
                                                    const std::vector<stx::kernels::HeadPattern>& patterns) {
  stx::kernels::DecodeParams p;
  p.q_stride = p.out_stride = stx::kernels::Strides{heads * head_dim, head_dim, 0};
  p.k_stride = p.v_stride = stx::kernels::Strides::contiguous(heads, cache_rows, head_dim);
  p.batch = batch;
  p.heads = heads;
  p.head_dim = head_dim;
  p.capacity = capacity;
  p.patterns = patterns.data();
  return p;
}

// ---- CPU paths -------------------------------------------------------------------------------------
// Every path this processor runs: avx512 implies avx2, which implies portable.
inline std::vector<stx::kernels::CpuIsa> supported_cpu_isas() {
  using stx::kernels::CpuIsa;
  std::vector<CpuIsa> out = {CpuIsa::portable};
  const CpuIsa best = stx::kernels::best_cpu_isa();
  if (best == CpuIsa::avx2 || best == CpuIsa::avx512) out.push_back(CpuIsa::avx2);
  if (best == CpuIsa::avx512) out.push_back(CpuIsa::avx512);
  return out;
}

// Forces one path for the lifetime of the object, then restores the best one, even when a check fails.
class ForcedCpuIsa {
 public:
  explicit ForcedCpuIsa(stx::kernels::CpuIsa isa) { stx::kernels::force_cpu_isa(isa); }
  ~ForcedCpuIsa() { stx::kernels::force_cpu_isa(stx::kernels::best_cpu_isa()); }
  ForcedCpuIsa(const ForcedCpuIsa&) = delete;
  ForcedCpuIsa& operator=(const ForcedCpuIsa&) = delete;
};

}  // namespace stx::test
