// What the layer verdict shares with the diagnosis of a y beyond its budget: the experts'
// budget terms of one token (computed once each), a routing with its gates, how well a y
// fits a reference, and the diagnosis itself.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "moe/fuzz/layer_verdict.hpp"

namespace moe::fuzz {

struct TermsCache {
  const LayerCase& c;
  int32_t t;
  double siluUlp;
  std::map<int32_t, ExpertTerms> terms;
  const ExpertTerms& at(int32_t e);
};

// The routing y is told against: the kernel's (returned), or the acceptable one that fits
// y best, with its gates' allowance.
struct LayerRouting {
  std::vector<int32_t> experts;
  std::vector<double> gates, allowance;
  bool returned = false;
};

// margin: the worst |y_c - ref_c| / b_c (infinite at a non-finite y_c), at `coordinate`;
// nonfinite: the first non-finite coordinate, or -1.
struct LayerFit {
  double margin = 0;
  int32_t coordinate = -1, nonfinite = -1;
};
LayerFit fitOf(std::span<const float> y, const LayerReference& r);

LayerReference referenceOf(TermsCache& cache, std::span<const int32_t> experts,
                           std::span<const double> gates, std::span<const double> allowance,
                           double factor);

// y beyond its budget around `ref` (the routing's reference, fit f): names the kind.
LayerVerdict diagnoseLayerToken(TermsCache& cache, std::span<const float> y,
                                const LayerRouting& routing, const LayerReference& ref,
                                const LayerFit& f, double factor, const LayerRerun& rerun);

}  // namespace moe::fuzz
