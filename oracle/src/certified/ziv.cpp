#include "ziv.hpp"

#include <atomic>
#include <bit>
#include <cmath>
#include <string>

#include "moe/oracle/error.hpp"
#include "softmax_core.hpp"

namespace moe::oracle::certified {

using detail::countExps;
using detail::resetExpCounts;

namespace {
std::array<std::atomic<std::uint64_t>, ZivStats::kLevels> gDecided{};
}

std::uint64_t ZivStats::total() const {
  std::uint64_t sum = 0;
  for (auto n : decidedAtLevel) sum += n;
  return sum;
}

ZivStats zivStats() {
  ZivStats stats;
  for (int i = 0; i < ZivStats::kLevels; ++i) stats.decidedAtLevel[i] = gDecided[i].load();
  countExps(stats.fastExps, stats.mpfrExps);
  return stats;
}

void resetZivStats() {
  for (auto& n : gDecided) n.store(0);
  resetExpCounts();
}

namespace detail {

namespace {
// |v| < 2^-1076: below half the smallest binary64 subnormal, so v rounds to a zero in both
// formats. Used only when the interval straddles 0 and the sign cannot be decided.
bool belowEveryZeroThreshold(mpfr_srcptr v) {
  return mpfr_zero_p(v) || mpfr_get_exp(v) <= -1075;
}
}  // namespace

bool roundsUniquely(const Interval& range, int relativeWidthLog2, float& f32, double& f64) {
  mpfr_srcptr lo = range.lower.get();
  mpfr_srcptr hi = range.upper.get();
  if (mpfr_nan_p(lo) || mpfr_nan_p(hi)) throw SpecError("internal: NaN bound in an enclosure");
  // A zero bound counts as +0: a real value of exactly 0 rounds to +0.
  const float lo32 = mpfr_zero_p(lo) ? 0.0f : mpfr_get_flt(lo, MPFR_RNDN);
  const float hi32 = mpfr_zero_p(hi) ? 0.0f : mpfr_get_flt(hi, MPFR_RNDN);
  const double lo64 = mpfr_zero_p(lo) ? 0.0 : mpfr_get_d(lo, MPFR_RNDN);
  const double hi64 = mpfr_zero_p(hi) ? 0.0 : mpfr_get_d(hi, MPFR_RNDN);
  // [negative, 0] also leaves the sign open: the value may be 0 (+0) or a tiny negative (-0).
  const bool straddlesZero = mpfr_sgn(lo) < 0 && mpfr_sgn(hi) >= 0;
  if (straddlesZero) {
    // The sign of a value this small is not certified; it is reported as +0 (docs/oracle.md).
    if (!belowEveryZeroThreshold(lo) || !belowEveryZeroThreshold(hi)) return false;
    f32 = 0.0f;
    f64 = 0.0;
    return true;
  }
  if (std::bit_cast<std::uint32_t>(lo32) != std::bit_cast<std::uint32_t>(hi32)) return false;
  if (std::bit_cast<std::uint64_t>(lo64) != std::bit_cast<std::uint64_t>(hi64)) return false;
  if (!mpfr_equal_p(lo, hi) && !mpfr_zero_p(lo) && !mpfr_zero_p(hi)) {
    // relative width: (hi - lo) <= 2^w * min(|lo|, |hi|), evaluated rounding against us.
    mpfr_t width, bound;
    mpfr_inits2(64, width, bound, static_cast<mpfr_ptr>(nullptr));
    mpfr_sub(width, hi, lo, MPFR_RNDU);
    if (mpfr_sgn(lo) > 0) {
      mpfr_set(bound, lo, MPFR_RNDD);
    } else {
      mpfr_neg(bound, hi, MPFR_RNDD);
    }
    mpfr_mul_2si(bound, bound, relativeWidthLog2, MPFR_RNDD);
    const bool narrow = mpfr_lessequal_p(width, bound);
    mpfr_clears(width, bound, static_cast<mpfr_ptr>(nullptr));
    if (!narrow) return false;
  }
  f32 = lo32;
  f64 = lo64;
  return true;
}

std::vector<Certified> zivLoop(std::size_t count, const EnclosureOptions& options,
                               const ComputeAt& compute, const char* what) {
  std::vector<Certified> out(count);
  int level = 0;
  for (mpfr_prec_t precision = options.startPrecision; precision <= options.maxPrecision;
       precision *= 2, ++level) {
    for (auto& c : out) {
      if (c.range.lower.precision() != precision) {
        mpfr_set_prec(c.range.lower.get(), precision);
        mpfr_set_prec(c.range.upper.get(), precision);
      }
    }
    compute(precision, out);
    bool all = true;
    for (std::size_t i = 0; i < count && all; ++i) {
      all = roundsUniquely(out[i].range, options.relativeWidthLog2, out[i].f32, out[i].f64);
    }
    if (all) {
      gDecided[std::min(level, ZivStats::kLevels - 1)].fetch_add(1, std::memory_order_relaxed);
      return out;
    }
  }
  throw SpecError(std::string(what) + ": still undecided at " +
                  std::to_string(options.maxPrecision) + " bits (Ziv loop cap)");
}

}  // namespace detail
}  // namespace moe::oracle::certified
