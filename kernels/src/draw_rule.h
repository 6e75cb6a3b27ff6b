// The sampling rule of draw_bytes (stx/kernels/sampling.h) in pieces that the CPU loop and the CUDA kernel
// (one thread block per row) both run: the CUDA kernel computes the ranks and probabilities a thread per
// byte and the sums on one thread, in the order the CPU adds them, so both give the same byte.
#pragma once

#include <cstdint>

#include "cuda/mma_fragments.h"  // STX_HOST_DEVICE
#include "stx/kernels/sampling.h"

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

namespace stx::kernels::draw {

// The logit of byte i of a row, the expert's product formed as ExpertDecoder forms it.
STX_HOST_DEVICE float logit_of(const DrawParams& p, int64_t row, int i) {
  const int64_t at = row * p.logits_stride + i;
  if (p.mix_log_probs == nullptr) return p.logits[at];
  return *p.network_weight * p.logits[at] + *p.expert_weight * p.mix_log_probs[at];
}

// Whether the bytes are walked ranked (top-k or top-p cut the list) or in byte order.
STX_HOST_DEVICE bool ranked(const DrawParams& p) { return (p.top_k > 0 && p.top_k < 256) || p.top_p < 1.0; }

// Byte i's rank among the row's logits: larger ones first, equal ones in byte order.
STX_HOST_DEVICE int rank_of(const float* logits, int i) {
  int rank = 0;
  const float x = logits[i];
  for (int j = 0; j < 256; ++j) rank += (logits[j] > x) || (logits[j] == x && j < i);
  return rank;
}

// The first byte of the largest logit.
STX_HOST_DEVICE int first_maximum(const float* logits) {
  int best = 0;
  for (int j = 1; j < 256; ++j) best = logits[j] > logits[best] ? j : best;
  return best;
}

// p of a byte with logit x, relative to the most likely byte's (top), with min_p's floor.
STX_HOST_DEVICE double probability_of(const DrawParams& p, float x, double top) {
#if defined(__CUDA_ARCH__)
  const double v = exp((static_cast<double>(x) - top) / p.temperature);
#else
  const double v = std::exp((static_cast<double>(x) - top) / p.temperature);
#endif
  return v < p.min_p ? 0.0 : v;
}

// The walk over probabilities by rank (prob[r]) and the byte at each rank (order[r]): the cut, then the
// inverse CDF at u. Sums in rank order.
STX_HOST_DEVICE int64_t walk(const DrawParams& p, const double* prob, const int* order, double u) {
  double total = 0.0;
  for (int r = 0; r < 256; ++r) total += prob[r];
  int kept = p.top_k > 0 ? static_cast<int>(p.top_k) : 256;
  if (p.top_p < 1.0) {
    double cumulative = 0.0;
    for (int r = 0; r < kept; ++r) {
      cumulative += prob[r] / total;
      if (cumulative >= p.top_p) {
        kept = r + 1;
        break;
      }
    }
  }
  double kept_total = 0.0;
  for (int r = 0; r < kept; ++r) kept_total += prob[r];
  double target = u * kept_total;
  for (int r = 0; r < kept; ++r) {
    target -= prob[r];
    if (target < 0.0) return order[r];
  }
  for (int r = kept - 1; r > 0; --r) {  // u * total rounded up to the very end
    if (prob[r] > 0.0) return order[r];
  }
  return order[0];
}

}  // namespace stx::kernels::draw
