// moe_route_v2 (the routing family) of every built-in router: the parameter checks
// (EBADPARAMS with nothing written, a larger struct_size accepted), v1's special case,
// the judge's acceptance (EXPECT_ROUTE_MATCH) at DeepSeek-V3's, Kimi K2's and Llama 4's
// shapes, and exact ties to the lower index. Seeds: MOE_TEST_SEED (tests/support).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "family_case.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/route_abi.h"
#include "moe/routers.hpp"
#include "moe/test/route_match.hpp"
#include "moe/test/seed.hpp"
#include "router_params.hpp"

namespace moe::test {
namespace {

moe_route_params_v2 paramsFor(const FamilyCase& c, int32_t tokens) {
  moe_route_params_v2 p{};
  p.struct_size = sizeof(moe_route_params_v2);
  p.tokens = tokens;
  p.experts = c.experts;
  p.k = c.k;
  p.score = c.sigmoid ? MOE_SCORE_SIGMOID : MOE_SCORE_SOFTMAX;
  p.bias = c.bias.empty() ? nullptr : c.bias.data();
  p.groups = c.groups;
  p.topk_groups = c.topkGroups;
  p.group_score = c.top2Sum ? MOE_GROUP_TOP2_SUM : MOE_GROUP_MAX;
  p.renormalize = c.renormalize ? 1 : 0;
  p.scale = c.scale;
  return p;
}

class RouteV2 : public RouterTest {
 protected:
  void SetUp() override {
    RouterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    fuzz::RouterOptions v2;
    v2.abi = std::string(fuzz::kAbiV2);
    judged_ = fuzz::openRouter(GetParam(), v2);
  }
  int route(const moe_route_params_v2* p, const float* x, int32_t* ids, float* gates) {
    return router_->route_v2(p, x, ids, gates, 0);
  }
  std::unique_ptr<fuzz::Router> judged_;  // the same router behind the fuzzer's interface
};

// `tokens` rows of logits `x` under the family of `c`, as the judge takes a v2 case.
fuzz::Case judgedCase(const FamilyCase& c, int32_t tokens, std::vector<float> x) {
  fuzz::Case out = routeCase(tokens, c.experts, c.k, std::move(x));
  fuzz::Family f;
  f.score = c.sigmoid ? fuzz::ScoreFunction::kSigmoid : fuzz::ScoreFunction::kSoftmax;
  f.bias = c.bias;
  f.groups = c.groups;
  f.topkGroups = c.topkGroups;
  f.groupScore = c.top2Sum ? fuzz::GroupScoreFunction::kTop2Sum : fuzz::GroupScoreFunction::kMax;
  f.renormalize = c.renormalize ? 1 : 0;
  f.scale = c.scale;
  out.family = std::move(f);
  return out;
}

// Every way out of the domain: EBADPARAMS and the outputs untouched.
TEST_P(RouteV2, RejectsEveryInvalidParameterAndWritesNothing) {
  const std::vector<float> x(2 * 8, 0.5f);
  FamilyCase base;
  base.experts = 8;
  base.k = 2;
  base.sigmoid = true;
  base.groups = 4;
  base.topkGroups = 2;
  base.top2Sum = true;
  base.renormalize = true;
  const moe_route_params_v2 good = paramsFor(base, 2);
  std::vector<std::pair<std::string, moe_route_params_v2>> bad;
  auto add = [&](const std::string& what, auto change) {
    moe_route_params_v2 p = good;
    change(p);
    bad.emplace_back(what, p);
  };
  add("struct_size one short", [](auto& p) { p.struct_size = sizeof(p) - 1; });
  add("struct_size 0", [](auto& p) { p.struct_size = 0; });
  add("groups 3 not dividing 8", [](auto& p) { p.groups = 3; });
  add("groups 0", [](auto& p) { p.groups = 0; });
  add("groups -2", [](auto& p) { p.groups = -2; });
  add("groups 16 > experts", [](auto& p) { p.groups = 16; });
  add("topk_groups 0", [](auto& p) { p.topk_groups = 0; });
  add("topk_groups groups + 1", [](auto& p) { p.topk_groups = 5; });
  add("topk_groups -1", [](auto& p) { p.topk_groups = -1; });
  add("top2-sum over groups of one", [](auto& p) {
    p.groups = 8;
    p.topk_groups = 4;
  });
  add("group_score 2 with groups", [](auto& p) { p.group_score = 2; });
  add("group_score -1 with groups", [](auto& p) { p.group_score = -1; });
  add("score 2", [](auto& p) { p.score = 2; });
  add("score -1", [](auto& p) { p.score = -1; });
  add("renormalize 2", [](auto& p) { p.renormalize = 2; });
  add("renormalize -1", [](auto& p) { p.renormalize = -1; });
  add("scale NaN", [](auto& p) { p.scale = std::numeric_limits<float>::quiet_NaN(); });
  add("scale +inf", [](auto& p) { p.scale = std::numeric_limits<float>::infinity(); });
  add("scale -inf", [](auto& p) { p.scale = -std::numeric_limits<float>::infinity(); });
  for (const auto& [what, p] : bad) {
    std::vector<int32_t> ids(4, 12345);
    std::vector<float> gates(4, 6.5f);
    EXPECT_EQ(route(&p, x.data(), ids.data(), gates.data()), MOE_ROUTE_EBADPARAMS) << what;
    EXPECT_EQ(ids, std::vector<int32_t>(4, 12345)) << what;
    EXPECT_EQ(gates, std::vector<float>(4, 6.5f)) << what;
  }
  std::vector<int32_t> ids(4);
  std::vector<float> gates(4);
  EXPECT_EQ(route(nullptr, x.data(), ids.data(), gates.data()), MOE_ROUTE_ENULL);
  EXPECT_EQ(route(&good, x.data(), ids.data(), gates.data()), MOE_ROUTE_OK);
  moe_route_params_v2 negative = good;
  negative.k = -1;
  EXPECT_EQ(route(&negative, x.data(), ids.data(), gates.data()), MOE_ROUTE_EBADSIZE);
  EXPECT_EQ(route(&good, nullptr, ids.data(), gates.data()), MOE_ROUTE_ENULL);
  // Domain edges that are valid: groups of one with max, group_score ignored without groups,
  // any sign of scale, E = 0 with any groups.
  moe_route_params_v2 ok = good;
  ok.groups = 8;
  ok.topk_groups = 8;
  ok.group_score = MOE_GROUP_MAX;
  EXPECT_EQ(route(&ok, x.data(), ids.data(), gates.data()), MOE_ROUTE_OK);
  ok = good;
  ok.groups = 1;
  ok.topk_groups = 1;
  ok.group_score = 77;
  ok.scale = -0.0f;
  EXPECT_EQ(route(&ok, x.data(), ids.data(), gates.data()), MOE_ROUTE_OK);
  ok = good;
  ok.experts = 0;
  ok.groups = 5;
  ok.topk_groups = 5;
  ok.group_score = MOE_GROUP_MAX;
  EXPECT_EQ(route(&ok, x.data(), ids.data(), gates.data()), MOE_ROUTE_OK);
  EXPECT_EQ(ids, std::vector<int32_t>(4, -1));
}

// A caller built against a later, longer struct: accepted, fields past ours ignored.
TEST_P(RouteV2, AcceptsALargerStruct) {
  struct Longer {
    moe_route_params_v2 p;
    int64_t future[4];
  } longer{};
  FamilyCase c;
  c.experts = 16;
  c.k = 2;
  c.sigmoid = true;
  c.renormalize = true;
  longer.p = paramsFor(c, 1);
  longer.p.struct_size = sizeof(Longer);
  for (auto& f : longer.future) f = -1;
  std::vector<float> x(16);
  for (int32_t e = 0; e < 16; ++e) x[e] = 0.1f * float(e % 7);
  int32_t ids[2];
  float gates[2];
  ASSERT_EQ(route(&longer.p, x.data(), ids, gates), MOE_ROUTE_OK);
  EXPECT_EQ(ids[0], 6);
  EXPECT_EQ(ids[1], 13);
}

// Well-separated rows: distinct logits on a shuffled grid with a little noise.
std::vector<float> separatedLogits(std::mt19937& rng, int32_t tokens, int32_t experts, float step) {
  std::vector<float> x(size_t(tokens) * experts);
  std::uniform_real_distribution<float> jitter(-0.2f * step, 0.2f * step);
  std::vector<int32_t> perm(static_cast<size_t>(experts));
  for (int32_t t = 0; t < tokens; ++t) {
    for (int32_t e = 0; e < experts; ++e) perm[e] = e;
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int32_t e = 0; e < experts; ++e) {
      x[size_t(t) * experts + e] = step * float(perm[e] - experts / 2) + jitter(rng);
    }
  }
  return x;
}

// With softmax, no bias, no groups, renormalisation and scale 1, v2 is v1's Mixtral rule:
// the same ids, and gates equal up to the routers' rounding (v1's logits mode computes its
// gates as a softmax over the kept logits, v2 from the probabilities).
TEST_P(RouteV2, SoftmaxRenormalisedIsV1) {
  std::mt19937 rng = testRng();
  for (const auto& [experts, k] :
       {std::pair{8, 2}, {64, 8}, {256, 8}, {60, 6}, {384, 8}, {128, 1}, {16, 16}, {300, 40}}) {
    SCOPED_TRACE("E=" + std::to_string(experts) + " k=" + std::to_string(k));
    const int32_t tokens = 257;
    const auto x = separatedLogits(rng, tokens, experts, 0.05f);
    FamilyCase c;
    c.experts = experts;
    c.k = k;
    c.renormalize = true;
    const moe_route_params_v2 p = paramsFor(c, tokens);
    std::vector<int32_t> ids1(size_t(tokens) * k), ids2(ids1.size());
    std::vector<float> g1(ids1.size()), g2(ids1.size());
    ASSERT_EQ(router_->route(tokens, experts, k, x.data(), ids1.data(), g1.data(), 0), 0);
    ASSERT_EQ(route(&p, x.data(), ids2.data(), g2.data()), 0);
    EXPECT_EQ(ids1, ids2);
    for (size_t i = 0; i < g1.size(); ++i) {
      EXPECT_NEAR(g1[i], g2[i], 2e-6f * std::max(1.0f, g1[i])) << "slot " << i;
    }
    if (GetParam() == "scalar-probs") {
      EXPECT_EQ(g1, g2);  // both the binary32 spec
    }
  }
}

struct Shape {
  const char* name;
  FamilyCase c;
};

std::vector<Shape> modelShapes(std::mt19937& rng) {
  std::uniform_real_distribution<float> biasDist(-0.3f, 0.3f);
  auto bias = [&](int32_t n) {
    std::vector<float> b(static_cast<size_t>(n));
    for (auto& v : b) v = biasDist(rng);
    return b;
  };
  std::vector<Shape> shapes;
  FamilyCase v3;  // DeepSeek-V3/R1
  v3.experts = 256;
  v3.k = 8;
  v3.sigmoid = true;
  v3.bias = bias(256);
  v3.groups = 8;
  v3.topkGroups = 4;
  v3.top2Sum = true;
  v3.renormalize = true;
  v3.scale = 2.5f;
  shapes.push_back({"DeepSeek-V3", v3});
  FamilyCase v2 = v3;  // DeepSeek-V2's rule at V3's size: softmax, groups by max, raw gates
  v2.sigmoid = false;
  v2.bias.clear();
  v2.top2Sum = false;
  v2.renormalize = false;
  v2.topkGroups = 3;
  v2.scale = 16.0f;
  shapes.push_back({"DeepSeek-V2 rule", v2});
  FamilyCase kimi;  // Kimi K2
  kimi.experts = 384;
  kimi.k = 8;
  kimi.sigmoid = true;
  kimi.bias = bias(384);
  kimi.renormalize = true;
  kimi.scale = 2.827f;
  shapes.push_back({"Kimi K2", kimi});
  FamilyCase llama;  // Llama 4 Maverick
  llama.experts = 128;
  llama.k = 1;
  llama.sigmoid = true;
  shapes.push_back({"Llama 4", llama});
  FamilyCase odd = v3;  // groups that are not whole vectors, k past half a vector
  odd.experts = 72;
  odd.bias = bias(72);
  odd.groups = 6;
  odd.topkGroups = 2;
  odd.k = 12;
  shapes.push_back({"E=72 G=6", odd});
  // The kernels' other paths: 16 groups of one vector (the merging network, threshold from
  // the groups' second keys), more groups than the network takes, groups smaller than a
  // vector, rows of less than a vector, k = 1 with softmax, more vectors than the fast
  // selection counts (the scalar selection).
  FamilyCase g16 = v3;
  g16.topkGroups = 5;
  g16.groups = 16;
  shapes.push_back({"E=256 G=16 top 5", g16});
  FamilyCase g32 = v3;
  g32.experts = 512;
  g32.bias = bias(512);
  g32.groups = 32;
  g32.topkGroups = 8;
  g32.top2Sum = false;
  shapes.push_back({"E=512 G=32 by max", g32});
  FamilyCase g8 = v3;
  g8.experts = 64;
  g8.bias = bias(64);
  g8.topkGroups = 3;
  shapes.push_back({"E=64 G=8", g8});
  FamilyCase mixtral;
  mixtral.experts = 8;
  mixtral.k = 2;
  mixtral.sigmoid = true;
  mixtral.bias = bias(8);
  mixtral.renormalize = true;
  shapes.push_back({"E=8 k=2 sigmoid", mixtral});
  FamilyCase scout;
  scout.experts = 16;
  scout.k = 1;
  shapes.push_back({"E=16 k=1 softmax raw", scout});
  FamilyCase wide = kimi;
  wide.experts = 1280;
  wide.bias = bias(1280);
  shapes.push_back({"E=1280 k=8", wide});
  return shapes;
}

// The judge (EXPECT_ROUTE_MATCH) on every token: selection and order within the budgets
// derived from the binary32 evaluation, gates within the contract's.
TEST_P(RouteV2, MatchesTheSpecAtModelShapes) {
  std::mt19937 rng = testRng();
  for (const auto& shape : modelShapes(rng)) {
    SCOPED_TRACE(shape.name);
    const FamilyCase& c = shape.c;
    const int32_t tokens = 1000;
    auto x = separatedLogits(rng, tokens, c.experts, c.sigmoid ? 0.02f : 0.05f);
    ASSERT_ROUTE_MATCH(*judged_, judgedCase(c, tokens, std::move(x)));
  }
}

// Exact ties everywhere: equal logits (every score the same exact value) and biases from a
// few exact binary fractions, so keys and group scores tie exactly and the lower-index rule
// decides every slot: exactly the spec's decision, no near-tie leniency.
TEST_P(RouteV2, ExactTiesGoToTheLowerIndex) {
  std::mt19937 rng = testRng();
  std::uniform_int_distribution<int> level(0, 3);
  for (const bool sigmoid : {true, false}) {
    for (const auto& shape : modelShapes(rng)) {
      FamilyCase c = shape.c;
      SCOPED_TRACE(std::string(shape.name) + (sigmoid ? " sigmoid" : " softmax"));
      c.sigmoid = sigmoid;
      if (c.experts % 8 != 0 && !sigmoid) continue;  // 1/E must be exact
      const int32_t tokens = 64;
      const std::vector<float> x(size_t(tokens) * c.experts, 0.0f);
      for (const bool withBias : {false, true}) {
        c.bias.clear();
        if (withBias) {
          for (int32_t e = 0; e < c.experts; ++e) c.bias.push_back(0.25f * float(level(rng)));
        }
        SCOPED_TRACE(withBias ? "with bias" : "without bias");
        ASSERT_ROUTE_MATCH_EXACTLY(*judged_, judgedCase(c, tokens, x));
      }
    }
  }
}

// A group's best two keys tying with another group's (top-2 sums equal): the lower group
// wins; and a bias that exactly cancels a score difference.
TEST_P(RouteV2, GroupTiesGoToTheLowerGroup) {
  FamilyCase c;
  c.experts = 8;
  c.k = 2;
  c.sigmoid = true;
  c.groups = 4;
  c.topkGroups = 1;
  c.top2Sum = true;
  c.renormalize = true;
  // sigmoid(0) = 0.5 everywhere; biases make groups 1 and 3 tie on 0.75 + 0.5 = 1.25 with
  // different members, group 3 first by the best key alone (1.0): the sum decides.
  c.bias = {0.0f, 0.0f, 0.25f, 0.0f, 0.0f, 0.0f, 0.5f, -0.25f};
  const std::vector<float> x(8, 0.0f);
  const moe_route_params_v2 p = paramsFor(c, 1);
  int32_t ids[2];
  float gates[2];
  ASSERT_EQ(route(&p, x.data(), ids, gates), 0);
  // Group scores: 1.0, 1.25 (0.75 + 0.5), 1.0, 1.25 (1.0 + 0.25): groups 1 and 3 tie, 1 wins.
  EXPECT_EQ(ids[0], 2);
  EXPECT_EQ(ids[1], 3);
  EXPECT_FLOAT_EQ(gates[0], 0.5f);
  // With the max, group 3 (best key 1.0) wins alone.
  moe_route_params_v2 byMax = p;
  byMax.group_score = MOE_GROUP_MAX;
  ASSERT_EQ(route(&byMax, x.data(), ids, gates), 0);
  EXPECT_EQ(ids[0], 6);
  EXPECT_EQ(ids[1], 7);
}

// The contract's nonfinite_rows: a NaN key (a NaN logit, or a softmax row with +inf) gives
// ids 0..n-1 and NaN gates, n = min(k, eligible); other rows of the batch are untouched by
// it; -inf and +inf logits under sigmoid are ordinary scores (0 and 1).
TEST_P(RouteV2, NonfiniteRowsAsTheContractSays) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  FamilyCase c;
  c.experts = 64;
  c.k = 8;
  c.sigmoid = true;
  c.groups = 8;
  c.topkGroups = 1;  // 8 eligible experts
  c.top2Sum = true;
  c.renormalize = true;
  c.k = 10;  // more slots than eligible experts: two empty slots
  std::vector<float> x(3 * 64);
  for (int32_t e = 0; e < 64; ++e) x[e] = x[64 + e] = x[128 + e] = 0.01f * float(e);
  x[64 + 17] = nan;
  x[128 + 3] = inf;  // sigmoid(+inf) = 1: group 0 wins, expert 3 first
  x[128 + 5] = -inf;
  const moe_route_params_v2 p = paramsFor(c, 3);
  std::vector<int32_t> ids(3 * 10);
  std::vector<float> gates(ids.size());
  ASSERT_EQ(route(&p, x.data(), ids.data(), gates.data()), 0);
  for (int32_t s = 0; s < 10; ++s) {
    EXPECT_EQ(ids[10 + s], s < 8 ? s : -1) << "slot " << s;
    if (s < 8) {
      EXPECT_TRUE(std::isnan(gates[10 + s])) << "slot " << s;
    } else {
      EXPECT_EQ(gates[10 + s], 0.0f);
    }
  }
  EXPECT_EQ(ids[0], 63);  // row 0: group 7 holds the largest logits
  EXPECT_EQ(ids[20], 3);
  EXPECT_EQ(ids[27], 5);  // sigmoid(-inf) = 0: the last of group 0
  EXPECT_EQ(gates[27], 0.0f);
  EXPECT_EQ(ids[28], -1);
  moe_route_params_v2 softmax = p;
  softmax.score = MOE_SCORE_SOFTMAX;
  ASSERT_EQ(route(&softmax, x.data(), ids.data(), gates.data()), 0);
  for (int32_t row : {1, 2}) {  // NaN, and +inf (softmax's max is not finite)
    for (int32_t s = 0; s < 8; ++s) EXPECT_EQ(ids[row * 10 + s], s) << "row " << row;
    EXPECT_TRUE(std::isnan(gates[row * 10]));
  }
  EXPECT_EQ(ids[0], 63);
}

// batch_invariant: a token's bits do not depend on its batch, position or thread count.
TEST_P(RouteV2, BatchInvariant) {
  std::mt19937 rng = testRng();
  std::normal_distribution<float> logit(0.0f, 2.0f);
  for (const auto& shape : modelShapes(rng)) {
    SCOPED_TRACE(shape.name);
    const FamilyCase& c = shape.c;
    const int32_t tokens = 67;
    std::vector<float> x(size_t(tokens) * c.experts);
    for (auto& v : x) v = logit(rng);
    const moe_route_params_v2 all = paramsFor(c, tokens);
    std::vector<int32_t> ids(size_t(tokens) * c.k), one(c.k);
    std::vector<float> gates(ids.size()), oneGate(c.k);
    ASSERT_EQ(router_->route_v2(&all, x.data(), ids.data(), gates.data(), 2), 0);
    moe_route_params_v2 single = paramsFor(c, 1);
    for (int32_t t = 0; t < tokens; ++t) {
      ASSERT_EQ(router_->route_v2(&single, x.data() + size_t(t) * c.experts, one.data(),
                                  oneGate.data(), 1),
                0);
      for (int32_t s = 0; s < c.k; ++s) {
        ASSERT_EQ(one[s], ids[size_t(t) * c.k + s]) << "token " << t;
        ASSERT_EQ(std::memcmp(&oneGate[s], &gates[size_t(t) * c.k + s], sizeof(float)), 0)
            << "token " << t << " slot " << s;
      }
    }
  }
}

// moe_route_v2_contract: the v2 ABI and the families this library supports (the fuzzer
// draws only those), beside v1's contract, which stays as it was.
TEST(RouteV2Contract, NamesTheAbiAndTheFamilies) {
  for (const BuiltinRouter& router : builtinRouters()) {
    const std::string v2(router.contract_v2_json);
    SCOPED_TRACE(v2);
    EXPECT_EQ(
        v2.rfind("{\"abi\": \"moe_route_v2\", \"name\": \"" + std::string(router.name) + "\"", 0),
        0u);
    EXPECT_NE(v2.find("\"families\": {\"scores\": [\"softmax\", \"sigmoid\"], \"groups\": true, "
                      "\"bias\": true}"),
              std::string::npos);
    EXPECT_EQ(v2.find("selects_on"), std::string::npos);
    EXPECT_EQ(std::string(router.contract_json).find("moe_route_v2"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(EachRouter, RouteV2, allBuiltinRouters(), routerTestName);

}  // namespace
}  // namespace moe::test
