// The CUDA kernels against the CPU kernels (fp32), on awkward sizes, for fp32, fp16 and bf16 inputs.
//
// Both sides see the same numbers: inputs are drawn in fp32, rounded to the dtype under test, and the
// rounded values go to the CPU. For the backward both sides also get the same out and lse (the CPU
// forward's, out rounded to the dtype), so each check measures one kernel.
//
// Tolerances are normalised mean squared errors relative to the CPU result,
//   nmse = sum (gpu - cpu)^2 / sum cpu^2:
//   fp32 1e-8   (summation order and fast exp only; the attention bound in style.md is 5e-4)
//   fp16 1e-5   (one rounding of the result to fp16 is about 1e-7)
//   bf16 1e-4   (one rounding to bf16 is about 5e-6)
// and the log-sum-exp to 1e-4 absolute, where -inf (a row with no keys) must match exactly.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "stx/kernels/activation.h"
#include "stx/kernels/attention.h"
#include "stx/kernels/layout.h"
#include "stx/kernels/pattern.h"

namespace {

using namespace stx::kernels;

#define STX_SKIP_WITHOUT_CUDA()                                                     \
  do {                                                                              \
    if (!cuda_device_available())                                                   \
      GTEST_SKIP() << "no CUDA device: the CUDA kernels were compiled but not run"; \
  } while (0)

#define STX_TEST_CUDA(call)                                                        \
  do {                                                                             \
    const cudaError_t status = (call);                                             \
    ASSERT_EQ(status, cudaSuccess) << #call << ": " << cudaGetErrorString(status); \
  } while (0)

struct Case {
  const char* name;
  int64_t n;
  int64_t head_dim;
  Pattern pattern;
  Combination mode;
  int64_t l, c;
  int block;
  int heads;
  int layer;         // interleaved: odd layers use A2
  bool heads_inner;  // q, k, v, out laid out [batch, seq, heads, dim] instead of [batch, heads, seq, dim]
};

// l and c are never multiples of B except where a case says so; n covers 1, 7, 113, 1000 and 4097.
const Case kCases[] = {
    {"dense_n1", 1, 64, Pattern::dense, Combination::merged, 0, 0, 64, 2, 0, false},
    {"dense_n7_d32", 7, 32, Pattern::dense, Combination::merged, 0, 0, 16, 3, 0, true},
    {"dense_n1000_d128", 1000, 128, Pattern::dense, Combination::merged, 0, 0, 64, 2, 0, false},
    {"strided_merged_n113", 113, 64, Pattern::strided, Combination::merged, 10, 0, 16, 3, 0, false},
    {"strided_merged_n1000_d32", 1000, 32, Pattern::strided, Combination::merged, 30, 0, 32, 2, 0, true},
    {"strided_interleaved_a1_n113", 113, 128, Pattern::strided, Combination::interleaved, 11, 0, 32, 2, 0,
     false},
    {"strided_interleaved_a2_n1000", 1000, 64, Pattern::strided, Combination::interleaved, 33, 0, 64, 2, 1,
     false},
    {"strided_multihead_n1000", 1000, 64, Pattern::strided, Combination::multihead, 30, 0, 16, 4, 0, false},
    {"strided_merged_n4097", 4097, 64, Pattern::strided, Combination::merged, 64, 0, 64, 2, 0, false},
    {"strided_merged_n113_d256", 113, 256, Pattern::strided, Combination::merged, 12, 0, 32, 2, 0, false},
    {"fixed_merged_n1000_d128", 1000, 128, Pattern::fixed, Combination::merged, 40, 7, 32, 2, 0, false},
    {"fixed_multihead_n1000_d32", 1000, 32, Pattern::fixed, Combination::multihead, 48, 12, 16, 4, 0, true},
    {"fixed_interleaved_a1_n113", 113, 64, Pattern::fixed, Combination::interleaved, 20, 6, 16, 2, 0, false},
    {"fixed_interleaved_a2_n113", 113, 64, Pattern::fixed, Combination::interleaved, 20, 6, 16, 2, 1, false},
    {"fixed_a2_no_keys_n7", 7, 64, Pattern::fixed, Combination::interleaved, 16, 4, 16, 2, 1, false},
    {"fixed_merged_n4097_d32", 4097, 32, Pattern::fixed, Combination::merged, 128, 32, 128, 2, 0, false},
};
constexpr int64_t kBatch = 2;

struct CudaCase {
  Case shape;
  DType dtype;
};

// gtest prints this instead of the parameter's raw bytes.
void PrintTo(const CudaCase& c, std::ostream* os) { *os << c.shape.name << " " << to_string(c.dtype); }

std::string case_name(const testing::TestParamInfo<CudaCase>& info) {
  return std::string(info.param.shape.name) + "_" + to_string(info.param.dtype);
}

std::vector<CudaCase> all_cases() {
  std::vector<CudaCase> out;
  for (const Case& c : kCases)
    for (DType t : {DType::f32, DType::f16, DType::bf16}) out.push_back({c, t});
  return out;
}

// ---- host-side dtype conversion -------------------------------------------------------------------

std::vector<unsigned char> encode(const std::vector<float>& x, DType dtype) {
  std::vector<unsigned char> bytes(x.size() * dtype_size(dtype));
  for (size_t i = 0; i < x.size(); ++i) {
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

// Values exactly representable in the dtype, so that the CPU sees what the GPU sees.
std::vector<float> random_values(size_t count, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(count);
  for (float& v : x) v = normal(rng);
  return decode_bytes(encode(x, dtype), dtype);
}

std::vector<float> round_to(const std::vector<float>& x, DType dtype) {
  return decode_bytes(encode(x, dtype), dtype);
}

// ---- device buffers -------------------------------------------------------------------------------

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (cudaMalloc(&data_, bytes == 0 ? 1 : bytes) != cudaSuccess) data_ = nullptr;
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return data_; }
  float* floats() const { return static_cast<float*>(data_); }
  void upload(const std::vector<unsigned char>& bytes) {
    ASSERT_NE(data_, nullptr);
    ASSERT_EQ(cudaMemcpy(data_, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> bytes(bytes_);
    EXPECT_EQ(cudaMemcpy(bytes.data(), data_, bytes_, cudaMemcpyDeviceToHost), cudaSuccess);
    return bytes;
  }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

// A tensor [batch, heads, seq, dim] on the device in the case's memory order, filled with `values`
// (given contiguous [batch, heads, seq, dim]). Padded with NaN so that a stray read shows.
struct DeviceTensor {
  DeviceTensor(const Case& c, DType dtype, int64_t seq)
      : strides(c.heads_inner ? Strides{seq * c.heads * c.head_dim, c.head_dim, c.heads * c.head_dim}
                              : Strides::contiguous(c.heads, seq, c.head_dim)),
        dtype(dtype),
        shape(c),
        seq(seq),
        buffer(static_cast<size_t>(kBatch * c.heads * seq * c.head_dim) * dtype_size(dtype)) {}

  size_t offset(int64_t b, int64_t h, int64_t i) const {
    return static_cast<size_t>(b * strides.batch + h * strides.head + i * strides.seq);
  }
  void upload(const std::vector<float>& values) {
    std::vector<float> ordered(values.size());
    size_t at = 0;
    for (int64_t b = 0; b < kBatch; ++b)
      for (int64_t h = 0; h < shape.heads; ++h)
        for (int64_t i = 0; i < seq; ++i)
          for (int64_t d = 0; d < shape.head_dim; ++d) ordered[offset(b, h, i) + d] = values[at++];
    buffer.upload(encode(ordered, dtype));
  }
  std::vector<float> download() const {
    const std::vector<float> ordered = decode_bytes(buffer.download(), dtype);
    std::vector<float> values(ordered.size());
    size_t at = 0;
    for (int64_t b = 0; b < kBatch; ++b)
      for (int64_t h = 0; h < shape.heads; ++h)
        for (int64_t i = 0; i < seq; ++i)
          for (int64_t d = 0; d < shape.head_dim; ++d) values[at++] = ordered[offset(b, h, i) + d];
    return values;
  }

  Strides strides;
  DType dtype;
  Case shape;
  int64_t seq;
  DeviceBuffer buffer;
};

// ---- comparisons -------------------------------------------------------------------------------------

double squared_norm(const std::vector<float>& x) {
  double norm = 0.0;
  for (float v : x) norm += static_cast<double>(v) * v;
  return norm;
}

// Squared error over squared norm. norm_floor: the squared norm the error is measured against when the
// expected values are smaller, for results that are zero up to rounding (dQ and dK of a query with a single
// key: its softmax weight is exactly 1, so dS = P (dP - delta) cancels), where a plain nmse compares one
// side's rounding noise with the other's.
double nmse(const std::vector<float>& actual, const std::vector<float>& expected, double norm_floor = 0.0) {
  double error = 0.0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double diff = static_cast<double>(actual[i]) - expected[i];
    error += diff * diff;
  }
  return error / std::max({squared_norm(expected), norm_floor, 1e-30});
}

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::f32: return 1e-8;
    case DType::f16: return 1e-5;
    case DType::bf16: return 1e-4;
  }
  return 0.0;
}

void expect_close(const std::vector<float>& actual, const std::vector<float>& expected, DType dtype,
                  const char* what, double norm_floor = 0.0) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) ASSERT_TRUE(std::isfinite(actual[i])) << what << "[" << i << "]";
  EXPECT_LE(nmse(actual, expected, norm_floor), tolerance(dtype)) << what;
}

void expect_lse_close(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isinf(expected[i])) {
      EXPECT_TRUE(std::isinf(actual[i]) && actual[i] < 0)
          << "lse[" << i << "] = " << actual[i] << ", want -inf";
    } else {
      EXPECT_NEAR(actual[i], expected[i], 1e-4) << "lse[" << i << "]";
    }
  }
}

// ---- the CPU side ------------------------------------------------------------------------------------

std::shared_ptr<const Layout> layout_of(const Case& c) {
  return cached_layout(c.n, c.block, layer_patterns(c.pattern, c.l, c.c, c.heads, c.mode, c.layer));
}

void cpu_forward(const Case& c, const Layout* layout, const std::vector<float>& q,
                 const std::vector<float>& k, const std::vector<float>& v, std::vector<float>& out,
                 std::vector<float>& lse) {
  out.assign(q.size(), 0.0f);
  lse.assign(static_cast<size_t>(kBatch * c.heads * c.n), 0.0f);
  ForwardParams p;
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.out = out.data();
  p.lse = lse.data();
  p.q_stride = p.k_stride = p.v_stride = p.out_stride = Strides::contiguous(c.heads, c.n, c.head_dim);
  p.batch = kBatch;
  p.heads = c.heads;
  p.seq_len = c.n;
  p.head_dim = c.head_dim;
  p.layout = layout;
  attention_forward(p);
}

class CudaAttention : public testing::TestWithParam<CudaCase> {
 protected:
  void SetUp() override {
    STX_SKIP_WITHOUT_CUDA();
    STX_TEST_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;  // a non-blocking stream: the kernels must honour p.stream
};

TEST_P(CudaAttention, ForwardMatchesCpu) {
  // given
  const Case& c = GetParam().shape;
  const DType dtype = GetParam().dtype;
  const auto layout = layout_of(c);
  const size_t elements = static_cast<size_t>(kBatch * c.heads * c.n * c.head_dim);
  const std::vector<float> q = random_values(elements, dtype, 1), k = random_values(elements, dtype, 2),
                           v = random_values(elements, dtype, 3);
  std::vector<float> cpu_out, cpu_lse;
  cpu_forward(c, layout.get(), q, k, v, cpu_out, cpu_lse);

  DeviceTensor dq(c, dtype, c.n), dk(c, dtype, c.n), dv(c, dtype, c.n), dout(c, dtype, c.n);
  dq.upload(q);
  dk.upload(k);
  dv.upload(v);
  dout.upload(std::vector<float>(elements, NAN));  // every element must be written
  DeviceBuffer lse(cpu_lse.size() * sizeof(float));

  // when
  ForwardParams p;
  p.q = dq.buffer.get();
  p.k = dk.buffer.get();
  p.v = dv.buffer.get();
  p.out = dout.buffer.get();
  p.lse = lse.floats();
  p.q_stride = dq.strides;
  p.k_stride = dk.strides;
  p.v_stride = dv.strides;
  p.out_stride = dout.strides;
  p.batch = kBatch;
  p.heads = c.heads;
  p.seq_len = c.n;
  p.head_dim = c.head_dim;
  p.dtype = dtype;
  p.device = Device::cuda;
  p.stream = stream_;
  p.layout = layout.get();
  attention_forward(p);
  STX_TEST_CUDA(cudaStreamSynchronize(stream_));

  // then
  expect_close(dout.download(), cpu_out, dtype, "out");
  expect_lse_close(decode_bytes(lse.download(), DType::f32), cpu_lse);
}

TEST_P(CudaAttention, BackwardMatchesCpu) {
  // given: the same q, k, v, dout, out and lse on both sides
  const Case& c = GetParam().shape;
  const DType dtype = GetParam().dtype;
  const auto layout = layout_of(c);
  const size_t elements = static_cast<size_t>(kBatch * c.heads * c.n * c.head_dim);
  const std::vector<float> q = random_values(elements, dtype, 4), k = random_values(elements, dtype, 5),
                           v = random_values(elements, dtype, 6), grad = random_values(elements, dtype, 7);
  std::vector<float> out, lse;
  cpu_forward(c, layout.get(), q, k, v, out, lse);
  out = round_to(out, dtype);

  const Strides contiguous = Strides::contiguous(c.heads, c.n, c.head_dim);
  std::vector<float> cpu_dq(elements), cpu_dk(elements), cpu_dv(elements);
  BackwardParams p;
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.out = out.data();
  p.dout = grad.data();
  p.lse = lse.data();
  p.dq = cpu_dq.data();
  p.dk = cpu_dk.data();
  p.dv = cpu_dv.data();
  p.q_stride = p.k_stride = p.v_stride = p.out_stride = p.dout_stride = contiguous;
  p.dq_stride = p.dk_stride = p.dv_stride = contiguous;
  p.batch = kBatch;
  p.heads = c.heads;
  p.seq_len = c.n;
  p.head_dim = c.head_dim;
  p.layout = layout.get();
  attention_backward(p);

  DeviceTensor gq(c, dtype, c.n), gk(c, dtype, c.n), gv(c, dtype, c.n), gout(c, dtype, c.n),
      ggrad(c, dtype, c.n), gdq(c, dtype, c.n), gdk(c, dtype, c.n), gdv(c, dtype, c.n);
  gq.upload(q);
  gk.upload(k);
  gv.upload(v);
  gout.upload(out);
  ggrad.upload(grad);
  const std::vector<float> poison(elements, NAN);  // the gradients are overwritten, never accumulated into
  gdq.upload(poison);
  gdk.upload(poison);
  gdv.upload(poison);
  DeviceBuffer glse(lse.size() * sizeof(float));
  glse.upload(encode(lse, DType::f32));

  // when
  p.q = gq.buffer.get();
  p.k = gk.buffer.get();
  p.v = gv.buffer.get();
  p.out = gout.buffer.get();
  p.dout = ggrad.buffer.get();
  p.lse = glse.floats();
  p.dq = gdq.buffer.get();
  p.dk = gdk.buffer.get();
  p.dv = gdv.buffer.get();
  p.q_stride = gq.strides;
  p.k_stride = gk.strides;
  p.v_stride = gv.strides;
  p.out_stride = gout.strides;
  p.dout_stride = ggrad.strides;
  p.dq_stride = gdq.strides;
  p.dk_stride = gdk.strides;
  p.dv_stride = gdv.strides;
  p.dtype = dtype;
  p.device = Device::cuda;
  p.stream = stream_;
  attention_backward(p);
  STX_TEST_CUDA(cudaStreamSynchronize(stream_));

  // then
  // dV is never zero by cancellation: its size is the scale of the layer's gradients.
  const double gradient_scale = squared_norm(cpu_dv);
  expect_close(gdq.download(), cpu_dq, dtype, "dq", gradient_scale);
  expect_close(gdk.download(), cpu_dk, dtype, "dk", gradient_scale);
  expect_close(gdv.download(), cpu_dv, dtype, "dv");
}

TEST_P(CudaAttention, DecodeMatchesCpu) {
  // given: a cache with room to spare, and queries at the first, second, a middle and the last position
  const Case& c = GetParam().shape;
  const DType dtype = GetParam().dtype;
  const std::vector<HeadPattern> patterns = layer_patterns(c.pattern, c.l, c.c, c.heads, c.mode, c.layer);
  const int64_t capacity = c.n + 5;
  const size_t cache_elements = static_cast<size_t>(kBatch * c.heads * capacity * c.head_dim);
  const size_t query_elements = static_cast<size_t>(kBatch * c.heads * c.head_dim);
  const std::vector<float> k = random_values(cache_elements, dtype, 8),
                           v = random_values(cache_elements, dtype, 9);
  DeviceTensor gk(c, dtype, capacity), gv(c, dtype, capacity);
  gk.upload(k);
  gv.upload(v);
  const Strides cache_stride = Strides::contiguous(c.heads, capacity, c.head_dim);
  const Strides query_stride{c.heads * c.head_dim, c.head_dim, 0};

  for (int64_t position : {int64_t{0}, std::min<int64_t>(1, c.n - 1), c.n / 2, c.n - 1}) {
    SCOPED_TRACE("position " + std::to_string(position));
    const std::vector<float> q = random_values(query_elements, dtype, 10 + static_cast<uint32_t>(position));
    std::vector<float> cpu_out(query_elements), cpu_lse(static_cast<size_t>(kBatch * c.heads));
    DecodeParams p;
    p.q = q.data();
    p.k_cache = k.data();
    p.v_cache = v.data();
    p.out = cpu_out.data();
    p.lse = cpu_lse.data();
    p.q_stride = p.out_stride = query_stride;
    p.k_stride = p.v_stride = cache_stride;
    p.batch = kBatch;
    p.heads = c.heads;
    p.head_dim = c.head_dim;
    p.capacity = capacity;
    p.position = position;
    p.patterns = patterns.data();
    attention_decode(p);

    DeviceBuffer gq(query_elements * dtype_size(dtype)), gout(query_elements * dtype_size(dtype));
    DeviceBuffer glse(cpu_lse.size() * sizeof(float));
    gq.upload(encode(q, dtype));
    gout.upload(encode(std::vector<float>(query_elements, NAN), dtype));

    // when
    p.q = gq.get();
    p.k_cache = gk.buffer.get();
    p.v_cache = gv.buffer.get();
    p.out = gout.get();
    p.lse = glse.floats();
    p.k_stride = gk.strides;
    p.v_stride = gv.strides;
    p.dtype = dtype;
    p.cache_dtype = dtype;
    p.device = Device::cuda;
    p.stream = stream_;
    attention_decode(p);
    STX_TEST_CUDA(cudaStreamSynchronize(stream_));

    // then
    expect_close(decode_bytes(gout.download(), dtype), cpu_out, dtype, "decode out");
    expect_lse_close(decode_bytes(glse.download(), DType::f32), cpu_lse);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaAttention, testing::ValuesIn(all_cases()), case_name);

// ---- the fused activation: CUDA against the CPU kernel, inputs rounded to the dtype first ------------

TEST(CudaGelu, ForwardAndBackwardMatchTheCpuKernel) {
  STX_SKIP_WITHOUT_CUDA();
  const int64_t count = 100003;  // not a multiple of any block size
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x_in(count), dy_in(count);
  for (float& v : x_in) v = normal(rng);
  for (float& v : dy_in) v = normal(rng);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    SCOPED_TRACE(to_string(dtype));
    const std::vector<float> x = decode_bytes(encode(x_in, dtype), dtype);
    const std::vector<float> dy = decode_bytes(encode(dy_in, dtype), dtype);
    std::vector<float> cpu_y(count), cpu_dx(count);
    GeluParams p;
    p.x = x.data();
    p.out = cpu_y.data();
    p.count = count;
    gelu_forward(p);
    p.grad_out = dy.data();
    p.out = cpu_dx.data();
    gelu_backward(p);

    DeviceBuffer gx(count * dtype_size(dtype)), gdy(count * dtype_size(dtype)), gout(count * dtype_size(dtype));
    gx.upload(encode(x, dtype));
    gdy.upload(encode(dy, dtype));
    GeluParams g;
    g.x = gx.get();
    g.out = gout.get();
    g.count = count;
    g.dtype = dtype;
    g.device = Device::cuda;
    gelu_forward(g);
    STX_TEST_CUDA(cudaDeviceSynchronize());
    expect_close(decode_bytes(gout.download(), dtype), cpu_y, dtype, "gelu forward");
    g.grad_out = gdy.get();
    gelu_backward(g);
    STX_TEST_CUDA(cudaDeviceSynchronize());
    expect_close(decode_bytes(gout.download(), dtype), cpu_dx, dtype, "gelu backward");
  }
}

}  // namespace
