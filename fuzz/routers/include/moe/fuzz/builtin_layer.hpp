// The built-in MoE layer and capacity dispatch (impl/layer) behind plain buffers, for the
// libFuzzer targets that test them (fuzz_layer, fuzz_capacity): fuzz/routers is fuzz/'s
// one door into impl/ (scripts/lint). Matrices are row-major float buffers.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace moe::fuzz {

// moe::Layer::random: d -> h -> d SwiGLU experts, E of them, k kept per token, routed by
// the built-in router `router`, weights from `seed`.
class BuiltinLayer {
 public:
  BuiltinLayer(int64_t d, int64_t h, int64_t experts, int64_t k, uint64_t seed,
               std::string_view router);
  ~BuiltinLayer();
  BuiltinLayer(const BuiltinLayer&) = delete;
  BuiltinLayer& operator=(const BuiltinLayer&) = delete;

  // x: tokens x d; each returns tokens x d.
  std::vector<float> forwardDense(std::span<const float> x, int64_t tokens) const;
  std::vector<float> forwardSparse(std::span<const float> x, int64_t tokens) const;
  // tokens x E: the router's logits of x.
  std::vector<float> routerLogits(std::span<const float> x, int64_t tokens) const;
  // The layer's routing of x: tokens * k ids and gates, token-major.
  struct Routing {
    std::vector<int32_t> ids;
    std::vector<float> gates;
  };
  Routing route(std::span<const float> x, int64_t tokens) const;
  // Expert e's output (d values) for one token's activations (d values).
  std::vector<float> expertOutput(int64_t e, std::span<const float> token) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// impl/layer's capacity_dispatch.hpp: switchCapacity, capacityKeeps, switchBalance.
int64_t builtinSwitchCapacity(int64_t experts, int64_t tokens, int64_t k, double factor);
std::vector<uint8_t> builtinCapacityKeeps(int64_t capacity, std::span<const int32_t> ids, int64_t k,
                                          int64_t experts);
double builtinSwitchBalance(std::span<const int32_t> ids, int64_t k,
                            std::span<const float> probabilities, int64_t experts);

}  // namespace moe::fuzz
