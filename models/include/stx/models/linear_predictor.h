// The audio models' linear-prediction expert: a backward-adaptive linear predictor of the signal, refitted
// from the decoded history, and the distribution it gives the next mu-law byte.
//
//   stx::models::LinearPredictor predictor(config.expert);
//   for (uint8_t byte : history) predictor.push(byte);
//   float log_probs[256];
//   predictor.log_probs(log_probs);   // log p(next byte) under Laplace(mean(), distribution_scale()), by bin
//
// Why an expert: 12 kHz music is locally very predictable from its own last few hundred samples (partials
// are damped sinusoids), which a small network learns slowly and a least-squares fit gets at once: order 256
// scores about 4.0 bits/byte on the held-out corpus, the bundled 2 M-parameter network 5.8. The model then
// multiplies the network's distribution into this one (SparseTransformer, ModelConfig::expert), so the
// network spends itself on what a linear predictor cannot do (when notes start, what comes next).
//
// It is one deterministic function of the byte history, run the same way by the training data path, the
// evaluation, and both decoders. Torch-free: it is plain C++ on one sequence.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace stx::models {

// ModelConfig::expert. order 0: no expert. The defaults are what scored best on 1.6 M samples of the
// classical training corpus (each 65,536-sample window read from its start, as the evaluation reads it):
// order 128 / 256 / 384 / 512 at a 4,096-sample window: 4.65 / 4.32 / 4.12 / 3.97 bits/byte; order 256 at
// windows of 3,072 / 4,096 / 8,192 / 16,384: 4.31 / 4.32 / 4.39 / 4.48 (a short window follows the notes);
// ridge 1e-4 / 1e-5 / 1e-6 / 1e-7 at 16,384: 4.74 / 4.53 / 4.48 / 4.49; scale windows of 16 to 128 within
// 0.02 of each other.
struct LinearExpertConfig {
  int64_t order = 0;              // predictor taps (512 for the bundled audio model)
  int64_t refit_interval = 256;   // samples between least-squares fits
  int64_t window = 4096;          // the fit minimises the squared error over the last `window` samples
  double ridge = 1e-6;            // Tikhonov term, as a fraction of the covariance matrix's trace
  int64_t scale_window = 64;      // the Laplace scale is the mean absolute error of the last N predictions
  bool enabled() const { return order > 0; }
  bool operator==(const LinearExpertConfig& o) const {
    return order == o.order && refit_interval == o.refit_interval && window == o.window && ridge == o.ridge &&
           scale_window == o.scale_window;
  }
};

class LinearPredictor {
 public:
  // The floor every bin's probability is mixed with (p = (1 - 256 f) p_laplace + f): a byte the predictor
  // rules out still costs at most 23 bits, and log p stays finite.
  static constexpr double kProbabilityFloor = 1e-7;
  // Before any prediction error is known.
  static constexpr double kInitialScale = 0.01;
  // A scale below this (about a third of the narrowest mu-law bin) would only sharpen the rounding.
  static constexpr double kMinScale = 5e-5;
  // The distribution's scale is at least this many widths of the mu-law bin holding the prediction, so that
  // no byte takes more than about 64% of the mass. Without it, samples drawn from the model shrink the scale
  // (their errors are smaller than it) until one byte holds all the mass and the sample dies into silence or
  // a held level; with it, 1 of 8 samples of the expert chain died instead of 3 to 8 (docs/model-quality.md).
  static constexpr double kScaleFloorBins = 0.5;
  // The level guard (refit()): the last interval is kRunawayRatio times louder than the fit window's
  // average and louder than kRunawayLevel (-26 dBFS), or it touched kFullScale. Real music starts notes
  // that loud within a quarter of a window now and then; then the fit is merely more damped for one
  // interval. The guarded fit's ridge is kGuardRidgeFactor times the normal one: coefficients shrink
  // towards zero, which pulls the synthesis filter's poles inwards, away from the instability that feeds on
  // the predictor's own output.
  static constexpr double kRunawayRatio = 4.0;
  static constexpr double kRunawayLevel = 0.05;
  static constexpr double kFullScale = 0.999;
  static constexpr double kGuardRidgeFactor = 100.0;
  // scale_feature() = (log(scale) + kFeatureShift) / kFeatureDivisor: about [-2, 2] over music's scales.
  static constexpr double kFeatureShift = 6.0;
  static constexpr double kFeatureDivisor = 3.0;

  explicit LinearPredictor(const LinearExpertConfig& config);

  // Appends the next byte of the history (0..255) and prepares the prediction of the one after it.
  void push(int byte) { push(byte, true); }
  // push() of each of `count` bytes, leaving out the fits that cannot reach the state after the last one
  // (a prediction uses the last fit before it, and the scale only the last scale_window <= refit_interval
  // errors, so fits more than two intervals before the end are overwritten unseen): the same state as
  // pushing them one by one, at a fraction of the cost, for a training crop's long past.
  void push_history(const uint8_t* bytes, int64_t count);
  // Forgets everything: the state of an empty history.
  void reset();

  int64_t count() const { return count_; }  // bytes pushed
  // The prediction of byte count(): its amplitude, the Laplace scale, and the byte the amplitude encodes to.
  double mean() const { return mean_; }
  double scale() const { return scale_; }
  int predicted_byte() const { return predicted_byte_; }
  // log(scale) centred and scaled to about [-2, 2] over the scales music gives: the network's input.
  float scale_feature() const;
  // The scale of the distribution log_probs gives: scale(), but at least kScaleFloorBins widths of the
  // mu-law bin holding mean(). scale() itself stays the errors' mean: it is the network's input.
  double distribution_scale() const;
  // log p of each of the 256 bytes under Laplace(mean(), distribution_scale()) integrated over the byte's
  // mu-law bin, with the probability floor; the probabilities sum to 1.
  void log_probs(float* out) const;
  // The coefficients of the last fit (a[k] multiplies the sample k + 1 back), for tests.
  const std::vector<double>& coefficients() const { return coefficients_; }
  // The absolute errors of the last scale_window predictions, the error of prediction t in slot
  // t mod scale_window (zeros before the first): for DeviceLinearExpert::load.
  const std::vector<double>& error_ring() const { return abs_errors_; }
  // Whether the last fit fell back to the stable one because the level ran away (see refit()).
  bool last_fit_was_guarded() const { return guarded_; }

 private:
  void push(int byte, bool fit);
  void refit();
  void predict();
  double sample(int64_t t) const { return t < 0 ? 0.0 : static_cast<double>(x_[static_cast<size_t>(t - base_)]); }

  LinearExpertConfig config_;
  std::vector<float> x_;     // amplitudes of bytes [base_, count_)
  int64_t base_ = 0, count_ = 0;
  std::vector<double> coefficients_;
  std::vector<double> abs_errors_;  // ring of the last scale_window absolute prediction errors
  int64_t errors_ = 0;
  double mean_ = 0, scale_ = kInitialScale;
  int predicted_byte_ = 128;
  bool guarded_ = false;
  std::vector<double> row_;  // phi(0, k) over the current window, k = 0..order (see push())
  // Scratch of the fit: the (order + 1)^2 correlation matrix and the Cholesky factor.
  std::vector<double> phi_, factor_, rhs_;
};

}  // namespace stx::models
