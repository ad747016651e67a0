#include "moe/fuzz/call_cost.hpp"

#include <algorithm>

namespace moe::fuzz {

namespace {

constexpr size_t kKeep = 100000;     // calls kept for the median time: bounded memory
constexpr size_t kKeepSmall = 1001;  // the last small calls, for the fixed cost (cheap to ask)

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace

double CallCost::work(int32_t experts, int32_t k, int32_t tokens) {
  const double E = std::max(experts, 0), K = std::max(k, 0), T = std::max(tokens, 0);
  return T * (E * std::max(1.0, std::min(K, E)) + E + K) + 1;
}

double CallCost::quadraticWork(int32_t experts, int32_t k, int32_t tokens) {
  const double E = std::max(experts, 0), K = std::max(k, 0), T = std::max(tokens, 0);
  return T * (E * E + E + K) + 1;
}

void CallCost::add(int32_t experts, int32_t k, int32_t tokens, double seconds) {
  if (all_.size() < kKeep) all_.push_back(seconds);
  const double w = work(experts, k, tokens);
  if (w < kSmallWork) {
    if (small_.size() >= kKeepSmall) small_.erase(small_.begin());
    small_.push_back(seconds);
    return;
  }
  const double fixed = small_.empty() ? 0.0 : median(small_);
  const double variable = std::max(0.0, seconds - fixed);
  rate_ = std::max(rate_, variable / w);
  quadraticRate_ = std::max(quadraticRate_, variable / quadraticWork(experts, k, tokens));
  ++larger_;
}

double CallCost::predict(int32_t experts, int32_t k, int32_t tokens) const {
  const double w2 = quadraticWork(experts, k, tokens);
  if (!fitted()) return 2e-9 * w2;  // generous until the router has shown its cost
  return (small_.empty() ? 0.0 : median(small_)) +
         std::min(rate_ * work(experts, k, tokens), quadraticRate_ * w2);
}

double CallCost::budget(int32_t experts, int32_t k, int32_t tokens) const {
  return kBudgetFactor * predict(experts, k, tokens) + kBudgetFloor;
}

double CallCost::hangAfter(int32_t experts, int32_t k, int32_t tokens) const {
  return std::max(kHangFloor, kHangFactor * budget(experts, k, tokens));
}

double CallCost::medianSeconds() const {
  return median(all_);
}

}  // namespace moe::fuzz
