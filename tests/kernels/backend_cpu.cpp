// The CPU backends of stx_kernel_tests: one per code path this processor runs (portable, AVX2, AVX-512).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "stx/kernels/attention.h"
#include "stx/kernels/error.h"

namespace stx::test {
namespace {

using namespace stx::kernels;

// Host memory: the kernels read and write the floats themselves.
class HostBuffer : public Buffer {
 public:
  explicit HostBuffer(const std::vector<float>& values)
      : Buffer(static_cast<int64_t>(values.size()), DType::f32), values_(values) {}
  void* data() override { return values_.data(); }
  void write(int64_t first, const float* values, int64_t count) override {
    std::copy_n(values, count, values_.begin() + first);
  }
  std::vector<float> read() const override { return values_; }

 private:
  std::vector<float> values_;
};

// One code path, forced for each call and the best one restored after it.
class CpuBackend : public Backend {
 public:
  explicit CpuBackend(CpuIsa isa) : isa_(isa) {}
  std::string name() const override {
    switch (isa_) {
      case CpuIsa::portable: return "cpu_portable";
      case CpuIsa::avx2: return "cpu_avx2";
      case CpuIsa::avx512: return "cpu_avx512";
    }
    return "cpu";
  }
  Device device() const override { return Device::cpu; }
  std::vector<DType> dtypes() const override { return {DType::f32}; }  // the CPU attention kernels are fp32
  std::string unavailable() const override { return ""; }              // listed only where it runs
  Tolerances tolerances(DType) const override { return {kTolerance, kTolerance, false}; }
  std::unique_ptr<Buffer> upload(const std::vector<float>& values, DType dtype) const override {
    STX_KERNEL_CHECK(dtype == DType::f32,
                     std::string("a CPU buffer holds float32, asked for ") + to_string(dtype));
    return std::make_unique<HostBuffer>(values);
  }
  void forward(ForwardParams p) const override {
    ForcedCpuIsa forced(isa_);
    attention_forward(p);
  }
  void backward(BackwardParams p) const override {
    ForcedCpuIsa forced(isa_);
    attention_backward(p);
  }
  void decode(DecodeParams p) const override {
    ForcedCpuIsa forced(isa_);
    attention_decode(p);
  }

 private:
  CpuIsa isa_;
};

}  // namespace

const std::vector<const Backend*>& backends_under_test() {
  // Made once and kept for the whole run: the tests' parameters point at them.
  static const std::vector<const Backend*> backends = [] {
    std::vector<const Backend*> out;
    for (CpuIsa isa : supported_cpu_isas()) out.push_back(new CpuBackend(isa));
    return out;
  }();
  return backends;
}

}  // namespace stx::test
