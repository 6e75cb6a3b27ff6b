// Checks of the double reference that every backend's kernels are compared with.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "reference.h"
#include "stx/kernels/pattern.h"

namespace {

using namespace stx::kernels;

// The forward against the textbook form: a dense [n, n] score matrix, -inf where the pattern masks a pair,
// a softmax per row. Rows with no keys give out = 0 and lse = -inf.
TEST(ForwardReference, MatchesTheMaskedDenseSoftmax) {
  const stx::test::ReferenceShape shape{2, 3, 23, 8, 0.0};
  const std::vector<HeadPattern> patterns = {HeadPattern::fixed(6, 2, Subset::both, 1),
                                             HeadPattern::strided(5), HeadPattern::fixed(6, 2, Subset::a2)};
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> q(static_cast<size_t>(shape.elements())), k(q.size()), v(q.size());
  for (auto* x : {&q, &k, &v})
    for (double& e : *x) e = normal(rng);
  std::vector<double> out, lse;
  stx::test::reference_forward(patterns, shape, q, k, v, out, lse);

  const int64_t T = shape.seq_len, D = shape.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  for (int64_t bh = 0; bh < shape.batch * shape.heads; ++bh) {
    const HeadPattern& pattern = patterns[bh % shape.heads];
    const double* qh = &q[bh * T * D];
    const double* kh = &k[bh * T * D];
    const double* vh = &v[bh * T * D];
    for (int64_t i = 0; i < T; ++i) {
      std::vector<double> score(T, -std::numeric_limits<double>::infinity());
      for (int64_t j = 0; j < T; ++j) {
        if (!attends(pattern, i, j)) continue;
        score[j] = 0.0;
        for (int64_t x = 0; x < D; ++x) score[j] += scale * qh[i * D + x] * kh[j * D + x];
      }
      double sum = 0.0;
      for (double s : score) sum += std::exp(s);
      const double want_lse = std::log(sum);  // -inf for a row with no keys
      EXPECT_EQ(std::isinf(lse[bh * T + i]), std::isinf(want_lse)) << "row " << i;
      if (!std::isinf(want_lse)) {
        EXPECT_NEAR(lse[bh * T + i], want_lse, 1e-12) << "row " << i;
      }
      for (int64_t x = 0; x < D; ++x) {
        double want = 0.0;
        for (int64_t j = 0; j < T; ++j)
          if (sum > 0.0) want += std::exp(score[j]) / sum * vh[j * D + x];
        EXPECT_NEAR(out[(bh * T + i) * D + x], want, 1e-12) << "row " << i << " element " << x;
      }
    }
  }
}

// The reference itself: its analytic gradient agrees with central finite differences of a scalar loss.
// Without this, a wrong reference could agree with an equally wrong kernel.
TEST(BackwardReference, MatchesFiniteDifferences) {
  // the third head has empty rows (fixed A2 alone before the first summary cell)
  const stx::test::ReferenceShape shape{1, 3, 23, 8, 0.0};
  const std::vector<HeadPattern> patterns = {HeadPattern::fixed(6, 2, Subset::both, 1),
                                             HeadPattern::strided(5, Subset::a2),
                                             HeadPattern::fixed(6, 2, Subset::a2)};
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  auto random = [&] {
    std::vector<double> x(static_cast<size_t>(shape.elements()));
    for (double& e : x) e = normal(rng);
    return x;
  };
  std::vector<double> q = random(), k = random(), v = random(), w = random();
  // loss = sum out * w, so dout = w
  auto loss = [&](const std::vector<double>& q2, const std::vector<double>& k2,
                  const std::vector<double>& v2) {
    std::vector<double> out, lse;
    stx::test::reference_forward(patterns, shape, q2, k2, v2, out, lse);
    double s = 0.0;
    for (size_t e = 0; e < out.size(); ++e) s += out[e] * w[e];
    return s;
  };
  std::vector<double> out, lse, dq, dk, dv;
  stx::test::reference_forward(patterns, shape, q, k, v, out, lse);
  stx::test::reference_backward(patterns, shape, q, k, v, out, lse, w, dq, dk, dv);
  const double h = 1e-5;
  auto numeric = [&](std::vector<double>& x, size_t e) {
    const double keep = x[e];
    x[e] = keep + h;
    const double up = loss(q, k, v);
    x[e] = keep - h;
    const double down = loss(q, k, v);
    x[e] = keep;
    return (up - down) / (2 * h);
  };
  for (size_t e = 0; e < q.size(); e += 3) {
    EXPECT_NEAR(dq[e], numeric(q, e), 1e-6) << "dq " << e;
    EXPECT_NEAR(dk[e], numeric(k, e), 1e-6) << "dk " << e;
    EXPECT_NEAR(dv[e], numeric(v, e), 1e-6) << "dv " << e;
  }
}

}  // namespace
