// Replay of the routing family's binary32 RouteGatesTests through moe_route_v2 of every
// built-in router that has a v2 kernel, and of the binary32 spec router: each case goes
// through the fuzzer's own verdict (judgeCase), so parameters outside the domain must be
// refused with MOE_ROUTE_EBADPARAMS and nothing written, and valid ones routed within the
// budgets. Where the spec decides a value the verdict owes nothing to (a zero total: 0/0), the
// routers must give the binary32 spec's value, NaN, as Lean's vectors do (docs/oracle.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <moe/fuzz/case.hpp>
#include <moe/fuzz/router.hpp>
#include <moe/fuzz/verdict.hpp>
#include <string>
#include <vector>

#include "lean_vectors.hpp"

namespace moe::lean {
namespace {

namespace fuzz = moe::fuzz;

// The case a binary32 RouteGatesTest describes, as the fuzzer holds it (one token).
fuzz::Case caseOf(const json& t) {
  fuzz::Case c;
  c.logits = vecFromJson<float>(t.at("logits"));
  c.tokens = 1;
  c.experts = static_cast<int32_t>(c.logits.size());
  c.k = t.at("k").get<int32_t>();
  c.threads = 1;
  c.allowNaN = true;
  fuzz::Family f;
  f.score =
      t.at("score") == "softmax" ? fuzz::ScoreFunction::kSoftmax : fuzz::ScoreFunction::kSigmoid;
  if (t.contains("bias")) f.bias = vecFromJson<float>(t.at("bias"));
  f.groups = t.at("groups").get<int32_t>();
  f.topkGroups = t.at("topkGroups").get<int32_t>();
  f.groupScore = t.at("groupScore") == "max" ? fuzz::GroupScoreFunction::kMax
                                             : fuzz::GroupScoreFunction::kTop2Sum;
  f.renormalize = t.at("renormalize").get<bool>() ? 1 : 0;
  f.scale = f32FromHex(t.at("scale").get<std::string>());
  c.family = f;
  return c;
}

// The built-in routers with a v2 kernel that this CPU runs, and the binary32 spec router.
std::vector<std::unique_ptr<fuzz::Router>> familyRouters() {
  std::vector<std::unique_ptr<fuzz::Router>> out;
  for (const std::string& name : fuzz::builtinRouterNamesV2()) {
    if (!fuzz::builtinRouterAvailable(name)) continue;
    fuzz::RouterOptions options;
    options.abi = "moe_route_v2";
    out.push_back(fuzz::openRouter(name, options));
  }
  out.push_back(fuzz::makeSpec32Router(true));
  return out;
}

std::vector<std::reference_wrapper<const json>> binary32RouteGates() {
  std::vector<std::reference_wrapper<const json>> out;
  for (const json& t : testsOfType(vectors(), "RouteGatesTest")) {
    if (t.at("context") == "binary32") out.push_back(t);
  }
  return out;
}

// The ABI's domain is Lean's paramsValid plus a finite scale: every vector says which.
TEST(LeanFamilyThroughRouters, TheVerdictsDomainIsLeansPlusAFiniteScale) {
  std::size_t invalid = 0;
  for (const json& t : binary32RouteGates()) {
    const fuzz::Case c = caseOf(t);
    const bool abiValid = t.at("paramsValid").get<bool>() && std::isfinite(c.family->scale);
    EXPECT_EQ(fuzz::familyInvalidReason(*c.family, c.experts).empty(), abiValid)
        << describe(t) << ": " << fuzz::familyInvalidReason(*c.family, c.experts);
    invalid += abiValid ? 0 : 1;
  }
  EXPECT_GE(invalid, 8u);
}

TEST(LeanFamilyThroughRouters, EveryRouterPassesTheVerdictOnEveryVector) {
  const auto routers = familyRouters();
  ASSERT_GE(routers.size(), 2u);
  for (const auto& router : routers) {
    std::size_t judged = 0, refused = 0, abstained = 0;
    fuzz::Judge judge;
    for (const json& t : binary32RouteGates()) {
      const fuzz::Case c = caseOf(t);
      // The C ABI passes the bias as a pointer, which has no length: a bias of another
      // length than E cannot reach a kernel as such (the kernel would read past it).
      if (!c.family->bias.empty() && c.family->bias.size() != c.logits.size()) continue;
      const fuzz::CaseResult r = judge.run(*router, c);
      if (r.abstained) {
        ++abstained;
        continue;
      }
      ++judged;
      refused += r.output.status == 6 ? 1 : 0;
      EXPECT_FALSE(r.violation) << router->name() << ": " << describe(t) << ": "
                                << (r.violation ? r.violation->certificate : "");
    }
    std::printf("%s: %zu judged (%zu refused as EBADPARAMS), %zu abstained\n",
                router->name().c_str(), judged, refused, abstained);
    EXPECT_GE(judged, 100u) << router->name();
    EXPECT_GE(refused, 8u) << router->name();
  }
}

// The spec's decision for a zero total (renormalising kept scores that are all zero): the
// binary32 value is 0/0 = NaN times the scale, which every router must write too.
TEST(LeanFamilyThroughRouters, ZeroTotalsGiveTheSpecsNaNGates) {
  std::size_t rows = 0;
  for (const auto& router : familyRouters()) {
    for (const json& t : binary32RouteGates()) {
      if (!hasFlag(t, "ZeroTotal") || !t.at("paramsValid").get<bool>()) continue;
      const fuzz::Case c = caseOf(t);
      const auto out = router->route(c.tokens, c.experts, c.k, c.logits, 1, &*c.family);
      ASSERT_EQ(out.status, 0) << router->name() << ": " << describe(t);
      const auto kept = t.at("routeKeptExperts").get<std::vector<int32_t>>();
      const auto lean = vecFromJson<float>(t.at("gates"));
      for (std::size_t s = 0; s < kept.size(); ++s) {
        EXPECT_EQ(out.ids[s], kept[s]) << router->name() << ": " << describe(t) << " slot " << s;
        EXPECT_TRUE(std::isnan(lean[static_cast<std::size_t>(kept[s])])) << describe(t);
        EXPECT_TRUE(std::isnan(out.gates[s]))
            << router->name() << ": " << describe(t) << " slot " << s << " gate " << out.gates[s];
      }
      ++rows;
    }
  }
  EXPECT_GE(rows, 4u);
}

}  // namespace
}  // namespace moe::lean
