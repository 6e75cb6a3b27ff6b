// The backends the attention cases run on, as in ggml's backend-op tests: a case is written once
// (attention_cases.h) and checked on every backend against the double-precision reference (reference.h).
//
// A test program links the backends it checks and defines backends_under_test(): stx_kernel_tests the CPU
// paths this processor has (backend_cpu.cpp), stx_cuda_tests the CUDA device (backend_cuda.cpp, in CUDA
// builds). Both run the same case suites (test_attention.cpp, test_decode.cpp); a test's name ends with
// its case, dtype and device, e.g. strided_l37_merged_n113_d32_b2h3_B16_float16_cuda, and a failure names
// the backend (the CPU path) it happened on.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "attention_cases.h"
#include "stx/kernels/attention.h"
#include "stx/kernels/layout.h"
#include "test_util.h"

namespace stx::test {

// A tensor's whole storage (padding included) in a backend's memory, in one dtype. Tests write and read
// it as floats; what they read back is what the kernels see: the values rounded to the dtype.
class Buffer {
 public:
  Buffer(int64_t elements, stx::kernels::DType dtype) : elements_(elements), dtype_(dtype) {}
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  virtual void* data() = 0;  // what the kernels' params point at
  virtual void write(int64_t first, const float* values,
                     int64_t count) = 0;        // elements [first, first + count)
  virtual std::vector<float> read() const = 0;  // every element

  void* element(int64_t index) {
    return static_cast<char*>(data()) + index * static_cast<int64_t>(stx::kernels::dtype_size(dtype_));
  }
  int64_t elements() const { return elements_; }
  stx::kernels::DType dtype() const { return dtype_; }

 private:
  int64_t elements_;
  stx::kernels::DType dtype_;
};

// How close a backend's results must be to the reference.
struct Tolerances {
  Tolerance values;  // out, dq, dk, dv and decode's out
  Tolerance lse;
  // dq and dk of a query with a single key are zero up to rounding (its softmax weight is exactly 1, so
  // dS = P (dP - delta) cancels). Under an nmse-only bound their error is measured against the size of the
  // layer's gradients, |dv|^2, rather than comparing one side's rounding noise with the other's.
  bool gradients_against_dv = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // in test names: letters, digits and underscores
  virtual stx::kernels::Device device() const = 0;
  virtual std::vector<stx::kernels::DType> dtypes() const = 0;  // what its attention kernels take
  // Empty when the backend can run here, else why not: its tests then skip saying so.
  virtual std::string unavailable() const = 0;
  virtual Tolerances tolerances(stx::kernels::DType dtype) const = 0;
  virtual std::unique_ptr<Buffer> upload(const std::vector<float>& values,
                                         stx::kernels::DType dtype) const = 0;
  // One kernel call on this backend's buffers. Each sets the device, stream and CPU path, and returns
  // when the results are in the buffers.
  virtual void forward(stx::kernels::ForwardParams p) const = 0;
  virtual void backward(stx::kernels::BackwardParams p) const = 0;
  virtual void decode(stx::kernels::DecodeParams p) const = 0;
};

// Defined by each test program: see the top of this file.
const std::vector<const Backend*>& backends_under_test();

// The CUDA backend, for CUDA tests that are not attention cases (backend_cuda.cpp, CUDA builds only).
const Backend& cuda_backend();

// A tensor held by a backend. The host copy holds what the backend holds: after construction the inputs
// rounded to the dtype (so the reference sees what the kernel sees), after read_back() what a kernel wrote.
struct BackendTensor {
  BackendTensor(const Backend& backend, Tensor values, stx::kernels::DType dtype)
      : host(std::move(values)), buffer(backend.upload(host.storage(), dtype)) {
    read_back();
  }
  void* data() { return buffer->data(); }
  const stx::kernels::Strides& strides() const { return host.strides(); }
  void read_back() { host.load(buffer->read()); }

  Tensor host;
  std::unique_ptr<Buffer> buffer;
};

// The forward of case k on tensors a backend holds: writes out and lse.
inline void run_forward(const Backend& backend, const AttentionCase& k, stx::kernels::DType dtype,
                        const stx::kernels::Layout& layout, BackendTensor& q, BackendTensor& key,
                        BackendTensor& value, BackendTensor& out, Buffer& lse) {
  stx::kernels::ForwardParams p;
  p.q = q.data();
  p.k = key.data();
  p.v = value.data();
  p.out = out.data();
  p.lse = static_cast<float*>(lse.data());
  p.q_stride = q.strides();
  p.k_stride = key.strides();
  p.v_stride = value.strides();
  p.out_stride = out.strides();
  p.batch = k.batch;
  p.heads = k.heads;
  p.seq_len = k.seq_len;
  p.head_dim = k.head_dim;
  p.scale = k.scale;
  p.dtype = dtype;
  p.layout = &layout;
  backend.forward(p);
}

// The values a backend holds after uploading `values`: rounded to the dtype.
inline Tensor as_held_by(const Backend& backend, Tensor values, stx::kernels::DType dtype) {
  BackendTensor held(backend, std::move(values), dtype);
  return std::move(held.host);
}

// The backends under test that take a dtype.
inline std::vector<const Backend*> backends_taking(stx::kernels::DType dtype) {
  std::vector<const Backend*> out;
  for (const Backend* backend : backends_under_test()) {
    const std::vector<stx::kernels::DType> dtypes = backend->dtypes();
    if (std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end()) out.push_back(backend);
  }
  return out;
}

// One test: a case in one dtype, checked on every backend under test that takes the dtype (each CPU path in
// stx_kernel_tests, CUDA in stx_cuda_tests) against one reference. The reference is most of a test's time,
// and ctest runs each test in a process of its own: a test per CPU path would compute it once per path.
struct CaseInDtype {
  AttentionCase shape;
  stx::kernels::DType dtype = stx::kernels::DType::f32;

  // <case>_<dtype>_<device>, e.g. strided_l37_merged_n113_d32_b2h3_B16_float16_cuda
  std::string name() const {
    const bool cuda = backends_under_test().front()->device() == stx::kernels::Device::cuda;
    return shape.name() + "_" + stx::kernels::to_string(dtype) + (cuda ? "_cuda" : "_cpu");
  }
};

inline void PrintTo(const CaseInDtype& c, std::ostream* os) { *os << c.name(); }

inline std::string case_in_dtype_name(const ::testing::TestParamInfo<CaseInDtype>& info) {
  return info.param.name();
}

// Every case in every dtype that a backend under test takes.
inline std::vector<CaseInDtype> in_every_dtype(const std::vector<AttentionCase>& cases) {
  std::vector<CaseInDtype> out;
  for (const AttentionCase& c : cases)
    for (stx::kernels::DType dtype :
         {stx::kernels::DType::f32, stx::kernels::DType::f16, stx::kernels::DType::bf16})
      if (!backends_taking(dtype).empty()) out.push_back({c, dtype});
  return out;
}

// The fixture of the case suites. A backend that cannot run here (CUDA without a device) skips the test,
// saying why.
class CaseTest : public ::testing::TestWithParam<CaseInDtype> {
 protected:
  void SetUp() override {
    for (const Backend* backend : backends()) {
      const std::string why = backend->unavailable();
      if (!why.empty()) GTEST_SKIP() << why;
    }
  }
  std::vector<const Backend*> backends() const { return backends_taking(GetParam().dtype); }
};

}  // namespace stx::test
