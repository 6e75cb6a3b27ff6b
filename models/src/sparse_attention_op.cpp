// The autograd binding of the kernels. Nothing here computes attention: it checks tensors, describes
// them to the kernels as plain pointers and strides, and keeps what the backward pass needs.
#include "stx/models/sparse_attention.h"

#include <torch/csrc/autograd/custom_function.h>

#include <string>

#include "stx/kernels/attention.h"
#include "stx/kernels/error.h"

#ifdef STX_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace stx {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

kernels::DType kernel_dtype(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return kernels::DType::f32;
    case at::kHalf: return kernels::DType::f16;
    case at::kBFloat16: return kernels::DType::bf16;
    default:
      throw std::invalid_argument(std::string("sparse_attention: unsupported dtype ") +
                                  std::string(c10::toString(t.scalar_type())) + " (expected float, half or bfloat16)");
  }
}

// [B, H, T, D] strides of a tensor whose last dimension must be contiguous.
kernels::Strides strides_of(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.dim() == 4, "sparse_attention: ", name, " must be [batch, heads, seq, head_dim], got ",
              t.sizes());
  TORCH_CHECK(t.stride(3) == 1 || t.size(3) == 1, "sparse_attention: ", name,
              " must have a contiguous last dimension");
  return kernels::Strides{t.stride(0), t.stride(1), t.stride(2)};
}

// A [B, H, T, D] view of a fresh [B, T, H, D] buffer: what the model reshapes to [B, T, H * D] for free.
at::Tensor empty_bthd(const at::Tensor& like) {
  return at::empty({like.size(0), like.size(2), like.size(1), like.size(3)}, like.options()).transpose(1, 2);
}

struct DeviceScope {
  kernels::Device device = kernels::Device::cpu;
  void* stream = nullptr;
#ifdef STX_TORCH_CUDA
  c10::optional<c10::cuda::CUDAGuard> guard;
#endif
  explicit DeviceScope(const at::Tensor& t) {
    if (t.is_cuda()) {
#ifdef STX_TORCH_CUDA
      guard.emplace(t.device());
      device = kernels::Device::cuda;
      stream = c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
#else
      TORCH_CHECK(false, "sparse_attention: this build has no CUDA LibTorch");
#endif
    } else {
      TORCH_CHECK(t.is_cpu(), "sparse_attention: tensors must be on the CPU or a CUDA device");
    }
  }
};

// The layout cannot travel through AutogradContext (it only holds IValues), so the backward rebuilds it
// from its key; cached_layout makes that a lookup.
std::vector<int64_t> layout_key(const kernels::Layout& layout) {
  std::vector<int64_t> key = {layout.n, layout.block};
  for (const kernels::HeadPattern& h : layout.heads) {
    key.insert(key.end(), {static_cast<int64_t>(h.pattern), h.stride, h.summary, h.summary_offset,
                           static_cast<int64_t>(h.subset)});
  }
  return key;
}

std::shared_ptr<const kernels::Layout> layout_from_key(const std::vector<int64_t>& key) {
  std::vector<kernels::HeadPattern> heads;
  for (size_t i = 2; i + 5 <= key.size(); i += 5) {
    heads.push_back(kernels::HeadPattern{static_cast<kernels::Pattern>(key[i]), key[i + 1], key[i + 2], key[i + 3],
                                         static_cast<kernels::Subset>(key[i + 4])});
  }
  return kernels::cached_layout(key[0], static_cast<int>(key[1]), heads);
}

void check_inputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const kernels::Layout& layout) {
  TORCH_CHECK(q.sizes() == k.sizes() && q.sizes() == v.sizes(), "sparse_attention: q ", q.sizes(), ", k ",
              k.sizes(), " and v ", v.sizes(), " must have the same shape");
  TORCH_CHECK(q.scalar_type() == k.scalar_type() && q.scalar_type() == v.scalar_type(),
              "sparse_attention: q, k and v must have the same dtype");
  TORCH_CHECK(q.device() == k.device() && q.device() == v.device(),
              "sparse_attention: q, k and v must be on the same device");
  TORCH_CHECK(q.size(2) == layout.n, "sparse_attention: sequence length ", q.size(2),
              " does not match the layout's n = ", layout.n);
  TORCH_CHECK(q.size(1) == layout.num_heads(), "sparse_attention: ", q.size(1), " heads but the layout has ",
              layout.num_heads());
  TORCH_CHECK(q.is_cuda() || q.scalar_type() == at::kFloat, "sparse_attention: CPU tensors must be float32");
}

// The fields the forward and backward params share: inputs, shapes, dtype, device and layout.
template <class Params>
void describe_inputs(Params& p, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const DeviceScope& scope, const kernels::Layout* layout) {
  p.q = q.data_ptr();
  p.k = k.data_ptr();
  p.v = v.data_ptr();
  p.q_stride = strides_of(q, "q");
  p.k_stride = strides_of(k, "k");
  p.v_stride = strides_of(v, "v");
  p.batch = q.size(0);
  p.heads = q.size(1);
  p.seq_len = q.size(2);
  p.head_dim = q.size(3);
  p.dtype = kernel_dtype(q);
  p.device = scope.device;
  p.stream = scope.stream;
  p.layout = layout;
}

class SparseAttentionFunction : public torch::autograd::Function<SparseAttentionFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            std::shared_ptr<const kernels::Layout> layout) {
    check_inputs(q, k, v, *layout);
    DeviceScope scope(q);
    at::Tensor out = empty_bthd(q);
    at::Tensor lse = at::empty({q.size(0), q.size(1), q.size(2)}, q.options().dtype(at::kFloat));
    kernels::ForwardParams p;
    describe_inputs(p, q, k, v, scope, layout.get());
    p.out = out.data_ptr();
    p.lse = lse.data_ptr<float>();
    p.out_stride = strides_of(out, "out");
    kernels::attention_forward(p);

    ctx->save_for_backward({q, k, v, out, lse});
    ctx->saved_data["layout"] = layout_key(*layout);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &q = saved[0], &k = saved[1], &v = saved[2], &out = saved[3], &lse = saved[4];
    at::Tensor dout = grad_outputs[0];
    if (!dout.defined()) return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    if (dout.stride(3) != 1) dout = dout.contiguous();
    dout = dout.to(q.scalar_type());
    const auto layout = layout_from_key(ctx->saved_data["layout"].toIntVector());

    DeviceScope scope(q);
    at::Tensor dq = empty_bthd(q), dk = empty_bthd(k), dv = empty_bthd(v);
    kernels::BackwardParams p;
    describe_inputs(p, q, k, v, scope, layout.get());
    p.out = out.data_ptr();
    p.dout = dout.data_ptr();
    p.lse = lse.data_ptr<float>();
    p.dq = dq.data_ptr();
    p.dk = dk.data_ptr();
    p.dv = dv.data_ptr();
    p.out_stride = strides_of(out, "out");
    p.dout_stride = strides_of(dout, "grad_out");
    p.dq_stride = strides_of(dq, "dq");
    p.dk_stride = strides_of(dk, "dk");
    p.dv_stride = strides_of(dv, "dv");
    kernels::attention_backward(p);
    return {dq, dk, dv, at::Tensor()};
  }
};

}  // namespace

at::Tensor sparse_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            std::shared_ptr<const kernels::Layout> layout) {
  TORCH_CHECK(layout != nullptr, "sparse_attention: no layout");
  return SparseAttentionFunction::apply(q, k, v, std::move(layout));
}

at::Tensor sparse_attention_decode(const at::Tensor& q, const at::Tensor& k_cache, const at::Tensor& v_cache,
                                   int64_t position, const std::vector<kernels::HeadPattern>& patterns,
                                   at::Tensor* lse) {
  TORCH_CHECK(q.dim() == 3, "sparse_attention_decode: q must be [batch, heads, head_dim], got ", q.sizes());
  TORCH_CHECK(q.stride(2) == 1, "sparse_attention_decode: q must have a contiguous last dimension");
  TORCH_CHECK(static_cast<int64_t>(patterns.size()) == q.size(1), "sparse_attention_decode: ", q.size(1),
              " heads but ", patterns.size(), " patterns");
  TORCH_CHECK(k_cache.scalar_type() == q.scalar_type() && v_cache.scalar_type() == q.scalar_type(),
              "sparse_attention_decode: q and the caches must have the same dtype");
  const kernels::Strides ks = strides_of(k_cache, "k_cache");
  const kernels::Strides vs = strides_of(v_cache, "v_cache");
  DeviceScope scope(q);
  at::Tensor out = at::empty_like(q, at::MemoryFormat::Contiguous);
  at::Tensor lse_out;
  if (lse) lse_out = at::empty({q.size(0), q.size(1)}, q.options().dtype(at::kFloat));
  kernels::DecodeParams p;
  p.q = q.data_ptr();
  p.k_cache = k_cache.data_ptr();
  p.v_cache = v_cache.data_ptr();
  p.out = out.data_ptr();
  p.lse = lse ? lse_out.data_ptr<float>() : nullptr;
  p.q_stride = kernels::Strides{q.stride(0), q.stride(1), 0};
  p.k_stride = ks;
  p.v_stride = vs;
  p.out_stride = kernels::Strides{out.stride(0), out.stride(1), 0};
  p.batch = q.size(0);
  p.heads = q.size(1);
  p.head_dim = q.size(2);
  p.capacity = k_cache.size(2);
  p.position = position;
  p.dtype = kernel_dtype(q);
  p.device = scope.device;
  p.stream = scope.stream;
  p.patterns = patterns.data();
  kernels::attention_decode(p);
  if (lse) *lse = lse_out;
  return out;
}

}  // namespace stx
