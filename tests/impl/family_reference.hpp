// A plain double-precision reference of the routing family (moe_route_v2), written from
// the spec's text (docs in route_abi.h), for the routers' tests: scores, keys, groups,
// kept experts by beats (ties to the lower index), gates. It also reports how far each
// decision is from a tie, so tests can keep to inputs where binary32 rounding cannot
// change the answer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

namespace moe::test {

struct FamilyCase {
  int32_t experts = 0;
  int32_t k = 0;
  bool sigmoid = false;
  std::vector<float> bias;  // empty: none
  int32_t groups = 1;
  int32_t topkGroups = 1;
  bool top2Sum = false;
  bool renormalize = false;
  float scale = 1.0f;
};

struct FamilyResult {
  std::vector<int32_t> ids;   // k slots, best first, -1 past the kept
  std::vector<double> gates;  // k slots
  // The smallest relative gap between two keys or group scores whose order decides the
  // output (kept vs not, slot order, kept groups vs not); +inf when nothing is decided.
  double margin = std::numeric_limits<double>::infinity();
};

inline double relGap(double a, double b) {
  const double scale = std::max({std::fabs(a), std::fabs(b), 1e-30});
  return std::fabs(a - b) / scale;
}

inline FamilyResult familyReference(const FamilyCase& c, const float* x) {
  const int32_t n = c.experts;
  FamilyResult r;
  r.ids.assign(static_cast<size_t>(c.k), -1);
  r.gates.assign(static_cast<size_t>(c.k), 0.0);
  std::vector<double> s(static_cast<size_t>(n));
  if (c.sigmoid) {
    for (int32_t e = 0; e < n; ++e) s[e] = 1.0 / (1.0 + std::exp(-double(x[e])));
  } else {
    double m = -std::numeric_limits<double>::infinity();
    for (int32_t e = 0; e < n; ++e) m = std::max(m, double(x[e]));
    double d = 0;
    for (int32_t e = 0; e < n; ++e) d += s[e] = std::exp(double(x[e]) - m);
    for (auto& v : s) v /= d;
  }
  std::vector<double> key(s);
  if (!c.bias.empty()) {
    for (int32_t e = 0; e < n; ++e) key[e] += c.bias[e];
  }
  auto beats = [](const std::vector<double>& v, int32_t a, int32_t b) {
    return v[a] > v[b] || (v[a] == v[b] && a < b);
  };
  std::vector<char> eligible(static_cast<size_t>(n), 1);
  if (c.groups > 1) {
    const int32_t size = n / c.groups;
    std::vector<double> g(static_cast<size_t>(c.groups));
    for (int32_t j = 0; j < c.groups; ++j) {
      std::vector<double> v(key.begin() + j * size, key.begin() + (j + 1) * size);
      std::sort(v.begin(), v.end(), std::greater<>());
      g[j] = c.top2Sum ? v[0] + v[1] : v[0];
    }
    std::vector<int32_t> order(static_cast<size_t>(c.groups));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return beats(g, a, b); });
    if (c.topkGroups < c.groups) {
      r.margin = std::min(r.margin, relGap(g[order[c.topkGroups - 1]], g[order[c.topkGroups]]));
    }
    std::fill(eligible.begin(), eligible.end(), 0);
    for (int32_t j = 0; j < c.topkGroups; ++j) {
      std::fill(eligible.begin() + order[j] * size, eligible.begin() + (order[j] + 1) * size, 1);
    }
  }
  std::vector<int32_t> order;
  for (int32_t e = 0; e < n; ++e) {
    if (eligible[e]) order.push_back(e);
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return beats(key, a, b); });
  const auto kk = static_cast<int32_t>(std::min<size_t>(size_t(c.k), order.size()));
  for (int32_t i = 0; i + 1 < std::min<int32_t>(kk + 1, int32_t(order.size())); ++i) {
    r.margin = std::min(r.margin, relGap(key[order[i]], key[order[i + 1]]));
  }
  double total = 0;
  std::vector<int32_t> byIndex(order.begin(), order.begin() + kk);
  std::sort(byIndex.begin(), byIndex.end());
  for (const int32_t e : byIndex) total += s[e];
  for (int32_t i = 0; i < kk; ++i) {
    r.ids[i] = order[i];
    r.gates[i] = (c.renormalize ? s[order[i]] / total : s[order[i]]) * c.scale;
  }
  return r;
}

}  // namespace moe::test
