#include "moe/layer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

#include "moe/capacity_dispatch.hpp"
#include "moe/row_product.hpp"

namespace moe {
namespace {

std::string sizeText(std::int64_t rows, std::int64_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

RouteFn builtinRoute(std::string_view name) {
  const BuiltinRouter* router = findRouter(name);
  if (router == nullptr) {
    throw std::invalid_argument("moe::Layer: no built-in router named '" + std::string(name) + "'");
  }
  if (router->available != nullptr && !router->available()) {
    throw std::invalid_argument("moe::Layer: router '" + std::string(name) +
                                "' needs an instruction set this CPU lacks");
  }
  return router->route;
}

RowMatrix randomMatrix(std::int64_t rows, std::int64_t cols, std::mt19937_64& rng) {
  const float bound = rows > 0 ? 1.0f / std::sqrt(static_cast<float>(rows)) : 1.0f;
  std::uniform_real_distribution<float> uniform(-bound, bound);
  RowMatrix m(rows, cols);
  for (std::int64_t i = 0; i < m.size(); ++i) m.data()[i] = uniform(rng);
  return m;
}

}  // namespace

Layer::Layer(RowMatrix routerWeights, std::vector<SwiGluExpert> experts, std::int64_t k,
             std::string_view router, std::int32_t routerThreads)
    : Layer(std::move(routerWeights), std::move(experts), k, builtinRoute(router),
            std::string(router), routerThreads) {}

Layer::Layer(RowMatrix routerWeights, std::vector<SwiGluExpert> experts, std::int64_t k,
             RouteFn route, std::string routerName, std::int32_t routerThreads)
    : router_weights_(std::move(routerWeights)),
      experts_(std::move(experts)),
      k_(k),
      route_(route),
      router_name_(std::move(routerName)),
      router_threads_(routerThreads) {
  if (route_ == nullptr) throw std::invalid_argument("moe::Layer: null route function");
  if (k_ < 0 || k_ > std::numeric_limits<std::int32_t>::max()) {
    throw std::invalid_argument("moe::Layer: k must be in [0, 2^31)");
  }
  if (router_threads_ < 0) throw std::invalid_argument("moe::Layer: router_threads must be >= 0");
  if (static_cast<std::int64_t>(experts_.size()) != router_weights_.cols()) {
    throw std::invalid_argument("moe::Layer: router weights are " +
                                sizeText(router_weights_.rows(), router_weights_.cols()) +
                                " (d x E) but " + std::to_string(experts_.size()) +
                                " experts were given");
  }
  if (router_weights_.cols() > std::numeric_limits<std::int32_t>::max()) {
    throw std::invalid_argument("moe::Layer: too many experts for the routing ABI");
  }
  for (std::size_t e = 0; e < experts_.size(); ++e) {
    checkExpertShape(experts_[e], router_weights_.rows(), static_cast<std::int64_t>(e));
    if (experts_[e].hiddenDim() != experts_[0].hiddenDim()) {
      throw std::invalid_argument("moe::Layer: every expert must have the same hidden size");
    }
  }
}

Layer Layer::random(const LayerShape& shape, std::uint64_t seed, std::string_view router) {
  if (shape.d < 0 || shape.h < 0 || shape.experts < 0 || shape.k < 0) {
    throw std::invalid_argument("moe::Layer::random: sizes must be >= 0");
  }
  std::mt19937_64 rng(seed);
  RowMatrix routerWeights = randomMatrix(shape.d, shape.experts, rng);
  std::vector<SwiGluExpert> experts;
  experts.reserve(static_cast<std::size_t>(shape.experts));
  for (std::int64_t e = 0; e < shape.experts; ++e) {
    SwiGluExpert expert;
    expert.w1 = randomMatrix(shape.d, shape.h, rng);
    expert.w3 = randomMatrix(shape.d, shape.h, rng);
    expert.w2 = randomMatrix(shape.h, shape.d, rng);
    experts.push_back(std::move(expert));
  }
  return Layer(std::move(routerWeights), std::move(experts), shape.k, router);
}

void Layer::checkInput(const RowMatrix& x) const {
  if (x.cols() != modelDim()) {
    throw std::invalid_argument("moe::Layer: input is " + sizeText(x.rows(), x.cols()) +
                                " but the layer's model dimension is " +
                                std::to_string(modelDim()));
  }
  if (x.rows() > std::numeric_limits<std::int32_t>::max()) {
    throw std::invalid_argument("moe::Layer: more than 2^31 - 1 tokens in one call");
  }
}

void Layer::checkRouting(const Routing& routing, std::int64_t tokens) const {
  const std::int64_t experts = expertCount();
  if (routing.tokens != tokens || routing.k != k_ ||
      static_cast<std::int64_t>(routing.ids.size()) != tokens * k_ ||
      routing.gates.size() != routing.ids.size()) {
    throw std::invalid_argument("moe::Layer: routing is for " + std::to_string(routing.tokens) +
                                " tokens and k = " + std::to_string(routing.k) + ", expected " +
                                std::to_string(tokens) + " and k = " + std::to_string(k_));
  }
  const std::int64_t filled = std::min(k_, experts);
  // seen[e] == t + 1 marks expert e as already used by token t (no clearing needed).
  std::vector<std::int64_t> seen(static_cast<std::size_t>(experts), 0);
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t s = 0; s < k_; ++s) {
      const std::int32_t id = routing.ids[static_cast<std::size_t>(t * k_ + s)];
      const bool inRange = s < filled ? (id >= 0 && id < experts) : id == -1;
      if (!inRange) {
        throw std::runtime_error("moe::Layer: router '" + router_name_ + "' returned id " +
                                 std::to_string(id) + " for token " + std::to_string(t) + " slot " +
                                 std::to_string(s) + " (E = " + std::to_string(experts) +
                                 ", k = " + std::to_string(k_) + ")");
      }
      if (id < 0) continue;
      if (seen[static_cast<std::size_t>(id)] == t + 1) {
        throw std::runtime_error("moe::Layer: router '" + router_name_ + "' repeated expert " +
                                 std::to_string(id) + " for token " + std::to_string(t));
      }
      seen[static_cast<std::size_t>(id)] = t + 1;
    }
  }
}

RowMatrix Layer::routerLogits(const RowMatrix& x) const {
  checkInput(x);
  RowMatrix logits(x.rows(), expertCount());
  rowMajorProduct(x.data(), x.rows(), modelDim(), router_weights_.data(), expertCount(),
                  logits.data());
  return logits;
}

RowMatrix Layer::routerProbabilities(const RowMatrix& logits) {
  RowMatrix probabilities(logits.rows(), logits.cols());
  const std::int64_t experts = logits.cols();
  for (std::int64_t t = 0; t < logits.rows(); ++t) {
    const float* x = logits.data() + t * experts;
    float* p = probabilities.data() + t * experts;
    if (experts == 0) continue;
    float m = x[0];
    for (std::int64_t i = 0; i < experts; ++i) m = m <= x[i] ? x[i] : m;  // Lean's maxOfLe
    float sum = 0.0f;
    for (std::int64_t i = 0; i < experts; ++i) {
      p[i] = std::exp(x[i] - m);
      sum += p[i];
    }
    for (std::int64_t i = 0; i < experts; ++i) p[i] = p[i] / sum;
  }
  return probabilities;
}

Routing Layer::route(const RowMatrix& x) const {
  return routeLogits(routerLogits(x));
}

Routing Layer::routeLogits(const RowMatrix& logits) const {
  if (logits.cols() != expertCount()) {
    throw std::invalid_argument("moe::Layer: logits are " + sizeText(logits.rows(), logits.cols()) +
                                " but the layer has " + std::to_string(expertCount()) + " experts");
  }
  if (logits.rows() > std::numeric_limits<std::int32_t>::max()) {
    throw std::invalid_argument("moe::Layer: more than 2^31 - 1 tokens in one call");
  }
  Routing routing;
  routing.tokens = logits.rows();
  routing.k = k_;
  // Sentinels a router must overwrite: checkRouting rejects any slot it left alone.
  routing.ids.assign(static_cast<std::size_t>(routing.tokens * k_),
                     std::numeric_limits<std::int32_t>::min());
  routing.gates.assign(routing.ids.size(), std::numeric_limits<float>::quiet_NaN());
  if (routing.tokens > 0 && k_ > 0) {
    const int status =
        route_(static_cast<std::int32_t>(routing.tokens), static_cast<std::int32_t>(expertCount()),
               static_cast<std::int32_t>(k_), logits.data(), routing.ids.data(),
               routing.gates.data(), router_threads_);
    if (status != 0) {
      throw std::runtime_error("moe::Layer: router '" + router_name_ + "' returned status " +
                               std::to_string(status));
    }
  }
  checkRouting(routing, routing.tokens);
  return routing;
}

RowMatrix Layer::forwardDense(const RowMatrix& x) const {
  return forwardDense(x, route(x));
}

RowMatrix Layer::forwardDense(const RowMatrix& x, const Routing& routing) const {
  checkInput(x);
  checkRouting(routing, x.rows());
  const std::int64_t tokens = x.rows(), d = modelDim(), experts = expertCount();
  // Full-length gates as gatesVecSpec: 0 for every expert that is not kept.
  std::vector<float> gates(static_cast<std::size_t>(tokens * experts), 0.0f);
  for (std::int64_t slot = 0; slot < tokens * k_; ++slot) {
    const std::int32_t id = routing.ids[static_cast<std::size_t>(slot)];
    if (id >= 0) {
      gates[static_cast<std::size_t>((slot / k_) * experts + id)] =
          routing.gates[static_cast<std::size_t>(slot)];
    }
  }
  RowMatrix out = RowMatrix::Zero(tokens, d);
  RowMatrix expertOut(tokens, d);
  std::vector<float> hidden;
  for (std::int64_t e = 0; e < experts; ++e) {
    applyExpert(experts_[static_cast<std::size_t>(e)], x.data(), tokens, expertOut.data(), hidden);
    for (std::int64_t t = 0; t < tokens; ++t) {
      const float g = gates[static_cast<std::size_t>(t * experts + e)];
      float* o = out.data() + t * d;
      const float* y = expertOut.data() + t * d;
      for (std::int64_t c = 0; c < d; ++c) o[c] += g * y[c];
    }
  }
  return out;
}

RowMatrix Layer::forwardSparse(const RowMatrix& x) const {
  return forwardSparse(x, route(x));
}

RowMatrix Layer::forwardSparse(const RowMatrix& x, const Routing& routing,
                               std::span<const std::uint8_t> keep) const {
  checkInput(x);
  checkRouting(routing, x.rows());
  if (!keep.empty() && keep.size() != routing.ids.size()) {
    throw std::invalid_argument(
        "moe::Layer::forwardSparse: keep has " + std::to_string(keep.size()) +
        " entries, expected tokens*k = " + std::to_string(routing.ids.size()));
  }
  const std::int64_t tokens = x.rows(), d = modelDim(), experts = expertCount();
  // Counting sort of the kept slots by expert; within an expert, tokens stay in order.
  std::vector<std::int64_t> start(static_cast<std::size_t>(experts + 1), 0);
  auto slotRuns = [&](std::int64_t slot) {
    const std::int32_t id = routing.ids[static_cast<std::size_t>(slot)];
    return id >= 0 && (keep.empty() || keep[static_cast<std::size_t>(slot)] != 0);
  };
  for (std::int64_t slot = 0; slot < tokens * k_; ++slot) {
    if (slotRuns(slot)) {
      ++start[static_cast<std::size_t>(routing.ids[static_cast<std::size_t>(slot)]) + 1];
    }
  }
  for (std::int64_t e = 0; e < experts; ++e) {
    start[static_cast<std::size_t>(e + 1)] += start[static_cast<std::size_t>(e)];
  }
  std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
  std::vector<std::int64_t> groupToken(static_cast<std::size_t>(start.back()));
  std::vector<float> groupGate(groupToken.size());
  for (std::int64_t slot = 0; slot < tokens * k_; ++slot) {
    if (!slotRuns(slot)) continue;
    const std::size_t at = static_cast<std::size_t>(
        fill[static_cast<std::size_t>(routing.ids[static_cast<std::size_t>(slot)])]++);
    groupToken[at] = slot / k_;
    groupGate[at] = routing.gates[static_cast<std::size_t>(slot)];
  }

  RowMatrix out = RowMatrix::Zero(tokens, d);
  std::vector<float> groupIn, groupOut, hidden;
  // Experts in index order, so each token adds its terms in the same order as forwardDense.
  for (std::int64_t e = 0; e < experts; ++e) {
    const std::int64_t first = start[static_cast<std::size_t>(e)];
    const std::int64_t rows = start[static_cast<std::size_t>(e + 1)] - first;
    if (rows == 0) continue;
    groupIn.resize(static_cast<std::size_t>(rows * d));
    groupOut.resize(static_cast<std::size_t>(rows * d));
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* src = x.data() + groupToken[static_cast<std::size_t>(first + r)] * d;
      std::copy(src, src + d, groupIn.data() + r * d);
    }
    applyExpert(experts_[static_cast<std::size_t>(e)], groupIn.data(), rows, groupOut.data(),
                hidden);
    for (std::int64_t r = 0; r < rows; ++r) {
      const float g = groupGate[static_cast<std::size_t>(first + r)];
      float* o = out.data() + groupToken[static_cast<std::size_t>(first + r)] * d;
      const float* y = groupOut.data() + r * d;
      for (std::int64_t c = 0; c < d; ++c) o[c] += g * y[c];
    }
  }
  return out;
}

CapacityForward Layer::forwardCapacity(const RowMatrix& x, const CapacityOptions& options) const {
  if (options.unit_tokens <= 0) {
    throw std::invalid_argument("moe::Layer::forwardCapacity: unit_tokens must be > 0");
  }
  if (options.capacity && *options.capacity < 0) {
    throw std::invalid_argument("moe::Layer::forwardCapacity: capacity must be >= 0");
  }
  CapacityForward result;
  const RowMatrix logits = routerLogits(x);
  result.routing = routeLogits(logits);
  result.probabilities = routerProbabilities(logits);
  const std::int64_t tokens = x.rows(), experts = expertCount();
  result.keep.assign(result.routing.ids.size(), 0);
  for (std::int64_t t0 = 0; t0 < tokens; t0 += options.unit_tokens) {
    const std::int64_t n = std::min(options.unit_tokens, tokens - t0);
    const std::int64_t capacity = options.capacity
                                      ? *options.capacity
                                      : switchCapacity(experts, n, k_, options.capacity_factor);
    const std::span<const std::int32_t> unitIds(result.routing.ids.data() + t0 * k_,
                                                static_cast<std::size_t>(n * k_));
    const std::vector<std::uint8_t> unitKeep = capacityKeeps(capacity, unitIds, k_, experts);
    std::copy(unitKeep.begin(), unitKeep.end(), result.keep.begin() + t0 * k_);
    const std::span<const float> unitProbabilities(result.probabilities.data() + t0 * experts,
                                                   static_cast<std::size_t>(n * experts));
    result.unit_capacity.push_back(capacity);
    result.unit_balance_loss.push_back(switchBalance(unitIds, k_, unitProbabilities, experts));
  }
  result.output = forwardSparse(x, result.routing, result.keep);
  return result;
}

}  // namespace moe
