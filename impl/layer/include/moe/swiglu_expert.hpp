// One SwiGLU expert: expert(x) = W2 (silu(W1 x) ⊙ W3 x), tokens as rows.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace moe {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Weights of one expert, stored for row tokens: with x a row of length d,
/// W1 x is the row x * w1 (w1 is d x h), likewise w3 (d x h); w2 is h x d.
struct SwiGluExpert {
  RowMatrix w1;
  RowMatrix w3;
  RowMatrix w2;

  std::int64_t modelDim() const { return w1.rows(); }
  std::int64_t hiddenDim() const { return w1.cols(); }
};

/// silu(a) = a / (1 + exp(-a)) in binary32 with the host expf.
float silu(float a);

/// Throws std::invalid_argument unless w1, w3 are d x h and w2 is h x d for the given d.
void checkExpertShape(const SwiGluExpert& expert, std::int64_t d, std::int64_t index);

/// Y (rows x d) = expert(X) for X (rows x d), both dense row-major. `hidden` is scratch,
/// resized as needed. Row r of Y depends only on row r of X (see row_product.hpp).
void applyExpert(const SwiGluExpert& expert, const float* x, std::int64_t rows, float* y,
                 std::vector<float>& hidden);

}  // namespace moe
