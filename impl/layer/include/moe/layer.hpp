// moe::Layer: a Mixture-of-Experts block with E SwiGLU experts and top-k routing, the fast
// counterpart of the spec's forwardSpec (dense) and sparseForwardSpec (sparse).
//
// Tokens are the rows of X (T x d). Router logits are X * router_weights (d x E); the gates
// come from one of the project's routers (moe::findRouter, default "auto-probs") or any
// function with the moe_route_v1 shape, so a user's kernel routes the layer too.
//
// Guarantees (tested in tests/impl/layer):
// - forwardDense and forwardSparse use the same ids and gates; each token's expert outputs
//   are bitwise the same in both, and both add g_e * expert_e(x) in expert index order, so
//   they agree exactly (==) wherever every value is finite.
// - Bitwise batch invariance: a token's logits, routing (given a batch-invariant router) and
//   output do not depend on the other tokens or its position in the batch.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "moe/routers.hpp"
#include "moe/swiglu_expert.hpp"

namespace moe {

/// What the router decided for a batch: slot s of token t at t*k + s, best first;
/// -1 and gate 0 in slots past min(k, E).
struct Routing {
  std::int64_t tokens = 0;
  std::int64_t k = 0;
  std::vector<std::int32_t> ids;
  std::vector<float> gates;
};

/// How tokens are dispatched under a capacity (see capacity_dispatch.hpp).
struct CapacityOptions {
  /// Tokens per work unit: units are [0, U), [U, 2U), ...; a shorter last unit is a unit of
  /// its own size. Must be > 0.
  std::int64_t unit_tokens = 0;
  /// C = ceil(capacity_factor * n_unit * k / E) (switchCapacity), unless `capacity` is set.
  double capacity_factor = 1.0;
  /// A fixed capacity per expert per unit, overriding the factor.
  std::optional<std::int64_t> capacity;

  /// Units of `unitTokens`, capacity ceil(factor * n_unit * k / E).
  static CapacityOptions withFactor(std::int64_t unitTokens, double factor = 1.0) {
    return CapacityOptions{unitTokens, factor, std::nullopt};
  }
  /// Units of `unitTokens`, the same fixed capacity for every expert of every unit.
  static CapacityOptions withCapacity(std::int64_t unitTokens, std::int64_t capacity) {
    return CapacityOptions{unitTokens, 1.0, capacity};
  }
};

/// Everything forwardCapacity computed, so a checker can replay each step.
struct CapacityForward {
  RowMatrix output;                         ///< T x d
  Routing routing;                          ///< before any drop
  std::vector<std::uint8_t> keep;           ///< T*k, 1 where the slot was kept
  RowMatrix probabilities;                  ///< T x E router softmax (softmaxVecSpec order)
  std::vector<std::int64_t> unit_capacity;  ///< C of each unit
  std::vector<double> unit_balance_loss;    ///< switchBalance of each unit
};

/// Sizes and seed for Layer::random.
struct LayerShape {
  std::int64_t d = 0;
  std::int64_t h = 0;
  std::int64_t experts = 0;
  std::int64_t k = 0;
};

class Layer {
 public:
  /// Routes with the project's router of this name; throws std::invalid_argument if no such
  /// router is built in or this CPU cannot run it. `routerThreads` is passed to the router
  /// (0 = all cores).
  Layer(RowMatrix routerWeights, std::vector<SwiGluExpert> experts, std::int64_t k,
        std::string_view router = "auto-probs", std::int32_t routerThreads = 1);

  /// Routes with any function of the RouteFn shape (a user's kernel, the CUDA router, ...).
  Layer(RowMatrix routerWeights, std::vector<SwiGluExpert> experts, std::int64_t k, RouteFn route,
        std::string routerName, std::int32_t routerThreads = 1);

  /// Weights drawn uniformly from [-1/sqrt(fan_in), 1/sqrt(fan_in)] with a fixed seed.
  static Layer random(const LayerShape& shape, std::uint64_t seed,
                      std::string_view router = "auto-probs");

  std::int64_t modelDim() const { return router_weights_.rows(); }
  std::int64_t hiddenDim() const { return experts_.empty() ? 0 : experts_[0].hiddenDim(); }
  std::int64_t expertCount() const { return router_weights_.cols(); }
  std::int64_t k() const { return k_; }
  const std::string& routerName() const { return router_name_; }
  const RowMatrix& routerWeights() const { return router_weights_; }
  const SwiGluExpert& expert(std::int64_t e) const {
    return experts_.at(static_cast<std::size_t>(e));
  }

  /// X * router_weights (T x E), row by row (batch invariant).
  RowMatrix routerLogits(const RowMatrix& x) const;
  /// Softmax of each row of the logits in softmaxVecSpec's order (max fold seeded with x0,
  /// e_i = expf(x_i - m), sum in index order, one division each).
  static RowMatrix routerProbabilities(const RowMatrix& logits);
  /// Runs the router on the logits; throws std::runtime_error if it fails or returns an
  /// id outside [-1, E) (or -1 inside the first min(k, E) slots).
  Routing route(const RowMatrix& x) const;
  /// The same, from logits already computed (T x E).
  Routing routeLogits(const RowMatrix& logits) const;

  /// Dense: every expert runs on every token; out = sum over e in index order of
  /// g_e * expert_e(x), g_e = 0 for experts not kept (forwardSpec).
  RowMatrix forwardDense(const RowMatrix& x) const;
  RowMatrix forwardDense(const RowMatrix& x, const Routing& routing) const;

  /// Sparse: tokens grouped by expert, one product per expert group, then combined in
  /// expert index order (sparseForwardSpec). With `keep` (T*k, as from capacityKeeps), a
  /// slot with keep = 0 contributes nothing; the other gates are NOT renormalised, and a
  /// token whose every slot is dropped outputs 0 (adding the residual is the caller's job).
  RowMatrix forwardSparse(const RowMatrix& x) const;
  RowMatrix forwardSparse(const RowMatrix& x, const Routing& routing,
                          std::span<const std::uint8_t> keep = {}) const;

  /// Routes, applies the capacity per work unit, runs the sparse forward on the kept slots,
  /// and computes each unit's balancing loss.
  CapacityForward forwardCapacity(const RowMatrix& x, const CapacityOptions& options) const;

 private:
  void checkInput(const RowMatrix& x) const;
  void checkRouting(const Routing& routing, std::int64_t tokens) const;

  RowMatrix router_weights_;
  std::vector<SwiGluExpert> experts_;
  std::int64_t k_;
  RouteFn route_;
  std::string router_name_;
  std::int32_t router_threads_;
};

}  // namespace moe
