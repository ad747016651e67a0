#pragma once
// Certified combine, router logits and dense/sparse MoE forward passes over the reals,
// for binary32 inputs and weights. Router logits x·W are exact real numbers (finite sums of
// products of floats), routing on them is exact, and the gates are the real softmax of the
// kept logits; experts are linear (W_e x) or SwiGLU (W2 (silu(W1 x) * W3 x)).
#include <cstddef>
#include <span>
#include <vector>

#include "moe/oracle/certified/interval.hpp"

namespace moe::oracle::certified {

// Router weights W of shape [dIn][experts], row-major: logits_e = sum_i x_i * W[i][e].
struct RouterWeights {
  std::size_t dIn = 0, experts = 0;
  std::vector<float> W;
};

// Linear experts: out_e[c] = sum_i W[e][c][i] * x_i, W row-major [experts][dOut][dIn].
struct LinearExperts {
  std::size_t experts = 0, dIn = 0, dOut = 0;
  std::vector<float> W;
};

// SwiGLU experts: out_e = W2_e (silu(W1_e x) * (W3_e x)), silu(a) = a / (1 + exp(-a)).
// W1, W3 row-major [experts][dHidden][dIn]; W2 row-major [experts][dOut][dHidden].
struct SwiGluExperts {
  std::size_t experts = 0, dIn = 0, dHidden = 0, dOut = 0;
  std::vector<float> W1, W3, W2;
};

// Lean: combineSpec over the reals for binary32 gates and outputs (exact: point ranges).
std::vector<Certified> combineEnclosure(std::span<const float> gates,
                                        std::span<const std::vector<float>> outputs,
                                        const EnclosureOptions& options = {});

// x·W exactly (point ranges), correctly rounded to binary32/binary64.
std::vector<Certified> routerLogitsEnclosure(std::span<const float> x, const RouterWeights& router,
                                             const EnclosureOptions& options = {});

// Lean: forwardSpec over the reals: every expert runs, gates from the exact router logits.
std::vector<Certified> denseForwardEnclosure(std::size_t k, std::span<const float> x,
                                             const RouterWeights& router,
                                             const LinearExperts& experts,
                                             const EnclosureOptions& options = {});
std::vector<Certified> denseForwardEnclosure(std::size_t k, std::span<const float> x,
                                             const RouterWeights& router,
                                             const SwiGluExperts& experts,
                                             const EnclosureOptions& options = {});

// Lean: sparseForwardSpec over the reals: only the kept experts run.
std::vector<Certified> sparseForwardEnclosure(std::size_t k, std::span<const float> x,
                                              const RouterWeights& router,
                                              const LinearExperts& experts,
                                              const EnclosureOptions& options = {});
std::vector<Certified> sparseForwardEnclosure(std::size_t k, std::span<const float> x,
                                              const RouterWeights& router,
                                              const SwiGluExperts& experts,
                                              const EnclosureOptions& options = {});

}  // namespace moe::oracle::certified
