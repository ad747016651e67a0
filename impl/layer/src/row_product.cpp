#include "moe/row_product.hpp"

namespace moe {
namespace {

// A block of kRows rows times a panel of kLanes columns is accumulated in registers over the
// whole inner dimension, then stored: every element is still ((0 + x0 w0) + x1 w1) + ... in
// index order, exactly as the one-row scalar loop computes it (contraction is off
// globally, and GCC's vector extensions round each lane like the scalar operation), so a
// row's result does not depend on which block or panel path computed it.
constexpr std::int64_t kRows = 4;
constexpr std::int64_t kLanes = 8;
using Lanes = float __attribute__((vector_size(kLanes * sizeof(float))));

// Loads and stores go through memcpy (the rows are not aligned to the vector size); they are
// written out where used because a function returning Lanes would change the psABI.
#define MOE_LOAD_LANES(dst, src) __builtin_memcpy(&(dst), (src), sizeof(Lanes))
#define MOE_STORE_LANES(dst, src) __builtin_memcpy((dst), &(src), sizeof(Lanes))

// Full block: kRows rows, columns [j, j + kLanes).
void panelOfFourRows(const float* x, std::int64_t nIn, const float* w, std::int64_t nOut,
                     std::int64_t j, float* y) {
  Lanes acc0 = {}, acc1 = {}, acc2 = {}, acc3 = {};
  for (std::int64_t i = 0; i < nIn; ++i) {
    Lanes wi;
    MOE_LOAD_LANES(wi, w + i * nOut + j);
    acc0 += x[0 * nIn + i] * wi;
    acc1 += x[1 * nIn + i] * wi;
    acc2 += x[2 * nIn + i] * wi;
    acc3 += x[3 * nIn + i] * wi;
  }
  MOE_STORE_LANES(y + 0 * nOut + j, acc0);
  MOE_STORE_LANES(y + 1 * nOut + j, acc1);
  MOE_STORE_LANES(y + 2 * nOut + j, acc2);
  MOE_STORE_LANES(y + 3 * nOut + j, acc3);
}

// One row, columns [j, j + kLanes).
void panelOfOneRow(const float* x, std::int64_t nIn, const float* w, std::int64_t nOut,
                   std::int64_t j, float* y) {
  Lanes acc = {};
  for (std::int64_t i = 0; i < nIn; ++i) {
    Lanes wi;
    MOE_LOAD_LANES(wi, w + i * nOut + j);
    acc += x[i] * wi;
  }
  MOE_STORE_LANES(y + j, acc);
}

// One row, one column: the tail past the last full panel.
void singleColumn(const float* x, std::int64_t nIn, const float* w, std::int64_t nOut,
                  std::int64_t j, float* y) {
  float acc = 0.0f;
  for (std::int64_t i = 0; i < nIn; ++i) acc += x[i] * w[i * nOut + j];
  y[j] = acc;
}

}  // namespace

void rowMajorProduct(const float* x, std::int64_t rows, std::int64_t nIn, const float* w,
                     std::int64_t nOut, float* y) {
  const std::int64_t fullPanelsEnd = nOut - nOut % kLanes;
  const std::int64_t fullBlocksEnd = rows - rows % kRows;
  // Panels outermost: a panel of W (n_in x kLanes floats) is read from memory once and then
  // served from L1 to every row block, so W traffic does not grow with the row count. This
  // matters for the sparse forward, whose expert groups are small.
  for (std::int64_t j = 0; j < fullPanelsEnd; j += kLanes) {
    for (std::int64_t r = 0; r < fullBlocksEnd; r += kRows) {
      panelOfFourRows(x + r * nIn, nIn, w, nOut, j, y + r * nOut);
    }
    for (std::int64_t r = fullBlocksEnd; r < rows; ++r) {
      panelOfOneRow(x + r * nIn, nIn, w, nOut, j, y + r * nOut);
    }
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = fullPanelsEnd; j < nOut; ++j) {
      singleColumn(x + r * nIn, nIn, w, nOut, j, y + r * nOut);
    }
  }
}

}  // namespace moe
