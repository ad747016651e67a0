#include "moe/fuzz/builtin_layer.hpp"

#include <string>

#include "moe/capacity_dispatch.hpp"
#include "moe/layer.hpp"

namespace moe::fuzz {

namespace {

RowMatrix matrixOf(std::span<const float> x, int64_t rows) {
  const int64_t cols = rows > 0 ? static_cast<int64_t>(x.size()) / rows : 0;
  return Eigen::Map<const RowMatrix>(x.data(), rows, cols);
}

std::vector<float> bufferOf(const RowMatrix& m) {
  return {m.data(), m.data() + m.size()};
}

}  // namespace

struct BuiltinLayer::State {
  moe::Layer layer;
};

BuiltinLayer::BuiltinLayer(int64_t d, int64_t h, int64_t experts, int64_t k, uint64_t seed,
                           std::string_view router)
    : state_(new State{moe::Layer::random({d, h, experts, k}, seed, router)}) {}

BuiltinLayer::~BuiltinLayer() = default;

std::vector<float> BuiltinLayer::forwardDense(std::span<const float> x, int64_t tokens) const {
  return bufferOf(state_->layer.forwardDense(matrixOf(x, tokens)));
}

std::vector<float> BuiltinLayer::forwardSparse(std::span<const float> x, int64_t tokens) const {
  return bufferOf(state_->layer.forwardSparse(matrixOf(x, tokens)));
}

std::vector<float> BuiltinLayer::routerLogits(std::span<const float> x, int64_t tokens) const {
  return bufferOf(state_->layer.routerLogits(matrixOf(x, tokens)));
}

BuiltinLayer::Routing BuiltinLayer::route(std::span<const float> x, int64_t tokens) const {
  moe::Routing r = state_->layer.route(matrixOf(x, tokens));
  return {std::move(r.ids), std::move(r.gates)};
}

std::vector<float> BuiltinLayer::expertOutput(int64_t e, std::span<const float> token) const {
  std::vector<float> out(token.size()), hidden;
  moe::applyExpert(state_->layer.expert(e), token.data(), 1, out.data(), hidden);
  return out;
}

int64_t builtinSwitchCapacity(int64_t experts, int64_t tokens, int64_t k, double factor) {
  return moe::switchCapacity(experts, tokens, k, factor);
}

std::vector<uint8_t> builtinCapacityKeeps(int64_t capacity, std::span<const int32_t> ids, int64_t k,
                                          int64_t experts) {
  return moe::capacityKeeps(capacity, ids, k, experts);
}

double builtinSwitchBalance(std::span<const int32_t> ids, int64_t k,
                            std::span<const float> probabilities, int64_t experts) {
  return moe::switchBalance(ids, k, probabilities, experts);
}

}  // namespace moe::fuzz
