// The autograd binding of the kernels. Nothing here computes attention: it checks tensors, describes
// them to the kernels as plain pointers and strides, and keeps what the backward pass needs.
#include "stx/models/sparse_attention.h"

#include <torch/csrc/autograd/custom_function.h>

#include <array>
#include <string>
#include <utility>

#include "stx/kernels/attention.h"
#include "stx/kernels/error.h"
#include "torch_kernel_bridge.h"

namespace stx {
namespace {

using detail::DeviceScope;
using detail::kernel_dtype;

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

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

// Runs the forward kernel; returns {out, lse}.
std::pair<at::Tensor, at::Tensor> run_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                              const kernels::Layout& layout) {
  check_inputs(q, k, v, layout);
  DeviceScope scope(q);
  at::Tensor out = empty_bthd(q);
  at::Tensor lse = at::empty({q.size(0), q.size(1), q.size(2)}, q.options().dtype(at::kFloat));
  kernels::ForwardParams p;
  describe_inputs(p, q, k, v, scope, &layout);
  p.out = out.data_ptr();
  p.lse = lse.data_ptr<float>();
  p.out_stride = strides_of(out, "out");
  kernels::attention_forward(p);
  return {out, lse};
}

// Runs the backward kernel, writing the gradients into dq, dk and dv (any views with a contiguous last
// dimension: three fresh buffers, or the slices of one packed [B, T, 3, H, D] gradient).
void run_backward(const variable_list& saved_qkv_out_lse, at::Tensor dout, const kernels::Layout& layout,
                  const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv) {
  const at::Tensor &q = saved_qkv_out_lse[0], &k = saved_qkv_out_lse[1], &v = saved_qkv_out_lse[2];
  const at::Tensor &out = saved_qkv_out_lse[3], &lse = saved_qkv_out_lse[4];
  if (dout.stride(3) != 1) dout = dout.contiguous();
  dout = dout.to(q.scalar_type());
  DeviceScope scope(q);
  kernels::BackwardParams p;
  describe_inputs(p, q, k, v, scope, &layout);
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
}

class SparseAttentionFunction : public torch::autograd::Function<SparseAttentionFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            std::shared_ptr<const kernels::Layout> layout) {
    auto [out, lse] = run_forward(q, k, v, *layout);
    ctx->save_for_backward({q, k, v, out, lse});
    ctx->saved_data["layout"] = layout_key(*layout);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    if (!grad_outputs[0].defined()) return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    const variable_list saved = ctx->get_saved_variables();
    const auto layout = layout_from_key(ctx->saved_data["layout"].toIntVector());
    at::Tensor dq = empty_bthd(saved[0]), dk = empty_bthd(saved[1]), dv = empty_bthd(saved[2]);
    run_backward(saved, grad_outputs[0], *layout, dq, dk, dv);
    return {dq, dk, dv, at::Tensor()};
  }
};

// The [B, H, T, D] views of q, k and v inside a packed [B, T, 3, H, D] tensor.
std::array<at::Tensor, 3> unpack_qkv(const at::Tensor& qkv) {
  return {qkv.select(2, 0).transpose(1, 2), qkv.select(2, 1).transpose(1, 2), qkv.select(2, 2).transpose(1, 2)};
}

// The same op on the packed projection output. Its backward writes dq, dk and dv straight into one
// packed gradient: with three separate inputs, autograd would scatter each into a zeroed tensor of the
// packed shape and add the three (about ten passes over it per layer).
class PackedSparseAttentionFunction : public torch::autograd::Function<PackedSparseAttentionFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& qkv, std::shared_ptr<const kernels::Layout> layout) {
    const auto [q, k, v] = unpack_qkv(qkv);
    auto [out, lse] = run_forward(q, k, v, *layout);
    ctx->save_for_backward({q, k, v, out, lse});
    ctx->saved_data["layout"] = layout_key(*layout);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    if (!grad_outputs[0].defined()) return {at::Tensor(), at::Tensor()};
    const variable_list saved = ctx->get_saved_variables();
    const auto layout = layout_from_key(ctx->saved_data["layout"].toIntVector());
    const at::Tensor& q = saved[0];  // [B, H, T, D]
    at::Tensor grad = at::empty({q.size(0), q.size(2), 3, q.size(1), q.size(3)}, q.options());
    const auto [dq, dk, dv] = unpack_qkv(grad);
    run_backward(saved, grad_outputs[0], *layout, dq, dk, dv);
    return {grad, at::Tensor()};
  }
};

}  // namespace

at::Tensor sparse_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            std::shared_ptr<const kernels::Layout> layout) {
  TORCH_CHECK(layout != nullptr, "sparse_attention: no layout");
  return SparseAttentionFunction::apply(q, k, v, std::move(layout));
}

at::Tensor sparse_attention_packed(const at::Tensor& qkv, std::shared_ptr<const kernels::Layout> layout) {
  TORCH_CHECK(layout != nullptr, "sparse_attention_packed: no layout");
  TORCH_CHECK(qkv.dim() == 5 && qkv.size(2) == 3, "sparse_attention_packed: qkv must be [batch, seq, 3, heads, "
              "head_dim], got ", qkv.sizes());
  return PackedSparseAttentionFunction::apply(qkv, std::move(layout));
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
  p.cache_dtype = p.dtype;  // checked above: the caches have q's dtype
  p.device = scope.device;
  p.stream = scope.stream;
  p.patterns = patterns.data();
  kernels::attention_decode(p);
  if (lse) *lse = lse_out;
  return out;
}

}  // namespace stx
