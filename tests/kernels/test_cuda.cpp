// CUDA tests that are not attention cases: those run on the CUDA backend like on every other backend
// (test_attention.cpp, test_decode.cpp, with the tolerances of backend_cuda.cpp).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backend.h"
#include "stx/kernels/activation.h"
#include "stx/kernels/attention.h"
#include "test_util.h"

namespace {

using namespace stx::kernels;
using stx::test::to_double;

// The fused activation: CUDA against the CPU kernel, both given the inputs rounded to the dtype, within the
// CUDA backend's bound for the dtype.
TEST(CudaGelu, ForwardAndBackwardMatchTheCpuKernel) {
  const stx::test::Backend& cuda = stx::test::cuda_backend();
  const std::string why = cuda.unavailable();
  if (!why.empty()) GTEST_SKIP() << why;
  const int64_t count = 100003;  // not a multiple of any block size
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x_in(count), dy_in(count);
  for (float& v : x_in) v = normal(rng);
  for (float& v : dy_in) v = normal(rng);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    SCOPED_TRACE(to_string(dtype));
    const auto x = cuda.upload(x_in, dtype), dy = cuda.upload(dy_in, dtype);
    const auto out = cuda.upload(std::vector<float>(count, NAN), dtype);
    const std::vector<float> x_rounded = x->read(), dy_rounded = dy->read();
    std::vector<float> cpu_y(count), cpu_dx(count);
    GeluParams p;
    p.x = x_rounded.data();
    p.out = cpu_y.data();
    p.count = count;
    gelu_forward(p);
    p.grad_out = dy_rounded.data();
    p.out = cpu_dx.data();
    gelu_backward(p);

    GeluParams g;
    g.x = x->data();
    g.out = out->data();
    g.count = count;
    g.dtype = dtype;
    g.device = Device::cuda;
    gelu_forward(g);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const stx::test::Tolerance tol = cuda.tolerances(dtype).values;
    EXPECT_TRUE(
        stx::test::matches_reference("gelu forward", to_double(out->read()), to_double(cpu_y), {count}, tol));
    g.grad_out = dy->data();
    gelu_backward(g);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(stx::test::matches_reference("gelu backward", to_double(out->read()), to_double(cpu_dx),
                                             {count}, tol));
  }
}

}  // namespace
