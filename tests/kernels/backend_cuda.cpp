// The CUDA backend of stx_cuda_tests: device memory in float32, float16 or bfloat16, and the kernels on a
// non-blocking stream, so a kernel that ignored p.stream would race with the copies and fail its checks.
//
// Tolerances: the normalised mean squared error against the reference, by dtype,
//   float32   1e-8   (summation order and fast exp only; the attention bound in style.md is 5e-4)
//   float16   1e-5   (one rounding of the result to fp16 is about 1e-7)
//   bfloat16  1e-4   (one rounding to bf16 is about 5e-6)
// and the log-sum-exp to 1e-4 absolute, where -inf (a row with no keys) must match exactly. The inputs are
// rounded to the dtype before the reference sees them, and the backward gets the reference's out rounded
// to the dtype, so each check measures one kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend.h"
#include "stx/kernels/attention.h"

namespace stx::test {
namespace {

using namespace stx::kernels;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

std::vector<unsigned char> encode(const float* x, int64_t count, DType dtype) {
  std::vector<unsigned char> bytes(static_cast<size_t>(count) * dtype_size(dtype));
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == DType::f32) {
      std::memcpy(bytes.data() + 4 * i, &x[i], 4);
    } else if (dtype == DType::f16) {
      const __half h = __float2half_rn(x[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    } else {
      const __nv_bfloat16 h = __float2bfloat16_rn(x[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

std::vector<float> decode_bytes(const std::vector<unsigned char>& bytes, DType dtype) {
  std::vector<float> x(bytes.size() / dtype_size(dtype));
  for (size_t i = 0; i < x.size(); ++i) {
    if (dtype == DType::f32) {
      std::memcpy(&x[i], bytes.data() + 4 * i, 4);
    } else if (dtype == DType::f16) {
      __half h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      x[i] = __half2float(h);
    } else {
      __nv_bfloat16 h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      x[i] = __bfloat162float(h);
    }
  }
  return x;
}

class DeviceBuffer : public Buffer {
 public:
  DeviceBuffer(const std::vector<float>& values, DType dtype)
      : Buffer(static_cast<int64_t>(values.size()), dtype) {
    check(cudaMalloc(&data_, values.empty() ? 1 : values.size() * dtype_size(dtype)), "cudaMalloc");
    write(0, values.data(), elements());
  }
  ~DeviceBuffer() override { cudaFree(data_); }
  void* data() override { return data_; }
  void write(int64_t first, const float* values, int64_t count) override {
    const std::vector<unsigned char> bytes = encode(values, count, dtype());
    check(cudaMemcpy(element(first), bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
          "cudaMemcpy to the device");
  }
  std::vector<float> read() const override {
    std::vector<unsigned char> bytes(static_cast<size_t>(elements()) * dtype_size(dtype()));
    check(cudaMemcpy(bytes.data(), data_, bytes.size(), cudaMemcpyDeviceToHost),
          "cudaMemcpy from the device");
    return decode_bytes(bytes, dtype());
  }

 private:
  void* data_ = nullptr;
};

class CudaBackend : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  Device device() const override { return Device::cuda; }
  std::vector<DType> dtypes() const override { return {DType::f32, DType::f16, DType::bf16}; }
  std::string unavailable() const override {
    return cuda_device_available() ? "" : "no CUDA device: the CUDA kernels were compiled but not run";
  }
  Tolerances tolerances(DType dtype) const override {
    constexpr double kNoElementBound = std::numeric_limits<double>::infinity();
    const double max_nmse = dtype == DType::f32 ? 1e-8 : dtype == DType::f16 ? 1e-5 : 1e-4;
    return {Tolerance{max_nmse, kNoElementBound, 0.0}, Tolerance{kNoElementBound, 1e-4, 0.0}, true};
  }
  std::unique_ptr<Buffer> upload(const std::vector<float>& values, DType dtype) const override {
    return std::make_unique<DeviceBuffer>(values, dtype);
  }
  void forward(ForwardParams p) const override {
    p.device = Device::cuda;
    p.stream = before_call();
    attention_forward(p);
    synchronize();
  }
  void backward(BackwardParams p) const override {
    p.device = Device::cuda;
    p.stream = before_call();
    attention_backward(p);
    synchronize();
  }
  void decode(DecodeParams p) const override {
    p.device = Device::cuda;
    p.stream = before_call();
    attention_decode(p);
    synchronize();
  }

 private:
  // The stream for the next call. The device is synchronised first: a copy from pageable memory may return
  // before its transfer is done, and a non-blocking stream does not wait for the default stream's work.
  cudaStream_t before_call() const {
    if (stream_ == nullptr)
      check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaDeviceSynchronize(), "the copies before the kernel");
    return stream_;
  }
  void synchronize() const { check(cudaStreamSynchronize(stream_), "the kernel"); }

  mutable cudaStream_t stream_ = nullptr;
};

}  // namespace

const Backend& cuda_backend() {
  static const CudaBackend backend;  // kept for the whole run: the tests' parameters point at it
  return backend;
}

const std::vector<const Backend*>& backends_under_test() {
  static const std::vector<const Backend*> backends = {&cuda_backend()};
  return backends;
}

}  // namespace stx::test
