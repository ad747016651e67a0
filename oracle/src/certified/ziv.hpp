#pragma once
// The Ziv loop shared by every enclosure: compute at a working precision, and double it
// until every result is narrow enough and rounds to one binary32 and one binary64 value.
#include <cstddef>
#include <functional>
#include <vector>

#include "moe/oracle/certified/interval.hpp"

namespace moe::oracle::certified::detail {

// Fills out[i].range (already sized, every bound already at `precision`) with enclosures
// computed at working precision `precision`.
using ComputeAt = std::function<void(mpfr_prec_t precision, std::vector<Certified>& out)>;

std::vector<Certified> zivLoop(std::size_t count, const EnclosureOptions& options,
                               const ComputeAt& compute, const char* what);

// True when `range` is narrow enough and its ends round to the same binary32 and binary64
// (bit for bit, so the sign of a zero is decided too); then sets f32 and f64.
bool roundsUniquely(const Interval& range, int relativeWidthLog2, float& f32, double& f64);

}  // namespace moe::oracle::certified::detail
