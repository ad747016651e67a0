// The family verdict's certified level: the band of a key or group score (value minus and
// plus its budget) computed from the oracle's MPFR enclosure and the budget's MPFR bounds,
// relative to a reference near the kept boundary, so that the comparisons the verdict makes
// there are decided by the enclosures' width and not by binary64 numbers at the key's size.
#pragma once

#include "ladder.hpp"
#include "moe/oracle/certified/big_float.hpp"
#include "moe/oracle/certified/interval.hpp"

namespace moe::fuzz {

// A band relative to the reference `ref`: L - ref = v + add - b - ref in [lLo, lHi] and
// H - ref = v + add + b - ref in [hLo, hHi], for the real value v in `value`, a shift `add`
// (the expert's binary32 bias, or 0) and a budget b in [bLo, bHi]. Each end is evaluated in
// MPFR with directed rounding (down for the lower ends, up for the upper ones) and rounded
// outward to binary64: near the reference its binary64 rounding is relative to the
// difference, not to the key.
Band relativeBand(const oracle::certified::Interval& value, double add,
                  const oracle::certified::BigFloat& bLo, const oracle::certified::BigFloat& bHi,
                  double ref);

}  // namespace moe::fuzz
