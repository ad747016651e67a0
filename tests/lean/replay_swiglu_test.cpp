// Replay of SwiGluForwardTest: the sparse block and the dense forwardSpec with SwiGLU
// experts (swigluExpertWith, siluWith, dotSpec) reproduce Lean bit for bit in binary32 and
// binary64, given Lean's exp values for the router's softmax and for every SiLU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <moe/oracle/combine.hpp>
#include <moe/oracle/softmax.hpp>
#include <string>
#include <vector>

#include "expect_same.hpp"
#include "lean_vectors.hpp"
#include "linear_router_replay.hpp"

namespace moe::lean {
namespace {

namespace oracle = moe::oracle;

template <class A>
using Mat = std::vector<std::vector<A>>;

template <class A>
Mat<A> matFromJson(const json& rows) {
  Mat<A> m;
  for (const auto& row : rows) m.push_back(vecFromJson<A>(row));
  return m;
}

template <class A>
std::vector<Mat<A>> matsFromJson(const json& mats) {
  std::vector<Mat<A>> out;
  for (const auto& m : mats) out.push_back(matFromJson<A>(m));
  return out;
}

template <class A>
std::vector<A> dots(const Mat<A>& m, std::span<const A> x) {
  std::vector<A> y;
  for (const auto& row : m) y.push_back(oracle::dotSpec(std::span<const A>(row), x));
  return y;
}

// One SwiGLU layer of a test, read once.
template <class A>
struct SwiGluLayer {
  std::size_t k = 0;
  std::vector<A> x;
  Mat<A> router;
  std::vector<Mat<A>> w1, w3, w2;
  Mat<A> siluExps;  // Lean's exp(0 - dotSpec(W1_e[i], x)), every expert e, row i

  explicit SwiGluLayer(const json& t)
      : k(t.at("k")),
        x(vecFromJson<A>(t.at("x"))),
        router(matFromJson<A>(t.at("routerWeights"))),
        w1(matsFromJson<A>(t.at("w1"))),
        w3(matsFromJson<A>(t.at("w3"))),
        w2(matsFromJson<A>(t.at("w2"))),
        siluExps(matFromJson<A>(t.at("siluExps"))) {}

  // Expert e with Lean's exps: exp is called exactly once per row of W1, with Lean's argument.
  std::vector<A> expertWithLeanExps(const json& t, std::size_t e, std::span<const A> in) const {
    std::vector<A> arguments;
    auto out = oracle::swigluExpertWith(
        std::span<const std::vector<A>>(w1.at(e)), std::span<const std::vector<A>>(w3.at(e)),
        std::span<const std::vector<A>>(w2.at(e)), in, ReplayedExp<A>{siluExps.at(e), &arguments});
    EXPECT_EQ(arguments.size(), siluExps.at(e).size())
        << describe(t) << ": expert " << e << " called exp a different number of times";
    const auto pre = dots(w1.at(e), in);
    for (std::size_t i = 0; i < std::min(arguments.size(), pre.size()); ++i) {
      EXPECT_TRUE(sameBits(arguments[i], A(0) - pre[i]))
          << describe(t) << ": expert " << e << " SiLU " << i << " exp argument is not 0 - W1 x";
    }
    return out;
  }

  std::vector<A> expertWithHostExp(std::size_t e, std::span<const A> in) const {
    return oracle::swigluExpert(std::span<const std::vector<A>>(w1.at(e)),
                                std::span<const std::vector<A>>(w3.at(e)),
                                std::span<const std::vector<A>>(w2.at(e)), in);
  }

  // Does the host's exp give Lean's value on every exp argument of this layer?
  bool hostExpAgrees(const std::vector<A>& logits, const std::vector<A>& leanRouterExps) const {
    A m = logits[0];
    for (const A& l : logits) m = oracle::Context<A>::max(m, l);
    for (std::size_t i = 0; i < logits.size(); ++i) {
      if (!sameBits(oracle::Context<A>::exp(logits[i] - m), leanRouterExps[i])) return false;
    }
    const std::span<const A> xs(x);
    for (std::size_t e = 0; e < w1.size(); ++e) {
      const auto pre = dots(w1[e], xs);
      for (std::size_t i = 0; i < pre.size(); ++i) {
        if (!sameBits(oracle::Context<A>::exp(A(0) - pre[i]), siluExps[e][i])) return false;
      }
    }
    return true;
  }
};

struct Tally {
  std::size_t seen = 0, hostExpRuns = 0;
  std::map<std::string, std::size_t> byContext, flagged;
};

template <class A>
void checkShapes(const json& t, const SwiGluLayer<A>& L) {
  const std::size_t E = t.at("experts"), H = t.at("hidden"), I = t.at("intermediate");
  ASSERT_EQ(L.router.size(), E) << describe(t);
  ASSERT_EQ(L.x.size(), H) << describe(t);
  ASSERT_EQ(L.w1.size(), E) << describe(t);
  ASSERT_EQ(L.w3.size(), E) << describe(t);
  ASSERT_EQ(L.w2.size(), E) << describe(t);
  ASSERT_EQ(L.siluExps.size(), E) << describe(t);
  for (std::size_t e = 0; e < E; ++e) {
    ASSERT_EQ(L.w1[e].size(), I) << describe(t) << " expert " << e;
    ASSERT_EQ(L.w3[e].size(), I) << describe(t) << " expert " << e;
    ASSERT_EQ(L.w2[e].size(), H) << describe(t) << " expert " << e;
    ASSERT_EQ(L.siluExps[e].size(), I) << describe(t) << " expert " << e;
  }
}

template <class A>
void replaySwiGlu(const json& t, Tally& tally) {
  const SwiGluLayer<A> L(t);
  checkShapes(t, L);
  if (::testing::Test::HasFatalFailure()) return;
  const std::span<const A> xs(L.x);

  const auto logits = dots(L.router, xs);
  const auto [leanExps, probs, gates] = replayLinearRouter(t, L.k, logits);

  const auto leanOutputs = matFromJson<A>(t.at("expertOutputs"));
  ASSERT_EQ(leanOutputs.size(), L.w1.size()) << describe(t);
  for (std::size_t e = 0; e < L.w1.size(); ++e) {
    expectSame(t, "expertOutputs[" + std::to_string(e) + "]", L.expertWithLeanExps(t, e, xs),
               leanOutputs[e]);
  }
  auto leanExpert = [&](std::size_t e, std::span<const A> in) {
    return L.expertWithLeanExps(t, e, in);
  };
  const auto sparse = oracle::sparseForwardSpecFromGates(
      std::span<const A>(gates), oracle::gatesKeptMask(L.k, std::span<const A>(probs)), leanExpert,
      xs);
  expectSame(t, "sparse", sparse, vecFromJson<A>(t.at("sparse")));
  const auto dense = oracle::forwardSpecFromGates(std::span<const A>(gates), leanExpert, xs);
  expectSame(t, "dense", dense, vecFromJson<A>(t.at("dense")));

  // What the flags claim, on the oracle's own values.
  if (hasFlag(t, "InfiniteDisplacedExpert")) {
    EXPECT_TRUE(anyNaN(dense) && !anyNaN(sparse)) << describe(t) << ": dense must be NaN";
  }
  bool overflow = false;
  for (std::size_t e = 0; e < L.w1.size(); ++e) {
    const auto pre = dots(L.w1[e], xs);
    for (std::size_t i = 0; i < pre.size(); ++i) {
      if (!std::isinf(L.siluExps[e][i])) continue;
      overflow = true;
      const A s = oracle::siluWith(pre[i], [&](const A&) { return L.siluExps[e][i]; });
      EXPECT_TRUE(s == A(0) && std::signbit(s) == std::signbit(pre[i]))
          << describe(t) << ": silu with exp +inf must be a zero of the argument's sign";
    }
  }
  EXPECT_EQ(overflow, hasFlag(t, "SiluExpOverflow")) << describe(t);

  // Where the host's exp agrees with Lean's on every argument, the oracle's own
  // sparseForwardSpec / forwardSpec with swigluExpert (host exp) give Lean's values unaided.
  if (L.hostExpAgrees(logits, leanExps)) {
    ++tally.hostExpRuns;
    auto router = [&](std::span<const A> in) { return dots(L.router, in); };
    auto hostExpert = [&](std::size_t e, std::span<const A> in) {
      return L.expertWithHostExp(e, in);
    };
    expectSame(t, "sparseForwardSpec (host exp)",
               oracle::sparseForwardSpec(L.k, router, hostExpert, xs),
               vecFromJson<A>(t.at("sparse")));
    expectSame(t, "forwardSpec (host exp)", oracle::forwardSpec(L.k, router, hostExpert, xs),
               vecFromJson<A>(t.at("dense")));
  }
}

TEST(LeanReplaySwiGlu, SparseAndDenseBitExactWithLeanExps) {
  Tally tally;
  for (const json& t : testsOfType(vectors(), "SwiGluForwardTest")) {
    const std::string context = t.at("context");
    for (const char* f : {"InfiniteDisplacedExpert", "SiluExpOverflow", "KZero"}) {
      tally.flagged[f] += hasFlag(t, f) ? 1 : 0;
    }
    if (context == "binary32") {
      replaySwiGlu<float>(t, tally);
    } else if (context == "binary64") {
      replaySwiGlu<double>(t, tally);
    } else {
      ADD_FAILURE() << describe(t) << ": unknown context " << context;
    }
    ++tally.byContext[context];
    ++tally.seen;
  }
  EXPECT_GE(tally.byContext["binary32"], 15u);
  EXPECT_GE(tally.byContext["binary64"], 15u);
  EXPECT_GE(tally.hostExpRuns, 1u);
  // The edge cases the vectors must hold, in binary32 and binary64 each.
  EXPECT_GE(tally.flagged["InfiniteDisplacedExpert"], 2u);
  EXPECT_GE(tally.flagged["SiluExpOverflow"], 2u);
  std::printf("SwiGLU layer with the host's exp checked on %zu of %zu tests\n", tally.hostExpRuns,
              tally.seen);
}

// The SiLU is a / (1 + exp(0 - a)) in that order, and W1 (under the SiLU) is not W3: with a
// stand-in exp (y -> y * y) over exact rationals, silu 2 = 2/5 and x = [1, 2],
// W1 = [[1, 2]], W3 = [[3, 0]], W2 = [[2], [1]] give [15/13, 15/26], as Spec.lean's #guard.
TEST(LeanReplaySwiGlu, RationalSwiGluMatchesSpecGuards) {
  auto square = [](const mpq_class& y) { return mpq_class(y * y); };
  EXPECT_EQ(oracle::siluWith(mpq_class(2), square), mpq_class(2, 5));
  const Mat<mpq_class> w1{{1, 2}}, w3{{3, 0}}, w2{{2}, {1}};
  const std::vector<mpq_class> x{1, 2};
  const auto y = oracle::swigluExpertWith(
      std::span<const std::vector<mpq_class>>(w1), std::span<const std::vector<mpq_class>>(w3),
      std::span<const std::vector<mpq_class>>(w2), std::span<const mpq_class>(x), square);
  EXPECT_EQ(y, (std::vector<mpq_class>{mpq_class(15, 13), mpq_class(15, 26)}));
}

}  // namespace
}  // namespace moe::lean
