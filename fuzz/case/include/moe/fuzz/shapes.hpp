// Which shapes a campaign draws: sets of E, k and T given as comma lists of values and
// ranges ("256", "1-64,128", "1-65536"), from the command line (--experts, --k, --tokens)
// or the contract's "shapes" field. The generator draws only inside them: a kernel that
// supports E = 256, k = 8 gets every case at that shape, none drawn and thrown away.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moe::fuzz {

// The widest draw: E up to 4,096, T up to 65,536, at most 2^24 logits a case.
inline constexpr int64_t kDrawMaxExperts = 4096;
inline constexpr int64_t kDrawMaxTokens = 65536;
inline constexpr int64_t kDrawMaxLogits = int64_t{1} << 24;

struct IntRange {
  int64_t lo = 0, hi = 0;  // inclusive
};

// A finite set of integers as sorted, disjoint, inclusive ranges.
class IntSet {
 public:
  IntSet() = default;
  static IntSet range(int64_t lo, int64_t hi);
  // The set of these values (any order, repeats allowed), in one pass after a sort.
  static IntSet ofValues(std::vector<int64_t> values);
  // "8", "1-64", "8,16,32-64". Throws std::invalid_argument naming `what` (the flag or
  // field) on a malformed item or one outside [min, max].
  static IntSet parse(std::string_view text, std::string_view what, int64_t min, int64_t max);

  bool empty() const { return ranges_.empty(); }
  bool contains(int64_t v) const;
  int64_t min() const { return ranges_.front().lo; }
  int64_t max() const { return ranges_.back().hi; }
  // The members in [lo, hi] (possibly empty).
  IntSet clamp(int64_t lo, int64_t hi) const;
  // The members of both sets (possibly empty).
  IntSet intersect(const IntSet& other) const;
  const std::vector<IntRange>& ranges() const { return ranges_; }
  std::string text() const;  // parse(text()) == *this

 private:
  void add(int64_t lo, int64_t hi);
  std::vector<IntRange> ranges_;
};

struct ShapeSpace {
  IntSet experts = IntSet::range(0, kDrawMaxExperts);
  IntSet k;  // empty: any k in [0, E + 2], drawn per case
  IntSet tokens = IntSet::range(0, kDrawMaxTokens);
  // True when the caller gave the tokens (flag or contract): a soft per-case size budget
  // that keeps most cases cheap then never lowers T below what was asked.
  bool tokensGiven = false;

  // Throws std::invalid_argument when no E of the set fits a case with the smallest T.
  void validate() const;
  std::string text() const;  // "E 256, k 8, T 1-65536"
};

}  // namespace moe::fuzz
