#pragma once
// Certified results: an interval guaranteed to contain the real-number value, plus that
// value correctly rounded (to nearest, ties to even) to binary32 and binary64.
#include <array>
#include <cstdint>
#include <string>

#include "moe/oracle/certified/big_float.hpp"

namespace moe::oracle::certified {

struct Interval {
  BigFloat lower, upper;  // lower <= real value <= upper

  static Interval point(double v, mpfr_prec_t precision = 64);
  double lowerDouble() const;  // rounded down: <= lower
  double upperDouble() const;  // rounded up: >= upper
  bool contains(double v) const;
  bool contains(const BigFloat& v) const;
  bool isPoint() const;
  // (upper - lower) / min(|lower|, |upper|); 0 for a point, +inf when 0 lies inside.
  double relativeWidth() const;
  std::string toString() const;
};

struct Certified {
  Interval range;
  float f32 = 0;   // the real value correctly rounded to binary32 (nearest-even)
  double f64 = 0;  // the real value correctly rounded to binary64 (nearest-even)
};

struct EnclosureOptions {
  int relativeWidthLog2 = -60;  // every range has relative width <= 2^this ...
  mpfr_prec_t startPrecision = 80;
  mpfr_prec_t maxPrecision = 1 << 14;  // Ziv loop cap: SpecError if still undecided
};

// How often the Ziv loop decided at each precision level (level i = startPrecision * 2^i),
// summed over every enclosure computed in this process: the worth of the fast first level.
struct ZivStats {
  static constexpr int kLevels = 9;
  std::array<std::uint64_t, kLevels> decidedAtLevel{};
  std::uint64_t fastExps = 0;  // exponentials certified by the fixed-point filter
  std::uint64_t mpfrExps = 0;  // exponentials that needed mpfr_exp
  std::uint64_t total() const;
};
ZivStats zivStats();
void resetZivStats();

}  // namespace moe::oracle::certified
