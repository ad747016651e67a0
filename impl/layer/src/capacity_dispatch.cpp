#include "moe/capacity_dispatch.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace moe {
namespace {

std::int64_t tokenCount(std::span<const std::int32_t> ids, std::int64_t k, const char* what) {
  if (k < 0) throw std::invalid_argument(std::string(what) + ": k must be >= 0");
  if (k == 0) {
    if (!ids.empty()) throw std::invalid_argument(std::string(what) + ": k = 0 needs no ids");
    return 0;
  }
  if (static_cast<std::int64_t>(ids.size()) % k != 0) {
    throw std::invalid_argument(std::string(what) + ": ids.size() = " + std::to_string(ids.size()) +
                                " is not a multiple of k = " + std::to_string(k));
  }
  return static_cast<std::int64_t>(ids.size()) / k;
}

void checkId(std::int32_t id, std::int64_t experts, std::size_t where, const char* what) {
  if (id < -1 || id >= experts) {
    throw std::invalid_argument(std::string(what) + ": id " + std::to_string(id) + " at slot " +
                                std::to_string(where) + " is outside [-1, " +
                                std::to_string(experts) + ")");
  }
}

}  // namespace

std::int64_t switchCapacity(std::int64_t experts, std::int64_t tokens, std::int64_t k,
                            double capacityFactor) {
  if (experts < 0 || tokens < 0 || k < 0) {
    throw std::invalid_argument("moe::switchCapacity: sizes must be >= 0");
  }
  if (!std::isfinite(capacityFactor) || capacityFactor < 0) {
    throw std::invalid_argument("moe::switchCapacity: capacity factor must be finite and >= 0");
  }
  if (experts == 0) return 0;
  const std::int64_t slots = tokens * k;
  if (capacityFactor == 1.0) return (slots + experts - 1) / experts;
  return static_cast<std::int64_t>(
      std::ceil(capacityFactor * static_cast<double>(slots) / static_cast<double>(experts)));
}

std::vector<std::uint8_t> capacityKeeps(std::int64_t capacity, std::span<const std::int32_t> ids,
                                        std::int64_t k, std::int64_t experts) {
  if (capacity < 0) throw std::invalid_argument("moe::capacityKeeps: capacity must be >= 0");
  if (experts < 0) throw std::invalid_argument("moe::capacityKeeps: experts must be >= 0");
  tokenCount(ids, k, "moe::capacityKeeps");
  std::vector<std::int64_t> taken(static_cast<std::size_t>(experts), 0);
  std::vector<std::uint8_t> keep(ids.size(), 0);
  // ids is token-major, so walking it in order is exactly the token-order priority.
  for (std::size_t slot = 0; slot < ids.size(); ++slot) {
    const std::int32_t id = ids[slot];
    checkId(id, experts, slot, "moe::capacityKeeps");
    if (id < 0) continue;
    std::int64_t& used = taken[static_cast<std::size_t>(id)];
    if (used < capacity) {
      keep[slot] = 1;
      ++used;
    }
  }
  return keep;
}

double switchBalance(std::span<const std::int32_t> ids, std::int64_t k,
                     std::span<const float> probabilities, std::int64_t experts) {
  if (experts < 0) throw std::invalid_argument("moe::switchBalance: experts must be >= 0");
  if (k < 0) throw std::invalid_argument("moe::switchBalance: k must be >= 0");
  const std::int64_t tokens =
      experts == 0 ? 0 : static_cast<std::int64_t>(probabilities.size()) / experts;
  if (tokens * experts != static_cast<std::int64_t>(probabilities.size()) ||
      static_cast<std::int64_t>(ids.size()) != tokens * k) {
    throw std::invalid_argument(
        "moe::switchBalance: probabilities must be tokens x experts and ids tokens x k; got " +
        std::to_string(probabilities.size()) + " probabilities, " + std::to_string(ids.size()) +
        " ids, experts = " + std::to_string(experts) + ", k = " + std::to_string(k));
  }
  if (tokens == 0) return 0.0;
  std::vector<double> routed(static_cast<std::size_t>(experts), 0.0);
  std::vector<double> probabilitySum(static_cast<std::size_t>(experts), 0.0);
  for (std::int64_t t = 0; t < tokens; ++t) {
    if (k > 0) {
      const std::int32_t top1 = ids[static_cast<std::size_t>(t * k)];
      checkId(top1, experts, static_cast<std::size_t>(t * k), "moe::switchBalance");
      if (top1 >= 0) routed[static_cast<std::size_t>(top1)] += 1.0;
    }
    for (std::int64_t e = 0; e < experts; ++e) {
      probabilitySum[static_cast<std::size_t>(e)] +=
          probabilities[static_cast<std::size_t>(t * experts + e)];
    }
  }
  const double n = static_cast<double>(tokens);
  double sum = 0.0;
  for (std::int64_t e = 0; e < experts; ++e) {
    sum += (routed[static_cast<std::size_t>(e)] / n) *
           (probabilitySum[static_cast<std::size_t>(e)] / n);
  }
  return static_cast<double>(experts) * sum;
}

}  // namespace moe
