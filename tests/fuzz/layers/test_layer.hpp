// A plain moe_layer_v1 (layer_abi.h) for the layer verdict's tests, with every sum in a
// chosen order and, optionally, one deliberate bug. Correct orders must stay inside the
// derived budget (it holds for any order); each bug must be caught with its kind.
//   orders: sequential, shuffled (a fixed random permutation per sum), pairwise (a
//   balanced tree), blocked (partial sums of 16, then summed), fma (std::fma chains), and
//   flat (y summed over every slot and hidden unit in one sequential loop).
//   bugs:   double-add          the first slot's expert output added twice  -> extra-expert
//           gate-before-act     silu(g W1 x) * (W3 x), no gate after           -> expert-output
//           bf16-accumulator    the W2 dot's accumulator rounded to bf16       -> expert-output
//           missing-expert      the last kept slot's output skipped            -> missing-expert
//           wrong-gate          combined with the unrenormalised probability   -> combine-gate
// Routing: softmax top-k renormalised (route NULL) or the family in binary32 (the oracle's
// spec, which is always acceptable), ids best first.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "moe/layer_abi.h"
#include "moe/oracle/family.hpp"

namespace moe::test_layer {

enum class Order { kSequential, kShuffled, kPairwise, kBlocked, kFma, kFlat };
enum class Bug { kNone, kDoubleAdd, kGateBeforeActivation, kBf16Accumulator, kMissing, kWrongGate };

inline float bf16Round(float v) {
  uint32_t b = std::bit_cast<uint32_t>(v);
  if (std::isnan(v)) return v;
  b += 0x7fffu + ((b >> 16) & 1u);
  return std::bit_cast<float>(b & 0xffff0000u);
}

// sum_i a[i] * b[i] in binary32 in the given order (the bf16 bug rounds the accumulator).
inline float dot(const float* a, const float* b, int32_t n, Order order, bool bf16Acc,
                 uint64_t seed) {
  std::vector<float> p(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = a[i] * b[i];
  auto sequential = [&](std::span<const float> v) {
    float s = 0.0f;
    for (float t : v) s = bf16Acc ? bf16Round(s + t) : s + t;
    return s;
  };
  switch (order) {
    case Order::kShuffled: {
      std::mt19937_64 rng(seed);
      std::shuffle(p.begin(), p.end(), rng);
      return sequential(p);
    }
    case Order::kPairwise: {
      while (p.size() > 1) {
        std::vector<float> q;
        for (size_t i = 0; i + 1 < p.size(); i += 2) q.push_back(p[i] + p[i + 1]);
        if (p.size() % 2) q.push_back(p.back());
        p.swap(q);
      }
      return p.empty() ? 0.0f : p[0];
    }
    case Order::kBlocked: {
      std::vector<float> partial;
      for (size_t i = 0; i < p.size(); i += 16) {
        partial.push_back(
            sequential(std::span<const float>(p).subspan(i, std::min<size_t>(16, p.size() - i))));
      }
      return sequential(partial);
    }
    case Order::kFma: {
      float s = 0.0f;
      for (int32_t i = 0; i < n; ++i) s = std::fma(a[i], b[i], s);
      return s;
    }
    default:
      return sequential(p);
  }
}

inline float siluOf(float a) {
  return a / (1.0f + std::exp(-a));
}

// Softmax top-k renormalised (route NULL), or the family's binary32 spec: kept experts best
// first and their gates; `raw` the unrenormalised probabilities (the wrong-gate bug).
inline void routeToken(const moe_layer_params_v1& p, const float* logits, int32_t* ids,
                       float* gates, float* raw) {
  const int32_t E = p.experts, k = p.k;
  std::span<const float> row(logits, static_cast<size_t>(E));
  // A row with a NaN or +inf logit, or only -inf ones, has no ranking (the spec's scores are
  // NaN): the lowest ids with NaN gates, as the project's routers answer it.
  const bool anyFinite =
      std::any_of(row.begin(), row.end(), [](float v) { return std::isfinite(v); });
  const bool ranked = anyFinite && std::none_of(row.begin(), row.end(), [](float v) {
                        return std::isnan(v) || v == std::numeric_limits<float>::infinity();
                      });
  if (!ranked ||
      (p.route && p.route->bias &&
       !std::all_of(p.route->bias, p.route->bias + E, [](float v) { return std::isfinite(v); }))) {
    for (int32_t s = 0; s < k; ++s) {
      const bool filled = s < E;
      ids[s] = filled ? s : -1;
      gates[s] = raw[s] = filled ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
    }
    return;
  }
  std::vector<size_t> kept;
  std::vector<float> dense(static_cast<size_t>(E), 0.0f), probs;
  if (!p.route) {
    probs = oracle::softmaxVecSpec(row);
    kept = oracle::keptExperts(static_cast<size_t>(k), std::span<const float>(probs));
    dense = oracle::gatesFromProbs(static_cast<size_t>(k), std::span<const float>(probs));
  } else {
    const moe_route_params_v2& r = *p.route;
    oracle::RouteParams<float> rp;
    rp.k = static_cast<size_t>(k);
    rp.score = r.score == 1 ? oracle::ScoreFn::sigmoid : oracle::ScoreFn::softmax;
    if (r.bias) rp.bias = std::span<const float>(r.bias, static_cast<size_t>(E));
    rp.groups = static_cast<size_t>(r.groups);
    rp.topkGroups = static_cast<size_t>(r.topk_groups);
    rp.groupScore = r.group_score == 1 ? oracle::GroupScore::top2Sum : oracle::GroupScore::max;
    rp.renormalize = r.renormalize == 1;
    rp.scale = r.scale;
    probs = oracle::scoresSpec(rp.score, row);
    const auto c = oracle::biasedKeys(rp.bias, std::span<const float>(probs));
    kept = oracle::routeKeptExperts(rp, std::span<const float>(c));
    dense =
        oracle::routeGatesFromScores(rp, std::span<const float>(probs), std::span<const float>(c));
  }
  for (int32_t s = 0; s < k; ++s) {
    const bool filled = static_cast<size_t>(s) < kept.size();
    ids[s] = filled ? static_cast<int32_t>(kept[static_cast<size_t>(s)]) : -1;
    gates[s] = filled ? dense[kept[static_cast<size_t>(s)]] : 0.0f;
    raw[s] = filled ? probs[kept[static_cast<size_t>(s)]] : 0.0f;
  }
}

template <Order order, Bug bug>
int layer(const moe_layer_params_v1* p, const void* xv, const float* logits, const void* w13v,
          const void* w2v, float* yOut, int32_t* idsOut, float* gatesOut) {
  if (!p) return MOE_ROUTE_ENULL;
  if (p->struct_size < sizeof(moe_layer_params_v1)) return MOE_ROUTE_EBADPARAMS;
  const int32_t T = p->tokens, H = p->hidden, I = p->intermediate, E = p->experts, k = p->k;
  if (T < 0 || H < 0 || I < 0 || E < 0 || k < 0) return MOE_ROUTE_EBADSIZE;
  if (p->activation != MOE_ACT_SWIGLU ||
      (p->dtype != MOE_DTYPE_F32 && p->dtype != MOE_DTYPE_BF16)) {
    return MOE_ROUTE_EBADPARAMS;
  }
  // Widen the inputs to binary32 (bf16: the top 16 bits).
  auto widen = [&](const void* v, size_t n) {
    std::vector<float> out(n);
    if (p->dtype == MOE_DTYPE_F32) {
      std::memcpy(out.data(), v, n * sizeof(float));
    } else {
      const auto* h = static_cast<const uint16_t*>(v);
      for (size_t i = 0; i < n; ++i) out[i] = std::bit_cast<float>(uint32_t{h[i]} << 16);
    }
    return out;
  };
  const auto x = widen(xv, static_cast<size_t>(T) * H);
  const auto w13 = widen(w13v, static_cast<size_t>(E) * 2 * I * H);
  const auto w2 = widen(w2v, static_cast<size_t>(E) * H * I);
  std::vector<int32_t> ids(static_cast<size_t>(k));
  std::vector<float> gates(static_cast<size_t>(k)), raw(static_cast<size_t>(k));
  std::vector<float> h(static_cast<size_t>(I)), y(static_cast<size_t>(H));
  uint64_t seed = 1;
  for (int32_t t = 0; t < T; ++t) {
    const float* xt = x.data() + static_cast<size_t>(t) * H;
    routeToken(*p, logits + static_cast<size_t>(t) * E, ids.data(), gates.data(), raw.data());
    std::fill(y.begin(), y.end(), 0.0f);
    // flat: y accumulated over every slot and hidden unit in one sequential loop.
    std::vector<std::vector<float>> flatH;
    for (int32_t s = 0; s < k; ++s) {
      const int32_t e = ids[static_cast<size_t>(s)];
      if (e < 0) continue;
      if (bug == Bug::kMissing && (s + 1 == k || ids[static_cast<size_t>(s) + 1] < 0) && s > 0) {
        continue;
      }
      const float g =
          bug == Bug::kWrongGate ? raw[static_cast<size_t>(s)] : gates[static_cast<size_t>(s)];
      for (int32_t j = 0; j < I; ++j) {
        const float* w1 = w13.data() + (static_cast<size_t>(e) * 2 * I + j) * H;
        const float* w3 = w13.data() + (static_cast<size_t>(e) * 2 * I + I + j) * H;
        const float a = dot(w1, xt, H, order, false, seed++);
        const float b = dot(w3, xt, H, order, false, seed++);
        h[static_cast<size_t>(j)] =
            bug == Bug::kGateBeforeActivation ? siluOf(g * a) * b : siluOf(a) * b;
      }
      const float gate = bug == Bug::kGateBeforeActivation ? 1.0f : g;
      const int copies = bug == Bug::kDoubleAdd && s == 0 ? 2 : 1;
      if (order == Order::kFlat) {
        std::vector<float> gh(h);
        for (float& v : gh) v *= gate;
        for (int c = 0; c < copies; ++c) flatH.push_back(gh);
        continue;
      }
      for (int32_t c = 0; c < H; ++c) {
        const float* w2r = w2.data() + (static_cast<size_t>(e) * H + c) * I;
        const float out = dot(w2r, h.data(), I, order, bug == Bug::kBf16Accumulator, seed++);
        for (int copy = 0; copy < copies; ++copy) y[static_cast<size_t>(c)] += gate * out;
      }
    }
    if (order == Order::kFlat) {
      for (int32_t c = 0; c < H; ++c) {
        float acc = 0.0f;
        size_t slot = 0;
        for (int32_t s = 0; s < k && slot < flatH.size(); ++s) {
          const int32_t e = ids[static_cast<size_t>(s)];
          if (e < 0) continue;
          const int copies = bug == Bug::kDoubleAdd && s == 0 ? 2 : 1;
          for (int copy = 0; copy < copies && slot < flatH.size(); ++copy, ++slot) {
            const float* w2r = w2.data() + (static_cast<size_t>(e) * H + c) * I;
            for (int32_t j = 0; j < I; ++j) acc += w2r[j] * flatH[slot][static_cast<size_t>(j)];
          }
        }
        y[static_cast<size_t>(c)] = acc;
      }
    }
    std::copy(y.begin(), y.end(), yOut + static_cast<size_t>(t) * H);
    if (idsOut) std::copy(ids.begin(), ids.end(), idsOut + static_cast<size_t>(t) * k);
    if (gatesOut) std::copy(gates.begin(), gates.end(), gatesOut + static_cast<size_t>(t) * k);
  }
  return 0;
}

}  // namespace moe::test_layer
