#pragma once
// Activation.softmaxVecSpec and Spec.MoE.gatesVecSpec, in TorchLean's exact order of
// operations (docs/design.md §1, The spec), so that evaluated in binary32 they reproduce
// Lean bit for bit given the same exp.
#include <cstddef>
#include <span>
#include <vector>

#include "moe/oracle/context.hpp"
#include "moe/oracle/routing.hpp"

namespace moe::oracle {

// Lean: Activation.softmaxVecSpecWith — serves the Lean replay, moe-gate-permute (softmax)
// n = 0: x. Else m = left fold of max seeded with x0; e_i = expFn(x_i - m);
// d = ((0 + e_0) + e_1) + ...; out_i = e_i / d.
template <class A, class ExpFn>
std::vector<A> softmaxVecSpecWith(std::span<const A> x, ExpFn&& expFn) {
  using C = Context<A>;
  std::vector<A> out(x.begin(), x.end());
  if (x.empty()) return out;
  A m = x[0];
  for (std::size_t i = 0; i < x.size(); ++i) m = C::max(m, x[i]);
  A d = C::zero();
  for (std::size_t i = 0; i < x.size(); ++i) {
    out[i] = expFn(C::sub(x[i], m));
    d = C::add(d, out[i]);
  }
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = C::div(out[i], d);
  return out;
}

// Lean: Activation.softmaxVecSpec — serves kept_softmax, smx-congr
template <HasExp A>
std::vector<A> softmaxVecSpec(std::span<const A> x) {
  return softmaxVecSpecWith(x, [](const A& v) { return Context<A>::exp(v); });
}

// The kept set of gatesVecSpec: Lean's ranking of the probabilities. Fast path when every
// probability is a number; Lean's literal total ranking otherwise (rows that are not real,
// whose binary32 spec value is the reference for routers, docs/design.md §3).
template <class A>
std::vector<bool> gatesKeptMask(std::size_t k, std::span<const A> p) {
  for (const A& v : p) {
    if (Context<A>::isNaN(v)) return keptMaskLiteral(k, p);
  }
  return keptMask(k, p);
}

// Lean: Spec.MoE.gatesFromProbs — serves getScalar_gatesVecSpec, gatesVecSpec_simplex
// gate_e = kept k p e ? p_e / (sum of p_j over kept j, index order, seeded with 0) : 0.
// Usable over mpq_class with rational probabilities (forwardSpec_eq_sparseForwardSpec).
template <class A>
std::vector<A> gatesFromProbs(std::size_t k, std::span<const A> p) {
  using C = Context<A>;
  const std::vector<bool> mask = gatesKeptMask(k, p);
  A denom = C::zero();
  for (std::size_t j = 0; j < p.size(); ++j) {
    if (mask[j]) denom = C::add(denom, p[j]);
  }
  std::vector<A> gates(p.size(), C::zero());
  for (std::size_t e = 0; e < p.size(); ++e) {
    if (mask[e]) gates[e] = C::div(p[e], denom);
  }
  return gates;
}

// Lean: Spec.MoE.gatesVecSpecWith — serves the Lean replay
template <class A, class ExpFn>
std::vector<A> gatesVecSpecWith(std::size_t k, std::span<const A> logits, ExpFn&& expFn) {
  const std::vector<A> p = softmaxVecSpecWith(logits, expFn);
  return gatesFromProbs(k, std::span<const A>(p));
}

// Lean: Spec.MoE.gatesVecSpec — serves getScalar_gatesVecSpec, gatesVecSpec_simplex
// Full length E, 0 where not kept; the kept set is ranked on the probabilities.
template <HasExp A>
std::vector<A> gatesVecSpec(std::size_t k, std::span<const A> logits) {
  const std::vector<A> p = softmaxVecSpec(logits);
  return gatesFromProbs(k, std::span<const A>(p));
}

}  // namespace moe::oracle
