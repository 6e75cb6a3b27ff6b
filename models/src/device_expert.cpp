#include "stx/models/device_expert.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "stx/kernels/linear_expert.h"
#include "stx/models/expert_decoder.h"
#include "stx/models/mulaw.h"
#include "torch_kernel_bridge.h"

namespace stx::models {
namespace {

using P = LinearPredictor;

at::Tensor doubles_of(const double* values, int64_t count, const at::TensorOptions& options) {
  return at::from_blob(const_cast<double*>(values), {count}, at::kDouble).to(options.device()).clone();
}

}  // namespace

DeviceLinearExpert::DeviceLinearExpert(SparseTransformer& model, int64_t batch, int64_t capacity,
                                       const at::Device& device)
    : config_(model->config().expert),
      batch_(batch),
      capacity_(capacity == 0 ? model->config().context : capacity),
      d_(model->config().d_model),
      device_(device),
      doubles_(at::TensorOptions().dtype(at::kDouble).device(device)) {
  if (!config_.enabled() || !model->expert_byte) {
    throw std::invalid_argument("DeviceLinearExpert: the model has no linear-prediction expert");
  }
  if (batch < 1) throw std::invalid_argument("DeviceLinearExpert: batch must be at least 1");
  at::NoGradGuard no_grad;
  const auto& table = mulaw_amplitude_table();
  std::vector<double> amplitudes(table.begin(), table.end());
  amplitude_table_ = doubles_of(amplitudes.data(), 256, doubles_);
  const auto& edges = mulaw_bin_edges();
  edges_ = doubles_of(edges.data(), 257, doubles_);
  std::vector<double> half_widths(256);
  for (size_t b = 0; b < 256; ++b) {
    const size_t bin = std::clamp<size_t>(b, 1, 254);  // the outermost bins reach to infinity
    half_widths[b] = P::kScaleFloorBins * (edges[bin + 1] - edges[bin]);
  }
  half_widths_ = doubles_of(half_widths.data(), 256, doubles_);
  const auto floats = at::TensorOptions().dtype(at::kFloat).device(device);
  byte_embedding_ = model->expert_byte->weight.detach().to(floats).clone();
  scale_map_ = model->expert_scale->weight.detach().reshape({d_}).to(floats).clone();
  network_weight_ = model->network_weight.detach().to(floats).clone();
  expert_weight_ = model->expert_weight.detach().to(floats).clone();

  const int64_t order = config_.order;
  history_ = at::zeros({batch_, order + capacity_}, doubles_);
  coefficients_ = at::zeros({batch_, order}, doubles_);
  coefficients_.select(1, 0).fill_(1.0);  // before any fit: the previous sample (LinearPredictor::reset)
  errors_ = at::zeros({batch_, config_.scale_window}, doubles_);
  mean_ = at::zeros({batch_}, doubles_);
  scale_ = at::full({batch_}, P::kInitialScale, doubles_);
  predicted_ = at::full({batch_}, 128, doubles_.dtype(at::kLong));
  feature_ = at::zeros({batch_}, floats);
  log_probs_ = at::zeros({batch_, 256}, floats);
  rows_ = at::zeros({batch_, d_}, floats);
  counts_on_device_ = at::zeros({batch_}, doubles_.dtype(at::kLong));
}

kernels::ExpertStepParams DeviceLinearExpert::step_params() {
  kernels::ExpertStepParams p;
  p.batch = batch_;
  p.order = config_.order;
  p.scale_window = config_.scale_window;
  p.capacity = capacity_;
  p.d = d_;
  p.history = history_.data_ptr<double>();
  p.coefficients = coefficients_.data_ptr<double>();
  p.errors = errors_.data_ptr<double>();
  p.counts = counts_on_device_.data_ptr<int64_t>();
  p.mean = mean_.data_ptr<double>();
  p.scale = scale_.data_ptr<double>();
  p.predicted = predicted_.data_ptr<int64_t>();
  p.feature = feature_.data_ptr<float>();
  p.log_probs = log_probs_.data_ptr<float>();
  p.embedding_rows = rows_.data_ptr<float>();
  p.byte_embedding = byte_embedding_.data_ptr<float>();
  p.scale_map = scale_map_.data_ptr<float>();
  p.amplitudes = amplitude_table_.data_ptr<double>();
  p.edges = edges_.data_ptr<double>();
  p.half_widths = half_widths_.data_ptr<double>();
  p.min_scale = P::kMinScale;
  p.initial_scale = P::kInitialScale;
  p.probability_floor = P::kProbabilityFloor;
  p.feature_shift = P::kFeatureShift;
  p.feature_divisor = P::kFeatureDivisor;
  const detail::DeviceScope scope(history_);
  p.device = scope.device;
  p.stream = scope.stream;
  return p;
}

void DeviceLinearExpert::load(const ExpertDecoder& decoder) {
  if (decoder.batch() != batch_) {
    throw std::invalid_argument("DeviceLinearExpert::load: the decoder has " +
                                std::to_string(decoder.batch()) + " samples, not " + std::to_string(batch_));
  }
  const int64_t count = decoder.predictor(0).count(), order = config_.order, window = config_.scale_window;
  if (count > capacity_) throw std::out_of_range("DeviceLinearExpert::load: more bytes than the capacity");
  at::NoGradGuard no_grad;
  const auto& table = mulaw_amplitude_table();
  at::Tensor history = at::zeros({batch_, order + capacity_}, at::kDouble);
  at::Tensor coefficients = at::empty({batch_, order}, at::kDouble),
             errors = at::empty({batch_, window}, at::kDouble);
  at::Tensor mean = at::empty({batch_}, at::kDouble);
  for (int64_t b = 0; b < batch_; ++b) {
    const LinearPredictor& p = decoder.predictor(b);
    if (p.count() != count)
      throw std::logic_error("DeviceLinearExpert::load: the samples' predictors disagree");
    const uint8_t* bytes = decoder.history(b);
    double* row = history[b].data_ptr<double>() + order;
    for (int64_t t = 0; t < count; ++t) row[t] = table[bytes[t]];
    std::copy(p.coefficients().begin(), p.coefficients().end(), coefficients[b].data_ptr<double>());
    std::copy(p.error_ring().begin(), p.error_ring().end(), errors[b].data_ptr<double>());
    mean[b] = p.mean();
  }
  history_.copy_(history);
  coefficients_.copy_(coefficients);
  errors_.copy_(errors);
  mean_.copy_(mean);
  count_ = count;
  count_stale_ = true;
  // A fit due at this count was made by the host predictors already.
  fitted_at_ = count % config_.refit_interval == 0 && count >= 2 * order ? count : -1;
}

void DeviceLinearExpert::fill_for_timing(const uint8_t* bytes, int64_t count) {
  if (count < 1 || count > capacity_)
    throw std::out_of_range("DeviceLinearExpert: cannot fill that many bytes");
  at::NoGradGuard no_grad;
  const auto& table = mulaw_amplitude_table();
  at::Tensor row = at::empty({count}, at::kDouble);
  for (int64_t t = 0; t < count; ++t) row[t] = table[bytes[t]];
  history_.narrow(1, config_.order, count).copy_(row.unsqueeze(0).expand({batch_, count}));
  count_ = count;
  count_stale_ = true;
  refit();
}

void DeviceLinearExpert::prepare() {
  if (!count_stale_) return;
  counts_on_device_.fill_(count_);
  count_stale_ = false;
}

void DeviceLinearExpert::restore_count(int64_t count) { count_ = count; }

bool DeviceLinearExpert::refit_due_within(int64_t steps) const { return steps > steps_before_refit(count_); }

int64_t DeviceLinearExpert::steps_before_refit(int64_t position) const {
  const int64_t interval = config_.refit_interval;
  int64_t next = (position / interval + 1) * interval;  // the first multiple after position
  next = std::max(next, (2 * config_.order + interval - 1) / interval * interval);
  return next - position;
}

void DeviceLinearExpert::catch_up(int64_t position, const at::Tensor& first_inputs) {
  prepare();
  // The input of position i is byte i - 1: read it unless it is read already (or is the start token).
  if (count_ == position - 1) {
    push(first_inputs);
  } else if (count_ != position) {
    throw std::logic_error("DeviceLinearExpert: at position " + std::to_string(position) + " after reading " +
                           std::to_string(count_) + " bytes");
  }
  if (count_ % config_.refit_interval == 0 && count_ >= 2 * config_.order && fitted_at_ != count_) refit();
}

void DeviceLinearExpert::predict() {
  prepare();
  kernels::linear_expert_predict(step_params());
}

at::Tensor DeviceLinearExpert::embedding_rows() const { return rows_; }

at::Tensor DeviceLinearExpert::mix(const at::Tensor& network_logits) const {
  return network_weight_ * network_logits + expert_weight_ * log_probs_;
}

void DeviceLinearExpert::push(const at::Tensor& bytes) {
  if (bytes.dim() != 1 || bytes.size(0) != batch_ || bytes.device() != device_) {
    throw std::invalid_argument("DeviceLinearExpert::push: expected [" + std::to_string(batch_) +
                                "] bytes on " + device_.str());
  }
  prepare();
  const at::Tensor b = bytes.to(at::kLong).contiguous();
  kernels::ExpertStepParams p = step_params();
  p.bytes = b.data_ptr<int64_t>();
  kernels::linear_expert_push(p);
  ++count_;
}

void DeviceLinearExpert::refit() {
  at::NoGradGuard no_grad;
  const int64_t p = config_.order, n = p + 1;
  const int64_t t1 = count_, t0 = std::max<int64_t>(0, count_ - config_.window), rows = t1 - t0;
  // X[b][t][j] = x[t0 + t - j] (zero before the first byte); phi = X^T X, phi(j, k) the sum over the window
  // of x[t - j] x[t - k], as LinearPredictor::refit.
  // Amplitude a sits in history column a + p: the windows of n columns from t0 + t, newest last, flipped.
  const at::Tensor x = history_.narrow(1, t0, rows + p).unfold(1, n, 1).flip({2});
  const at::Tensor phi = at::bmm(x.transpose(1, 2), x);
  // The level guard over the last interval.
  const int64_t from = std::max<int64_t>(0, t1 - config_.refit_interval);
  const at::Tensor interval = history_.narrow(1, p + from, t1 - from);
  const at::Tensor recent_rms = at::sqrt(interval.square().sum(1) / static_cast<double>(t1 - from));
  const at::Tensor peak = std::get<0>(interval.abs().max(1));
  const at::Tensor window_rms = at::sqrt(phi.select(1, 0).select(1, 0) / static_cast<double>(rows));
  const at::Tensor guarded = (peak >= P::kFullScale) |
                             ((recent_rms > P::kRunawayLevel) & (recent_rms > P::kRunawayRatio * window_rms));
  const at::Tensor r_matrix = phi.narrow(1, 1, p).narrow(2, 1, p);
  const at::Tensor trace = r_matrix.diagonal(0, 1, 2).sum(1);
  const at::Tensor lambda =
      config_.ridge * at::where(guarded, at::full_like(trace, P::kGuardRidgeFactor), at::ones_like(trace)) *
          trace +
      1e-12;
  const at::Tensor system = r_matrix + lambda.view({batch_, 1, 1}) * at::eye(p, doubles_).unsqueeze(0);
  const auto [factor, info] = at::linalg_cholesky_ex(system);
  const at::Tensor rhs = phi.select(1, 0).narrow(1, 1, p).unsqueeze(2);
  const at::Tensor solved = at::cholesky_solve(rhs, factor).squeeze(2);
  // A fit that broke down keeps the coefficients it had, as the host's does.
  // In place: a captured graph reads these very coefficients.
  coefficients_.copy_(at::where((info == 0).unsqueeze(1), solved, coefficients_));
  fitted_at_ = count_;
}

}  // namespace stx::models
