// The router of a ForwardTest or SwiGluForwardTest (logits = W x, softmax, gatesFromProbs)
// replayed with Lean's exps: what both forward replays check before their experts.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <moe/oracle/softmax.hpp>
#include <span>
#include <vector>

#include "expect_same.hpp"
#include "lean_vectors.hpp"

namespace moe::lean {

template <class A>
struct ReplayedRouting {
  std::vector<A> leanExps, probs, gates;  // Lean's exps, as the vector holds them
};

// Checks the oracle's logits, every exp argument (against Lean's max) and the gates against
// the vector's, and returns Lean's exps, the probabilities and the gates the forward passes go
// on with.
template <class A>
ReplayedRouting<A> replayLinearRouter(const json& t, std::size_t k, const std::vector<A>& logits) {
  expectSame(t, "logits", logits, vecFromJson<A>(t.at("logits")));
  ReplayedRouting<A> r;
  r.leanExps = vecFromJson<A>(t.at("exps"));
  std::vector<A> arguments;
  r.probs = oracle::softmaxVecSpecWith(std::span<const A>(logits),
                                       ReplayedExp<A>{r.leanExps, &arguments});
  EXPECT_EQ(expArgumentMismatch(logits, scalarFromText<A>(t.at("max")), arguments), "")
      << describe(t);
  r.gates = oracle::gatesFromProbs(k, std::span<const A>(r.probs));
  expectSame(t, "gates", r.gates, vecFromJson<A>(t.at("gates")));
  return r;
}

}  // namespace moe::lean
