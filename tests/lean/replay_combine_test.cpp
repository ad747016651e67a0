// Replay of CombineTest and ForwardTest: combineSpec in binary32, binary64 and exact
// rationals equals Lean's; the dense forwardSpec and the sparse block with linear experts
// reproduce Lean bit for bit given Lean's router exp values; and binary32 combine agrees
// with the exact (certified) combine within the recursive-summation bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <moe/oracle/certified/forward.hpp>
#include <moe/oracle/combine.hpp>
#include <moe/oracle/softmax.hpp>

#include "expect_same.hpp"
#include "float_bounds.hpp"
#include "lean_vectors.hpp"
#include "linear_router_replay.hpp"

namespace moe::lean {
namespace {

namespace oracle = moe::oracle;
namespace certified = moe::oracle::certified;

template <class A>
std::vector<std::vector<A>> matFromJson(const json& rows) {
  std::vector<std::vector<A>> m;
  for (const auto& row : rows) m.push_back(vecFromJson<A>(row));
  return m;
}

template <class A>
void replayCombine(const json& t) {
  const auto g = vecFromJson<A>(t.at("gates"));
  const auto outs = matFromJson<A>(t.at("outputs"));
  const auto y = oracle::combineSpec(std::span<const A>(g), std::span<const std::vector<A>>(outs));
  expectSame(t, "combined", y, vecFromJson<A>(t.at("combined")));
}

TEST(LeanReplayCombine, CombineSpecMatchesLeanInEveryContext) {
  std::size_t seen = 0;
  for (const json& t : testsOfType(vectors(), "CombineTest")) {
    const std::string context = t.at("context");
    if (context == "binary32") {
      replayCombine<float>(t);
    } else if (context == "binary64") {
      replayCombine<double>(t);
    } else if (context == "rational") {
      replayCombine<mpq_class>(t);
    } else {
      ADD_FAILURE() << describe(t) << ": unknown context " << context;
    }
    ++seen;
  }
  EXPECT_GE(seen, 100u);
}

TEST(LeanReplayCombine, Binary32CombineWithinSummationBoundOfExact) {
  std::size_t checked = 0;
  for (const json& t : testsOfType(vectors(), "CombineTest")) {
    if (t.at("context") != "binary32") continue;
    const auto g = vecFromJson<float>(t.at("gates"));
    const auto outs = matFromJson<float>(t.at("outputs"));
    const auto lean = vecFromJson<float>(t.at("combined"));
    const auto exact = certified::combineEnclosure(g, outs);
    ASSERT_EQ(exact.size(), lean.size()) << describe(t);
    for (std::size_t c = 0; c < lean.size(); ++c) {
      double magnitude = 0;
      for (std::size_t e = 0; e < g.size(); ++e) magnitude += std::fabs(double(g[e]) * outs[e][c]);
      const double b = combineBound<float>(g.size(), magnitude);
      EXPECT_GE(lean[c], exact[c].range.lowerDouble() - b) << describe(t) << " coordinate " << c;
      EXPECT_LE(lean[c], exact[c].range.upperDouble() + b) << describe(t) << " coordinate " << c;
      ++checked;
    }
  }
  EXPECT_GE(checked, 50u);
}

// Lean's linear maps: a dot product is ((0 + w_0 x_0) + w_1 x_1) + ... in index order.
template <class A>
std::vector<A> matVec(const std::vector<std::vector<A>>& m, std::span<const A> x) {
  using C = oracle::Context<A>;
  std::vector<A> y;
  for (const auto& row : m) {
    A acc = C::zero();
    for (std::size_t j = 0; j < x.size(); ++j) acc = C::add(acc, C::mul(row[j], x[j]));
    y.push_back(acc);
  }
  return y;
}

// What the edge-case flags of a ForwardTest claim, checked on the oracle's own values:
// InfiniteDisplacedExpert makes dense NaN where sparse is not; NonFiniteRow has NaN gates;
// NearTieAtKeptBoundary has two distinct logits at most 2^-20 apart (relative) at the
// kept boundary of the logits.
template <class A>
void checkForwardFlags(const json& t, const std::vector<A>& logits, const std::vector<A>& gates,
                       const std::vector<A>& dense, const std::vector<A>& sparse, std::size_t k) {
  if (hasFlag(t, "InfiniteDisplacedExpert") && !hasFlag(t, "NonFiniteRow")) {
    EXPECT_TRUE(anyNaN(dense) && !anyNaN(sparse)) << describe(t) << ": dense must be NaN";
  }
  if (anyNaN(gates)) {
    EXPECT_TRUE(hasFlag(t, "NonFiniteRow")) << describe(t);
  }
  if (hasFlag(t, "NonFiniteRow") && k > 0) {
    EXPECT_TRUE(anyNaN(gates)) << describe(t);
  }
  if (hasFlag(t, "NearTieAtKeptBoundary")) {
    const auto order = oracle::keptExperts(k + 1, std::span<const A>(logits));
    ASSERT_GT(order.size(), k) << describe(t);
    ASSERT_GT(k, 0u) << describe(t);
    const A a = logits[order[k - 1]], b = logits[order[k]];
    EXPECT_TRUE(a > b) << describe(t) << ": the boundary logits must differ";
    EXPECT_LE(double(a) - double(b), std::ldexp(std::max(std::fabs(double(a)), 1.0), -20))
        << describe(t) << ": the boundary logits must be within 2^-20";
  }
}

template <class A>
void replayForward(const json& t, std::size_t& hostExpRuns) {
  const std::size_t k = t.at("k");
  const auto x = vecFromJson<A>(t.at("x"));
  const auto W = matFromJson<A>(t.at("routerWeights"));
  std::vector<std::vector<std::vector<A>>> experts;
  for (const auto& m : t.at("expertWeights")) experts.push_back(matFromJson<A>(m));
  ASSERT_EQ(experts.size(), t.at("experts").get<std::size_t>()) << describe(t);
  const std::span<const A> xs(x);
  auto expertFn = [&](std::size_t e, std::span<const A> in) { return matVec(experts.at(e), in); };

  const auto logits = matVec(W, xs);
  const auto [leanExps, probs, gates] = replayLinearRouter(t, k, logits);
  const auto dense = oracle::forwardSpecFromGates(std::span<const A>(gates), expertFn, xs);
  expectSame(t, "dense", dense, vecFromJson<A>(t.at("dense")));
  const auto sparse = oracle::sparseForwardSpecFromGates(
      std::span<const A>(gates), oracle::gatesKeptMask(k, std::span<const A>(probs)), expertFn, xs);
  expectSame(t, "sparse", sparse, vecFromJson<A>(t.at("sparse")));
  checkForwardFlags<A>(t, logits, gates, dense, sparse, k);

  // Where the host's exp agrees with Lean's on every argument, the oracle's own
  // forwardSpec / sparseForwardSpec (host exp) must give Lean's values unaided.
  A m = logits[0];
  for (const A& l : logits) m = oracle::Context<A>::max(m, l);
  bool hostAgrees = true;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    hostAgrees = hostAgrees && sameBits(oracle::Context<A>::exp(logits[i] - m), leanExps[i]);
  }
  if (!hostAgrees) return;
  ++hostExpRuns;
  auto router = [&](std::span<const A> in) { return matVec(W, in); };
  expectSame(t, "forwardSpec (host exp)", oracle::forwardSpec(k, router, expertFn, xs),
             vecFromJson<A>(t.at("dense")));
  expectSame(t, "sparseForwardSpec (host exp)", oracle::sparseForwardSpec(k, router, expertFn, xs),
             vecFromJson<A>(t.at("sparse")));
}

TEST(LeanReplayForward, DenseAndSparseBitExactWithLeanExps) {
  std::size_t seen = 0, hostExpRuns = 0;
  std::map<std::string, std::size_t> flagged;
  for (const json& t : testsOfType(vectors(), "ForwardTest")) {
    for (const char* f : {"InfiniteDisplacedExpert", "NonFiniteRow", "NearTieAtKeptBoundary"}) {
      flagged[f] += hasFlag(t, f) ? 1 : 0;
    }
    if (t.at("context") == "binary32") {
      replayForward<float>(t, hostExpRuns);
    } else if (t.at("context") == "binary64") {
      replayForward<double>(t, hostExpRuns);
    } else {
      ADD_FAILURE() << describe(t) << ": unknown context " << t.at("context");
    }
    ++seen;
  }
  EXPECT_GE(seen, 100u);
  EXPECT_GE(hostExpRuns, 1u);
  // The edge cases the vectors must hold, in binary32 and binary64 each.
  EXPECT_GE(flagged["InfiniteDisplacedExpert"], 4u);
  EXPECT_GE(flagged["NonFiniteRow"], 4u);
  EXPECT_GE(flagged["NearTieAtKeptBoundary"], 4u);
  std::printf("forwardSpec with the host's exp checked on %zu of %zu tests\n", hostExpRuns, seen);
}

// forwardSpec_eq_sparseForwardSpec over exact rationals: the oracle's dense layer and sparse
// block from the probabilities give Lean's values, and the two are equal (Lean says so too).
TEST(LeanReplayForward, DenseEqualsSparseOverRationalProbabilities) {
  std::size_t seen = 0, tied = 0;
  for (const json& t : testsOfType(vectors(), "ForwardProbsTest")) {
    ASSERT_EQ(t.at("context"), "rational") << describe(t);
    const std::size_t k = t.at("k");
    const auto x = vecFromJson<mpq_class>(t.at("x"));
    const auto p = vecFromJson<mpq_class>(t.at("probs"));
    std::vector<std::vector<std::vector<mpq_class>>> experts;
    for (const auto& m : t.at("expertWeights")) experts.push_back(matFromJson<mpq_class>(m));
    ASSERT_EQ(experts.size(), p.size()) << describe(t);
    auto expertFn = [&](std::size_t e, std::span<const mpq_class> in) {
      return matVec(experts.at(e), in);
    };
    const std::span<const mpq_class> ps(p), xs(x);
    expectSame(t, "gates", oracle::gatesFromProbs(k, ps), vecFromJson<mpq_class>(t.at("gates")));
    const auto dense = oracle::forwardSpecFromProbs(k, ps, expertFn, xs);
    const auto sparse = oracle::sparseForwardSpecFromProbs(k, ps, expertFn, xs);
    expectSame(t, "dense", dense, vecFromJson<mpq_class>(t.at("dense")));
    expectSame(t, "sparse", sparse, vecFromJson<mpq_class>(t.at("sparse")));
    EXPECT_TRUE(t.at("denseEqualsSparse").get<bool>()) << describe(t) << ": Lean's dense != sparse";
    EXPECT_EQ(dense, sparse) << describe(t);
    ++seen;
    tied += hasFlag(t, "TieAtKeptBoundary") ? 1 : 0;
  }
  EXPECT_GE(seen, 100u);
  EXPECT_GE(tied, 5u) << "ties at the kept boundary must be among them";
}

}  // namespace
}  // namespace moe::lean
