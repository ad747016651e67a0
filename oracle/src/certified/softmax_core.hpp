#pragma once
// The enclosure of exp(d_t) / sum_s exp(d_s) for exact real differences d_t = l_t - m <= 0,
// shared by the binary32-logit gates and the exact-router-logit forward passes.
#include <mpfr.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "moe/oracle/certified/interval.hpp"

namespace moe::oracle::certified::detail {

// Encloses weight_t = exp(d_t) / sum_s exp(d_s) for every t, writing out[t] (whose bounds
// must already have the working precision `precision`). Every d_t is an exact real (any
// precision, -inf allowed: weight exactly 0) and at least one d_t is exactly 0, so the
// denominator is >= 1. The weight is evaluated as e_t / (e_t + rest_t), rest_t the sum of
// the other terms: increasing in e_t and decreasing in rest_t, so its bounds come from the
// opposite bounds of e_t and rest_t (no dependency blow-up), and a single term, or terms
// that are all exp(0) = 1, give exact points (gate 1, softmax [0, 0] = 1/2).
// floatArgs, when given, holds for every t the binary32 pair (l_t, m) with d_t = l_t - m,
// which lets the first Ziv level use the fixed-point exponential (fast_exp.hpp); diffs may
// then be null, and the exact differences are formed only for the terms that need MPFR.
struct FloatDiff {
  float l, m;
};
void encloseNormalisedExps(std::size_t n, const mpfr_srcptr* diffs, const FloatDiff* floatArgs,
                           mpfr_prec_t precision, Interval* const* out);

// Counts of exponentials taken by each method, for ZivStats.
void countExps(std::uint64_t& fast, std::uint64_t& mpfr);
void resetExpCounts();

}  // namespace moe::oracle::certified::detail
