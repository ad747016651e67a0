// Bit-level helpers for binary32/binary64: every float the fuzzer reports or stores is a
// bit pattern, so that a reproducer replays bit for bit (docs/design.md §5).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace moe::fuzz {

inline uint32_t bitsOf(float x) {
  return std::bit_cast<uint32_t>(x);
}
inline float floatOf(uint32_t b) {
  return std::bit_cast<float>(b);
}
inline uint64_t bitsOf64(double x) {
  return std::bit_cast<uint64_t>(x);
}

// "0x3f800000": 8 hex digits, the vector format's binary32 spelling.
std::string hex32(float x);
std::string hex64(double x);
// Parses "0x" + 8 hex digits; throws std::invalid_argument naming the text otherwise.
float parseHex32(std::string_view text);

// The next binary32 value up/down (±inf and NaN stay put), as std::nextafter does.
float nextUp(float x);
float nextDown(float x);

// The next binary64 value up / down: the bits std::nextafter(x, +inf) / (x, -inf) gives
// (NaN as x + x, ±0 to the smallest subnormal of the direction's sign, the largest finite
// to ±inf), without a library call: the verdict's bands round outward by them per expert.
inline double nextUp64(double x) {
  if (x != x) return x + x;
  if (x == HUGE_VAL) return x;
  if (x == 0) return 0x1p-1074;
  const uint64_t b = std::bit_cast<uint64_t>(x);
  return std::bit_cast<double>(x > 0 ? b + 1 : b - 1);
}
inline double nextDown64(double x) {
  if (x != x) return x + x;
  if (x == -HUGE_VAL) return x;
  if (x == 0) return -0x1p-1074;
  const uint64_t b = std::bit_cast<uint64_t>(x);
  return std::bit_cast<double>(x > 0 ? b - 1 : b + 1);
}

// ulp of the binary32 number nearest |x| (>= 2^-149): the spacing of binary32 at x.
double ulp32(double x);

// Unit roundoff of binary32 and the smallest positive subnormal, as doubles.
inline constexpr double kU32 = 0x1p-24;
inline constexpr double kTiny32 = 0x1p-149;

// Shortest decimal that reads back to the same float, for reports.
std::string decimal32(float x);

}  // namespace moe::fuzz
