// A routing-family router behind moe_route_v2 (route_abi.h) with one deliberate bug,
// compiled once per bug (-DFAMILY_BUG=<n>, FAMILY_BUG 0 = none): the family's acceptance
// tests fuzz each library and require the exact violation kind (tests/fuzz/family_test.cpp).
//   1 bias-in-gates        the gates are the biased keys s + b            -> gate-bias
//   2 group-max            group score by max where top-2 sum is asked    -> kept-group
//   3 group-tie-high       equal group scores go to the higher group      -> group-tie-order
//   4 scale-before-renorm  w = s * scale, then renormalised: scale lost   -> gate-scale
//   5 renorm-eligible      renormalised over the eligible, not the kept   -> gate-renorm
// and three gate bugs that no cause explains, each of which some kind used to be guessed
// for (a kind names a cause only when verified, docs/fuzz.md):
//  10 renorm-epsilon       1e-20 added to the renormalising sum           -> gate-error
//  11 logsumexp            softmax as exp(x - lse), lse = m + log(sum) in binary32, which
//                          absorbs log(sum) at large logits: raw gates E times too large
//                                                                         -> gate-error
//  12 perturbed            each gate off by a pseudo-random 1e-3 relative -> gate-error
//  13 logsumexp-scale-e    11 on a kernel of E = 16 and scale 16, where E times too large
//                          is also "the scale applied twice": a rerun at another scale
//                          tells them apart                               -> gate-error
// and a hostile kernel each (the kernel under test may be broken in any way; moe-oracle runs
// it isolated and must survive and report; tests/fuzz/hostile_kernels_test.cpp), misbehaving
// on one family only:
//   6 segv-sigmoid-groups  dereferences NULL on sigmoid scores in 4 groups -> crash
//   7 hang-top2-sum        never returns on 2 groups scored by top-2 sum, k = 3 -> hang
//   8 oob-ids-bias         writes one id past the end of ids when given a bias, k = 3
//                                                                         -> out-of-bounds-write
//   9 status-77-raw        returns 77, a status the ABI does not define, for raw gates
//                                                                         -> bad-status
// A plain scalar router in binary32 otherwise: softmax or sigmoid scores, keys s + b, group
// scores, kept groups and experts by (key desc, index asc), gates from the unbiased scores.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "moe/route_abi.h"

#ifndef FAMILY_BUG
#define FAMILY_BUG 0
#endif

namespace {

constexpr int kBug = FAMILY_BUG;

bool valid(const moe_route_params_v2& p) {
  if (p.score != MOE_SCORE_SOFTMAX && p.score != MOE_SCORE_SIGMOID) return false;
  if (p.renormalize != 0 && p.renormalize != 1) return false;
  if (!std::isfinite(p.scale)) return false;
  if (p.groups < 1 || p.experts % p.groups != 0) return false;
  if (p.topk_groups < 1 || p.topk_groups > p.groups) return false;
  if (p.groups > 1 && p.group_score != MOE_GROUP_MAX && p.group_score != MOE_GROUP_TOP2_SUM) {
    return false;
  }
  if (p.groups > 1 && p.group_score == MOE_GROUP_TOP2_SUM && p.experts / p.groups < 2) return false;
  return true;
}

void routeRow(const moe_route_params_v2& p, const float* x, int32_t* ids, float* gates) {
  const int32_t E = p.experts, k = p.k, G = p.groups, size = E / G;
  std::vector<float> s(E), c(E);
  if (p.score == MOE_SCORE_SOFTMAX) {
    float m = x[0];
    for (int32_t e = 0; e < E; ++e) m = m <= x[e] ? x[e] : m;
    float d = 0;
    for (int32_t e = 0; e < E; ++e) d += (s[e] = std::exp(x[e] - m));
    if (kBug == 11 || kBug == 13) {
      const float lse = m + std::log(d);
      for (int32_t e = 0; e < E; ++e) s[e] = std::exp(x[e] - lse);
    } else {
      for (int32_t e = 0; e < E; ++e) s[e] /= d;
    }
  } else {
    for (int32_t e = 0; e < E; ++e) s[e] = 1.0f / (1.0f + std::exp(0.0f - x[e]));
  }
  for (int32_t e = 0; e < E; ++e) c[e] = p.bias ? s[e] + p.bias[e] : s[e];
  auto better = [&](int32_t a, int32_t b) { return c[a] > c[b] || (!(c[b] > c[a]) && a < b); };
  std::vector<uint8_t> eligible(E, 1);
  if (G > 1) {
    const bool top2 = p.group_score == MOE_GROUP_TOP2_SUM && kBug != 2;
    std::vector<float> score(G);
    for (int32_t g = 0; g < G; ++g) {
      std::vector<int32_t> m(size);
      std::iota(m.begin(), m.end(), g * size);
      std::sort(m.begin(), m.end(), better);
      score[g] = top2 ? (0.0f + c[m[0]]) + c[m[1]] : c[m[0]];
    }
    std::vector<int32_t> order(G);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      if (score[a] != score[b]) return score[a] > score[b];
      return kBug == 3 ? a > b : a < b;
    });
    std::fill(eligible.begin(), eligible.end(), 0);
    for (int32_t r = 0; r < p.topk_groups; ++r) {
      for (int32_t e = order[r] * size; e < (order[r] + 1) * size; ++e) eligible[e] = 1;
    }
  }
  std::vector<int32_t> cand;
  for (int32_t e = 0; e < E; ++e) {
    if (eligible[e]) cand.push_back(e);
  }
  std::sort(cand.begin(), cand.end(), better);
  const int32_t n = std::min<int32_t>(k, static_cast<int32_t>(cand.size()));
  std::vector<float> w(E);
  for (int32_t e = 0; e < E; ++e) w[e] = kBug == 1 ? c[e] : s[e];
  if (kBug == 4) {
    for (float& v : w) v *= p.scale;
  }
  std::vector<int32_t> byIndex(cand.begin(), cand.begin() + n);
  if (kBug == 5) byIndex = cand;
  std::sort(byIndex.begin(), byIndex.end());
  float total = 0;
  for (int32_t e : byIndex) total += w[e];
  if (kBug == 10) total += 1e-20f;
  for (int32_t slot = 0; slot < k; ++slot) {
    if (slot < n) {
      const int32_t e = cand[slot];
      ids[slot] = e;
      const float g = p.renormalize ? w[e] / total : w[e];
      gates[slot] = kBug == 4 ? g : g * p.scale;
      if (kBug == 12) gates[slot] *= 1.0f + 1e-3f * static_cast<float>((e * 7919 + slot) % 5 + 1);
    } else {
      ids[slot] = -1;
      gates[slot] = 0.0f;
    }
  }
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int moe_route_v2(const moe_route_params_v2* p,
                                                        const float* logits, int32_t* ids,
                                                        float* gates) {
  if (!p) return MOE_ROUTE_ENULL;
  if (p->struct_size < sizeof(moe_route_params_v2)) return MOE_ROUTE_EBADPARAMS;
  if (p->tokens < 0 || p->experts < 0 || p->k < 0) return MOE_ROUTE_EBADSIZE;
  if (!valid(*p)) return MOE_ROUTE_EBADPARAMS;
  if (kBug == 6 && p->score == MOE_SCORE_SIGMOID && p->groups == 4) *(volatile int*)nullptr = 1;
  if (kBug == 7 && p->groups == 2 && p->group_score == MOE_GROUP_TOP2_SUM && p->k == 3) {
    volatile unsigned spin = 0;
    for (;;) spin = spin + 1u;
  }
  if (kBug == 8 && p->bias && p->k == 3 && p->tokens > 0) ids[int64_t{p->tokens} * p->k] = 0;
  if (kBug == 9 && p->renormalize == 0) return 77;
  for (int32_t t = 0; t < p->tokens; ++t) {
    if (p->experts == 0) {
      for (int32_t s = 0; s < p->k; ++s)
        ids[int64_t{t} * p->k + s] = -1, gates[int64_t{t} * p->k + s] = 0;
      continue;
    }
    routeRow(*p, logits + int64_t{t} * p->experts, ids + int64_t{t} * p->k,
             gates + int64_t{t} * p->k);
  }
  return MOE_ROUTE_OK;
}

__attribute__((visibility("default"))) const char* moe_route_v2_contract(void) {
  if (kBug == 13) {  // a kernel of one shape and scale: E = 16, raw softmax, scale 16
    return "{\"abi\": \"moe_route_v2\", \"name\": \"broken-family-" MOE_FAMILY_BUG_NAME
           "\", \"families\": {\"scores\": [\"softmax\"], \"renormalize\": [false], "
           "\"scale\": [16]}, \"slot_order\": \"rank\", \"exp_max_ulp\": 1, "
           "\"shapes\": {\"experts\": [16], \"max_tokens\": 16}}";
  }
  return "{\"abi\": \"moe_route_v2\", \"name\": \"broken-family-" MOE_FAMILY_BUG_NAME
         "\", \"families\": {\"scores\": [\"softmax\", \"sigmoid\"], \"groups\": true, "
         "\"bias\": true}, \"slot_order\": \"rank\", \"exp_max_ulp\": 1, "
         "\"shapes\": {\"experts\": [\"1-64\"], \"max_tokens\": 16}}";
}
}
