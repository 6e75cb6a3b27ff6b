// The linear-prediction expert's normal equations, (A + lambda I) a = b for a symmetric positive
// semi-definite A of a few hundred rows, solved by a blocked Cholesky factorisation. Torch-free.
#pragma once

#include <cstdint>
#include <vector>

namespace stx::models {

// A: n x n, row-major with row stride `stride`, only its lower triangle (j <= i) read. `factor` is
// scratch (n * n). Returns false, leaving `a` alone, when the factorisation breaks down (A + lambda I is
// not positive definite to rounding).
bool solve_ridge(const double* matrix, int64_t stride, const double* b, int64_t n, double lambda,
                 std::vector<double>& factor, double* a);

}  // namespace stx::models
