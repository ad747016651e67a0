#pragma once
// Spec.MoE.combineSpec, forwardSpec and sparseForwardSpec over flat output tensors, and
// the SwiGLU expert (swigluExpert) the layer door's experts are.
// Sums run in index order seeded with 0 (the seeds leave the order of a sum open; this
// project fixes it so that binary32 evaluations are reproducible).
#include <cstddef>
#include <span>
#include <vector>

#include "moe/oracle/context.hpp"
#include "moe/oracle/error.hpp"
#include "moe/oracle/softmax.hpp"

namespace moe::oracle {

// Lean: Spec.MoE.combineSpec — serves combineSpec_apply
// coordinate c: ((0 + g_0 * outs_0[c]) + g_1 * outs_1[c]) + ...
template <class A>
std::vector<A> combineSpec(std::span<const A> gates, std::span<const std::vector<A>> outs) {
  using C = Context<A>;
  requireSameSize("combineSpec: gates vs expert outputs", gates.size(), outs.size());
  const std::size_t width = outs.empty() ? 0 : outs[0].size();
  for (const auto& o : outs) requireSameSize("combineSpec: expert output lengths", width, o.size());
  std::vector<A> y(width, C::zero());
  for (std::size_t e = 0; e < gates.size(); ++e) {
    for (std::size_t c = 0; c < width; ++c) y[c] = C::add(y[c], C::mul(gates[e], outs[e][c]));
  }
  return y;
}

// Dense layer given its gates: every expert runs. experts(e, x) -> std::vector<A>.
template <class A, class Experts>
std::vector<A> forwardSpecFromGates(std::span<const A> gates, Experts&& experts,
                                    std::span<const A> x) {
  std::vector<std::vector<A>> outs;
  outs.reserve(gates.size());
  for (std::size_t e = 0; e < gates.size(); ++e) outs.push_back(experts(e, x));
  return combineSpec(gates, std::span<const std::vector<A>>(outs));
}

// Sparse block given its gates and kept mask: only kept experts run, summed in index order
// seeded with 0. Equals forwardSpecFromGates over the reals, and bit for bit in IEEE
// arithmetic whenever every displaced expert's output is finite (0 * inf = NaN otherwise).
template <class A, class Experts>
std::vector<A> sparseForwardSpecFromGates(std::span<const A> gates, const std::vector<bool>& mask,
                                          Experts&& experts, std::span<const A> x) {
  using C = Context<A>;
  requireSameSize("sparseForwardSpec: gates vs kept mask", gates.size(), mask.size());
  std::vector<A> y;
  bool first = true;
  for (std::size_t e = 0; e < gates.size(); ++e) {
    if (!mask[e]) continue;
    const std::vector<A> out = experts(e, x);
    if (first) y.assign(out.size(), C::zero()), first = false;
    requireSameSize("sparseForwardSpec: expert output lengths", y.size(), out.size());
    for (std::size_t c = 0; c < y.size(); ++c) y[c] = C::add(y[c], C::mul(gates[e], out[c]));
  }
  if (first && !gates.empty()) {
    // Nothing kept (k = 0): the sum is empty, zeros of the experts' output shape.
    y.assign(experts(0, x).size(), C::zero());
  }
  return y;
}

// Lean: Spec.MoE.forwardSpecFromProbs — serves forwardSpec_eq_sparseForwardSpec (over ℚ too)
template <class A, class Experts>
std::vector<A> forwardSpecFromProbs(std::size_t k, std::span<const A> probs, Experts&& experts,
                                    std::span<const A> x) {
  const std::vector<A> g = gatesFromProbs(k, probs);
  return forwardSpecFromGates(std::span<const A>(g), experts, x);
}

// Lean: Spec.MoE.sparseForwardSpecFromProbs — serves forwardSpec_eq_sparseForwardSpec (over ℚ too)
template <class A, class Experts>
std::vector<A> sparseForwardSpecFromProbs(std::size_t k, std::span<const A> probs,
                                          Experts&& experts, std::span<const A> x) {
  const std::vector<A> g = gatesFromProbs(k, probs);
  return sparseForwardSpecFromGates(std::span<const A>(g), gatesKeptMask(k, probs), experts, x);
}

// Lean: Spec.MoE.forwardSpec — serves forwardSpec_eq_sparseForwardSpec
// combineSpec (gatesVecSpec k (router x)) (fun e => experts e x); router(x) -> logits.
template <HasExp A, class Router, class Experts>
std::vector<A> forwardSpec(std::size_t k, Router&& router, Experts&& experts,
                           std::span<const A> x) {
  const std::vector<A> logits = router(x);
  const std::vector<A> p = softmaxVecSpec(std::span<const A>(logits));
  return forwardSpecFromProbs(k, std::span<const A>(p), experts, x);
}

// Lean: Spec.MoE.sparseForwardSpec — serves forwardSpec_eq_sparseForwardSpec
// Mixtral's block: only the kept experts run.
template <HasExp A, class Router, class Experts>
std::vector<A> sparseForwardSpec(std::size_t k, Router&& router, Experts&& experts,
                                 std::span<const A> x) {
  const std::vector<A> logits = router(x);
  const std::vector<A> p = softmaxVecSpec(std::span<const A>(logits));
  return sparseForwardSpecFromProbs(k, std::span<const A>(p), experts, x);
}

// Lean: Spec.MoE.dotSpec — serves swigluExpertWith (every dot product of a SwiGLU expert)
// ((0 + w_0 * x_0) + w_1 * x_1) + ... over the indices of x; w reads zero past its end.
template <class A>
A dotSpec(std::span<const A> w, std::span<const A> x) {
  using C = Context<A>;
  A total = C::zero();
  for (std::size_t j = 0; j < x.size(); ++j) {
    total = C::add(total, C::mul(j < w.size() ? w[j] : C::zero(), x[j]));
  }
  return total;
}

// Lean: Spec.MoE.siluWith — serves the Lean replay (SiLU with Lean's exps)
// a / (1 + exp(0 - a)): one subtraction, one exp, one add, one division, in that order.
template <class A, class ExpFn>
A siluWith(const A& a, ExpFn&& expFn) {
  using C = Context<A>;
  return C::div(a, C::add(C::one(), expFn(C::sub(C::zero(), a))));
}

// Lean: Spec.MoE.silu — serves the layer door (the SwiGLU experts' activation)
template <HasExp A>
A silu(const A& a) {
  return siluWith(a, [](const A& v) { return Context<A>::exp(v); });
}

// Lean: Spec.MoE.swigluExpertWith — serves the Lean replay (SwiGLU experts with Lean's exps)
// W2 (silu(W1 x) * (W3 x)): hidden i = silu(dot(W1[i], x)) * dot(W3[i], x) over the rows
// of W1 (a missing row of W3 reads as zeros, as in Lean), output c = dot(W2[c], hidden). expFn is
// called once per row of W1, in row order.
template <class A, class ExpFn>
std::vector<A> swigluExpertWith(std::span<const std::vector<A>> w1,
                                std::span<const std::vector<A>> w3,
                                std::span<const std::vector<A>> w2, std::span<const A> x,
                                ExpFn&& expFn) {
  using C = Context<A>;
  const std::vector<A> none;
  std::vector<A> hidden;
  hidden.reserve(w1.size());
  for (std::size_t i = 0; i < w1.size(); ++i) {
    const A gate = siluWith(dotSpec(std::span<const A>(w1[i]), x), expFn);
    const A up = dotSpec(std::span<const A>(i < w3.size() ? w3[i] : none), x);
    hidden.push_back(C::mul(gate, up));
  }
  std::vector<A> out;
  out.reserve(w2.size());
  for (const auto& row : w2) {
    out.push_back(dotSpec(std::span<const A>(row), std::span<const A>(hidden)));
  }
  return out;
}

// Lean: Spec.MoE.swigluExpert — serves the layer door (forwardSpec / sparseForwardSpec with
// SwiGLU experts)
template <HasExp A>
std::vector<A> swigluExpert(std::span<const std::vector<A>> w1, std::span<const std::vector<A>> w3,
                            std::span<const std::vector<A>> w2, std::span<const A> x) {
  return swigluExpertWith(w1, w3, w2, x, [](const A& v) { return Context<A>::exp(v); });
}

}  // namespace moe::oracle
