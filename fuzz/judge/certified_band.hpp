// The family verdict's certified level: the band of a key or group score (value minus and
// plus its budget) computed from the oracle's MPFR enclosure, relative to a reference near
// the kept boundary, so that the comparisons the verdict makes there are decided by the
// enclosures' width and not by binary64 band ends at the key's size.
#pragma once

#include "moe/oracle/certified/interval.hpp"

namespace moe::fuzz {

// A band relative to the reference `ref`: L - ref = v + add - b - ref in [lLo, lHi] and
// H - ref = v + add + b - ref in [hLo, hHi], for the real value v in `value`, a shift `add`
// (the expert's binary32 bias, or 0) and a budget b in [bLo, bHi]. Each end is evaluated in
// MPFR with directed rounding (down for the lower ends, up for the upper ones) and rounded
// outward to binary64: near the reference its binary64 rounding is relative to the
// difference, not to the key.
struct RelativeBand {
  double lLo = 0, lHi = 0, hLo = 0, hHi = 0;
};
RelativeBand relativeBand(const oracle::certified::Interval& value, double add, double bLo,
                          double bHi, double ref);

}  // namespace moe::fuzz
