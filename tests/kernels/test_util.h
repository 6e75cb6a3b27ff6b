// Shared helpers of the kernel tests: strided fp32 tensors, the error metrics and their tolerances,
// the CPU code paths to check, and the named cases the forward and backward suites run.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "stx/kernels/attention.h"
#include "stx/kernels/error.h"
#include "stx/kernels/pattern.h"

namespace stx::test {

// ---- Tolerances ------------------------------------------------------------------------------------
// The kernels compute in fp32; the reference computes the same maths in double from the same fp32
// inputs, so the difference is the kernels' own rounding. Every output (out, lse, dq, dk, dv, and decode
// against the full forward) must satisfy both, on every CPU path:
//   nmse = sum (x - ref)^2 / sum ref^2 <= 5e-4         the normalised bound of style.md for attention
//   |x - ref| <= atol + rtol * |ref|, atol = 1e-4, rtol = 1e-3   for every element (llm.c's form)
// Inputs are N(0, 1), so scores scale * q.k have a spread of about 1 and outputs are O(1); fp32 rounding
// of a row sum over up to 4097 keys stays near 1e-6, two orders below these bounds. Non-finite reference
// values (lse = -inf of a row that attends nothing) must be matched exactly and are left out of the nmse.
struct Tolerance {
  double max_nmse = 5e-4;
  double atol = 1e-4;
  double rtol = 1e-3;
};
inline constexpr Tolerance kTolerance{};

// ---- Tensors ---------------------------------------------------------------------------------------
enum class Storage {
  contiguous,  // [B, H, T, D] as Strides::contiguous
  seq_major,  // [B, T, H, D + 8]: a fused-projection style tensor read through strides, with 8 padding floats
};

constexpr int64_t kPadding = 8;

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
      const int64_t row = dim + kPadding;
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
// Names the worst element by its indices so a failure says where to look.
inline ::testing::AssertionResult matches_reference(const std::string& what, const std::vector<double>& got,
                                                    const std::vector<double>& ref,
                                                    const std::vector<int64_t>& shape,
                                                    const Tolerance& tol = kTolerance) {
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
  const double nmse = ref2 > 0.0 ? err2 / ref2 : err2;
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

// ---- Cases -----------------------------------------------------------------------------------------
struct KernelCase {
  int64_t batch = 1, heads = 1, seq_len = 1, head_dim = 32;
  stx::kernels::Pattern pattern = stx::kernels::Pattern::dense;
  int64_t l = 0, c = 0;
  stx::kernels::Combination mode = stx::kernels::Combination::merged;
  int layer = 0;
  int block = 64;
  Storage storage = Storage::contiguous;
  float scale = 0.0f;  // 0: the kernels' default 1/sqrt(head_dim)

  std::vector<stx::kernels::HeadPattern> patterns() const {
    return stx::kernels::layer_patterns(pattern, l, c, static_cast<int>(heads), mode, layer);
  }
  // A test name: letters, digits and underscores only.
  std::string name() const {
    std::ostringstream s;
    s << stx::kernels::to_string(pattern);
    if (pattern != stx::kernels::Pattern::dense) {
      s << "_l" << l;
      if (pattern == stx::kernels::Pattern::fixed) s << "_c" << c;
      s << "_" << stx::kernels::to_string(mode);
      if (mode == stx::kernels::Combination::interleaved) s << layer;
    }
    s << "_n" << seq_len << "_d" << head_dim << "_b" << batch << "h" << heads << "_B" << block;
    if (storage == Storage::seq_major) s << "_strided_bthd";
    if (scale > 0.0f) s << "_scale" << static_cast<int>(scale * 100);
    return s.str();
  }
};

// gtest prints a case by its name in failure messages.
inline void PrintTo(const KernelCase& k, std::ostream* os) { *os << k.name(); }

inline KernelCase make_case(int64_t n, int64_t head_dim, int64_t batch, int64_t heads,
                            stx::kernels::Pattern pattern, int64_t l, int64_t c,
                            stx::kernels::Combination mode, int layer, int block,
                            Storage storage = Storage::contiguous, float scale = 0.0f) {
  KernelCase k;
  k.seq_len = n;
  k.head_dim = head_dim;
  k.batch = batch;
  k.heads = heads;
  k.pattern = pattern;
  k.l = l;
  k.c = c;
  k.mode = mode;
  k.layer = layer;
  k.block = block;
  k.storage = storage;
  k.scale = scale;
  return k;
}

// The forward and backward cases: every pattern in every mode, awkward sizes, l and c that are not
// multiples of B, several heads, batch > 1, non-contiguous strides and an explicit scale.
// Cost: the double reference is O(n^2) mask tests plus O(attended pairs * D), so n = 4097 runs with one
// or two heads in all.
inline std::vector<KernelCase> kernel_cases() {
  using stx::kernels::Combination;
  using stx::kernels::Pattern;
  const Combination merged = Combination::merged, inter = Combination::interleaved,
                    multi = Combination::multihead;
  std::vector<KernelCase> cases = {
      // tiny sequences: one row, and fewer rows than a block
      make_case(1, 32, 2, 3, Pattern::strided, 37, 0, merged, 0, 16),
      make_case(1, 64, 1, 2, Pattern::fixed, 37, 5, multi, 0, 16),
      make_case(7, 64, 2, 2, Pattern::fixed, 6, 2, merged, 0, 16),
      make_case(7, 128, 2, 2, Pattern::dense, 0, 0, merged, 0, 128),
      make_case(7, 32, 1, 2, Pattern::strided, 3, 0, multi, 0, 32),
      make_case(7, 32, 2, 3, Pattern::dense, 0, 0, merged, 0, 16),
      // fixed A2 alone before the first summary cell (cells 12..15 of each 16): no row attends anything, so
      // the heads have no layout parts at all; out = 0, lse = -inf, zero gradients
      make_case(7, 64, 2, 2, Pattern::fixed, 16, 4, inter, 1, 16),
      // n = 113, l = 37, c = 5, B = 16: every mode of both patterns
      make_case(113, 64, 2, 2, Pattern::dense, 0, 0, merged, 0, 32),
      make_case(113, 32, 2, 3, Pattern::strided, 37, 0, merged, 0, 16),
      make_case(113, 32, 2, 3, Pattern::strided, 37, 0, inter, 0, 16),
      make_case(113, 32, 2, 3, Pattern::strided, 37, 0, inter, 1, 16),
      make_case(113, 64, 2, 4, Pattern::strided, 37, 0, multi, 0, 16),
      make_case(113, 32, 2, 3, Pattern::fixed, 37, 5, merged, 0, 16),
      make_case(113, 32, 2, 3, Pattern::fixed, 37, 5, inter, 0, 16),
      make_case(113, 32, 2, 3, Pattern::fixed, 37, 5, inter, 1, 16),
      make_case(113, 64, 2, 4, Pattern::fixed, 37, 5, multi, 0, 16),
      // non-contiguous: a [B, T, H, D + 8] tensor read through strides; one with an explicit scale
      make_case(113, 64, 2, 3, Pattern::fixed, 37, 5, multi, 0, 16, Storage::seq_major),
      make_case(113, 32, 2, 2, Pattern::strided, 37, 0, merged, 0, 32, Storage::seq_major, 0.3f),
      // n = 1000, l = 100, c = 12, B = 32, head_dim 128
      make_case(1000, 128, 2, 2, Pattern::strided, 100, 0, merged, 0, 32),
      make_case(1000, 128, 2, 2, Pattern::strided, 100, 0, inter, 1, 32),
      make_case(1000, 128, 2, 2, Pattern::fixed, 100, 12, merged, 0, 32),
      make_case(1000, 128, 2, 2, Pattern::fixed, 100, 12, inter, 1, 32),
      make_case(1000, 64, 1, 4, Pattern::fixed, 100, 12, multi, 0, 64),
      make_case(1000, 64, 1, 2, Pattern::strided, 31, 0, multi, 0, 64, Storage::seq_major),
      make_case(1000, 32, 1, 2, Pattern::dense, 0, 0, merged, 0, 64),
      // n = 4097: one past a power of two, l near sqrt(n) and not a multiple of B
      make_case(4097, 64, 1, 1, Pattern::dense, 0, 0, merged, 0, 64),
      make_case(4097, 128, 1, 2, Pattern::strided, 65, 0, merged, 0, 64),
      make_case(4097, 64, 2, 1, Pattern::strided, 65, 0, inter, 0, 128),
      make_case(4097, 64, 1, 2, Pattern::fixed, 100, 20, multi, 0, 64),
      make_case(4097, 32, 1, 2, Pattern::fixed, 128, 32, inter, 1, 128),
  };
  return cases;
}

inline std::string case_name(const ::testing::TestParamInfo<KernelCase>& info) { return info.param.name(); }

// Seeds differ per case so the cases do not all share one set of inputs.
inline std::mt19937 case_rng(const KernelCase& k, uint32_t salt) {
  return std::mt19937(static_cast<uint32_t>(std::hash<std::string>{}(k.name())) ^ salt);
}

}  // namespace stx::test
