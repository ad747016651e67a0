// A router's own cost, fitted as a run goes, so that a hang is told from a slow kernel
// (docs/fuzz.md, "Slow kernels and hangs"). Each call's time is fitted against two measures
// of its work: W1 = T (E max(1, min(k, E)) + E + k) + 1 (one pass over E per kept slot, what
// a naive top-k does) and W2 = T (E^2 + E + k) + 1 (a pass over E per expert: groups of one
// scanned as the spec's text reads). The fixed cost of a call comes from the small calls;
// for each measure, the largest time per unit seen on the larger calls; a prediction takes
// the smaller of the two (the one that fits the router: the other overshoots at large E).
// A call's budget is a generous multiple of its prediction; past it the call is slow (a
// note, not a finding), and only past ten budgets (at least 60 s, or --call-timeout) is it
// a hang.
#pragma once

#include <cstdint>
#include <vector>

namespace moe::fuzz {

class CallCost {
 public:
  static constexpr double kBudgetFactor = 10;  // budget = factor x prediction + kBudgetFloor
  static constexpr double kBudgetFloor = 0.5;  // seconds: scheduling noise on a loaded host
  static constexpr double kHangFactor = 10;    // the watchdog: 10 budgets, at least kHangFloor
  static constexpr double kHangFloor = 60;

  static double work(int32_t experts, int32_t k, int32_t tokens);           // W1
  static double quadraticWork(int32_t experts, int32_t k, int32_t tokens);  // W2
  // One call that returned after `seconds`.
  void add(int32_t experts, int32_t k, int32_t tokens, double seconds);
  // True once enough larger calls were seen to predict from them.
  bool fitted() const { return larger_ >= kMinLarger; }
  // Seconds the router should take on the shape (fitted; before that, 2 ns a unit of work).
  double predict(int32_t experts, int32_t k, int32_t tokens) const;
  double budget(int32_t experts, int32_t k, int32_t tokens) const;
  // The watchdog's default: kHangFactor budgets, at least kHangFloor seconds.
  double hangAfter(int32_t experts, int32_t k, int32_t tokens) const;
  // The median time of the calls seen (0 before any).
  double medianSeconds() const;

 private:
  static constexpr double kSmallWork = 1e4;  // below: the call's fixed cost dominates
  static constexpr int kMinLarger = 8;
  std::vector<double> small_;            // seconds of the last small calls
  std::vector<double> all_;              // seconds of the calls (the first 100,000: for the median)
  double rate_ = 0, quadraticRate_ = 0;  // the largest seconds per unit of W1, of W2
  int larger_ = 0;
};

}  // namespace moe::fuzz
