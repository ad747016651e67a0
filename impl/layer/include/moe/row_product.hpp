// Row-by-row matrix products whose every output row depends only on its own input row.
//
// Why not Eigen's GEMM: Eigen picks its blocking and micro-kernel from the matrix sizes and
// a row's position in a block, so the rounding of one token's result can change with the
// batch it came in. The layer promises bitwise batch invariance (docs/design.md §3 counts a
// token whose output changed with its batch as a violation), so every product here sums
// over the inner dimension in index order, for every row, whatever the batch.
#pragma once

#include <cstdint>

namespace moe {

/// Y (rows x n_out) = X (rows x n_in) * W (n_in x n_out); all three dense row-major.
/// Y[r][j] = ((0 + X[r][0] W[0][j]) + X[r][1] W[1][j]) + ... in index order, exactly,
/// so the result of row r does not depend on the other rows or on `rows`.
void rowMajorProduct(const float* x, std::int64_t rows, std::int64_t nIn, const float* w,
                     std::int64_t nOut, float* y);

}  // namespace moe
