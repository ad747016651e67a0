// spec32 for moe_route_v2: oracle/family.hpp in binary32 with the host's expf. Rows whose
// keys are not all numbers get what the built-in routers give (ids 0..n-1, NaN gates): the
// verdict checks only structure there.
#include "spec32_family.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "moe/fuzz/family_params.hpp"
#include "moe/oracle/family.hpp"
#include "moe/route_abi.h"

namespace moe::fuzz {

namespace {

class Spec32FamilyRouter final : public Router {
 public:
  Spec32FamilyRouter() : Router("spec32", specContract()) {}

  static Contract specContract() {
    Contract c;
    c.abi = std::string(kAbiV2);
    c.name = "spec32";
    c.families = Families::everything();
    c.slotOrder = SlotOrder::kRank;
    c.batchInvariant = true;
    c.expMaxUlp = 1.0;  // glibc's expf
    c.nonfiniteRows = "ids 0..n-1 and NaN gates where a key or group score is not a number";
    return c;
  }

 protected:
  int call(int32_t, int32_t, int32_t, const float*, int32_t*, float*, int32_t) const override {
    return MOE_ROUTE_EUNSUPPORTED;
  }

  int callV2(const Family& f, int32_t tokens, int32_t experts, int32_t k, const float* logits,
             int32_t* ids, float* gates, int32_t, RouteFault&) const override {
    if (tokens < 0 || experts < 0 || k < 0) return MOE_ROUTE_EBADSIZE;
    if (!familyInvalidReason(f, experts).empty()) return MOE_ROUTE_EBADPARAMS;
    const oracle::RouteParams<float> p = familyRouteParams(f, k);
    const int32_t n = std::min(k, familyEligible(f, experts));
    for (int32_t t = 0; t < tokens; ++t) {
      const std::span<const float> row(logits + int64_t{t} * experts, static_cast<size_t>(experts));
      int32_t* id = ids + int64_t{t} * k;
      float* g = gates + int64_t{t} * k;
      for (int32_t s = 0; s < k; ++s) {
        id[s] = -1;
        g[s] = 0.0f;
      }
      const std::vector<float> s = oracle::scoresSpec(p.score, row);
      const std::vector<float> c = oracle::biasedKeys(p.bias, std::span<const float>(s));
      std::vector<size_t> kept;
      bool numbers = true;
      for (float v : c) numbers = numbers && !std::isnan(v);
      if (numbers) {
        const auto gs = oracle::groupScores(p.groupScore, p.groups, std::span<const float>(c));
        for (float v : gs) numbers = numbers && !std::isnan(v);
      }
      if (!numbers) {
        for (int32_t slot = 0; slot < n; ++slot) {
          id[slot] = slot;
          g[slot] = std::numeric_limits<float>::quiet_NaN();
        }
        continue;
      }
      kept = oracle::routeKeptExperts(p, std::span<const float>(c));
      const std::vector<float> dense =
          oracle::routeGatesFromScores(p, std::span<const float>(s), std::span<const float>(c));
      for (size_t slot = 0; slot < kept.size(); ++slot) {
        id[slot] = static_cast<int32_t>(kept[slot]);
        g[slot] = dense[kept[slot]];
      }
    }
    return MOE_ROUTE_OK;
  }
};

}  // namespace

std::unique_ptr<Router> makeSpec32FamilyRouter() {
  return std::make_unique<Spec32FamilyRouter>();
}

}  // namespace moe::fuzz
