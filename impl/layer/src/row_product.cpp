#include "moe/row_product.hpp"

#include <algorithm>

namespace moe {
namespace {

// Rows are done four at a time so that each row of W, once loaded, serves four
// accumulations; the j loop is plain elementwise work that the compiler vectorises
// without changing any element's order of summation (contraction is off globally).
constexpr std::int64_t kRowBlock = 4;

void accumulateBlock(const float* x, std::int64_t block_rows, std::int64_t n_in, const float* w,
                     std::int64_t n_out, float* y) {
  for (std::int64_t i = 0; i < n_in; ++i) {
    const float* __restrict w_row = w + i * n_out;
    if (block_rows == kRowBlock) {
      const float a0 = x[0 * n_in + i], a1 = x[1 * n_in + i];
      const float a2 = x[2 * n_in + i], a3 = x[3 * n_in + i];
      float* __restrict y0 = y + 0 * n_out;
      float* __restrict y1 = y + 1 * n_out;
      float* __restrict y2 = y + 2 * n_out;
      float* __restrict y3 = y + 3 * n_out;
      for (std::int64_t j = 0; j < n_out; ++j) {
        const float wj = w_row[j];
        y0[j] += a0 * wj;
        y1[j] += a1 * wj;
        y2[j] += a2 * wj;
        y3[j] += a3 * wj;
      }
    } else {
      for (std::int64_t r = 0; r < block_rows; ++r) {
        const float a = x[r * n_in + i];
        float* __restrict yr = y + r * n_out;
        for (std::int64_t j = 0; j < n_out; ++j) yr[j] += a * w_row[j];
      }
    }
  }
}

}  // namespace

void rowMajorProduct(const float* x, std::int64_t rows, std::int64_t n_in, const float* w,
                     std::int64_t n_out, float* y) {
  std::fill(y, y + rows * n_out, 0.0f);
  for (std::int64_t r0 = 0; r0 < rows; r0 += kRowBlock) {
    const std::int64_t block_rows = std::min(kRowBlock, rows - r0);
    accumulateBlock(x + r0 * n_in, block_rows, n_in, w, n_out, y + r0 * n_out);
  }
}

}  // namespace moe
