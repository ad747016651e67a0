// Scalar pieces shared by every router: top-k selection with the spec's tie rule,
// the defined output for non-finite rows, and Mixtral's renormalisation.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace moe::detail {

// Up to this many kept experts, selection keeps a sorted list and inserts into it
// (expected k*ln(E/k) insertions on random rows); beyond it, partial_sort.
inline constexpr int32_t kInsertionTopKMax = 32;

// `a` beats `b` (Lean's `beats`) for non-NaN values: greater value, or an exact tie
// (+0 == -0 under float ==) and the lower index.
inline bool beatsAt(float va, int32_t ia, float vb, int32_t ib) {
  return va > vb || (!(vb > va) && ia < ib);
}

// A sorted (best first) list of at most kInsertionTopKMax (value, index) pairs.
struct TopList {
  float val[kInsertionTopKMax];
  int32_t idx[kInsertionTopKMax];
  int32_t size = 0;
  int32_t cap = 0;

  // Inserts an element whose index is larger than every index inserted so far, so
  // on an exact tie it goes after the earlier ones (lower index wins). When full,
  // the caller only inserts values strictly greater than the last one.
  void insertLater(float v, int32_t i) {
    int32_t pos = size < cap ? size++ : cap - 1;
    while (pos > 0 && v > val[pos - 1]) {
      val[pos] = val[pos - 1];
      idx[pos] = idx[pos - 1];
      --pos;
    }
    val[pos] = v;
    idx[pos] = i;
  }
  float threshold() const { return val[cap - 1]; }
};

// Selects the kk = min(k, E) best of v[0..E) (no NaN), best first, into ids/vals.
inline void selectTopKScalar(const float* v, int32_t experts, int32_t kk, int32_t* ids,
                             float* vals) {
  if (kk <= kInsertionTopKMax) {
    TopList top;
    top.cap = kk;
    for (int32_t i = 0; i < kk; ++i) top.insertLater(v[i], i);
    for (int32_t i = kk; i < experts; ++i) {
      if (v[i] > top.threshold()) top.insertLater(v[i], i);
    }
    std::copy(top.idx, top.idx + kk, ids);
    std::copy(top.val, top.val + kk, vals);
    return;
  }
  thread_local std::vector<int32_t> order;
  order.resize(static_cast<size_t>(experts));
  for (int32_t i = 0; i < experts; ++i) order[i] = i;
  std::partial_sort(order.begin(), order.begin() + kk, order.end(),
                    [v](int32_t a, int32_t b) { return beatsAt(v[a], a, v[b], b); });
  for (int32_t s = 0; s < kk; ++s) {
    ids[s] = order[s];
    vals[s] = v[order[s]];
  }
}

// The defined output for a row whose probabilities are all NaN (any NaN logit, a +inf
// logit, or every logit -inf): every expert ties, so the lower indices win:
// ids 0..kk-1, gates NaN. Slots kk..k-1 are empty.
inline void writeNonfiniteRow(int32_t k, int32_t kk, int32_t* ids, float* gates) {
  for (int32_t s = 0; s < k; ++s) {
    ids[s] = s < kk ? s : -1;
    gates[s] = s < kk ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
  }
}

inline void clearEmptySlots(int32_t k, int32_t kk, int32_t* ids, float* gates) {
  for (int32_t s = kk; s < k; ++s) {
    ids[s] = -1;
    gates[s] = 0.0f;
  }
}

// Mixtral's renormalisation as gatesVecSpec states it: the kept probabilities (given
// best first) divided by their sum taken in index order. Writes ids/gates in rank order.
inline void renormaliseKept(const int32_t* keptIds, const float* keptProbs, int32_t kk,
                            int32_t* ids, float* gates) {
  float sum = 0.0f;
  if (kk <= kInsertionTopKMax) {
    int32_t byIndex[kInsertionTopKMax];
    for (int32_t s = 0; s < kk; ++s) byIndex[s] = s;
    std::sort(byIndex, byIndex + kk,
              [keptIds](int32_t a, int32_t b) { return keptIds[a] < keptIds[b]; });
    for (int32_t s = 0; s < kk; ++s) sum += keptProbs[byIndex[s]];
  } else {
    thread_local std::vector<int32_t> byIndex;
    byIndex.resize(static_cast<size_t>(kk));
    for (int32_t s = 0; s < kk; ++s) byIndex[s] = s;
    std::sort(byIndex.begin(), byIndex.end(),
              [keptIds](int32_t a, int32_t b) { return keptIds[a] < keptIds[b]; });
    for (int32_t s = 0; s < kk; ++s) sum += keptProbs[byIndex[s]];
  }
  for (int32_t s = 0; s < kk; ++s) {
    ids[s] = keptIds[s];
    gates[s] = keptProbs[s] / sum;
  }
}

}  // namespace moe::detail
