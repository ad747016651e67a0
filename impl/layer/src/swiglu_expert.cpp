#include "moe/swiglu_expert.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "moe/row_product.hpp"

namespace moe {

float silu(float a) {
  return a / (1.0f + std::exp(-a));
}

void checkExpertShape(const SwiGluExpert& expert, std::int64_t d, std::int64_t index) {
  const std::int64_t h = expert.w1.cols();
  const bool ok = expert.w1.rows() == d && expert.w3.rows() == d && expert.w3.cols() == h &&
                  expert.w2.rows() == h && expert.w2.cols() == d;
  if (!ok) {
    throw std::invalid_argument(
        "moe::Layer: expert " + std::to_string(index) + " must have w1, w3 of d x h and w2 of " +
        "h x d with d = " + std::to_string(d) + "; got w1 " + std::to_string(expert.w1.rows()) +
        "x" + std::to_string(expert.w1.cols()) + ", w3 " + std::to_string(expert.w3.rows()) + "x" +
        std::to_string(expert.w3.cols()) + ", w2 " + std::to_string(expert.w2.rows()) + "x" +
        std::to_string(expert.w2.cols()));
  }
}

void applyExpert(const SwiGluExpert& expert, const float* x, std::int64_t rows, float* y,
                 std::vector<float>& hidden) {
  const std::int64_t d = expert.modelDim();
  const std::int64_t h = expert.hiddenDim();
  hidden.resize(static_cast<std::size_t>(2 * rows * h));
  float* gate = hidden.data();
  float* up = hidden.data() + rows * h;
  rowMajorProduct(x, rows, d, expert.w1.data(), h, gate);
  rowMajorProduct(x, rows, d, expert.w3.data(), h, up);
  for (std::int64_t i = 0; i < rows * h; ++i) gate[i] = silu(gate[i]) * up[i];
  rowMajorProduct(gate, rows, h, expert.w2.data(), d, y);
}

}  // namespace moe
