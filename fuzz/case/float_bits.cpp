#include "moe/fuzz/float_bits.hpp"

#include <fmt/format.h>

#include <limits>
#include <stdexcept>

namespace moe::fuzz {

std::string hex32(float x) {
  return fmt::format("0x{:08x}", bitsOf(x));
}
std::string hex64(double x) {
  return fmt::format("0x{:016x}", bitsOf64(x));
}

float parseHex32(std::string_view text) {
  auto bad = [&] {
    return std::invalid_argument(
        fmt::format("expected a binary32 bit pattern \"0x\" + 8 hex digits, got \"{}\"", text));
  };
  if (text.size() != 10 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) throw bad();
  uint32_t v = 0;
  for (char c : text.substr(2)) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      throw bad();
    }
    v = v * 16 + static_cast<uint32_t>(d);
  }
  return floatOf(v);
}

float nextUp(float x) {
  return std::nextafter(x, std::numeric_limits<float>::infinity());
}
float nextDown(float x) {
  return std::nextafter(x, -std::numeric_limits<float>::infinity());
}

double ulp32(double x) {
  x = std::fabs(x);
  if (!(x >= 0x1p-126)) return kTiny32;  // subnormal range (and NaN): fixed spacing
  if (x > 0x1.fffffep127) return 0x1p104;
  // x = f 2^e, f in [1, 2): binary32's spacing there is 2^(e - 23). Read from the bits
  // (frexp and two ldexp were a few percent of a libFuzzer exec: one call per gate).
  const int e = static_cast<int>(bitsOf64(x) >> 52) - 1023;
  auto pow2 = [](int p) { return std::bit_cast<double>(static_cast<uint64_t>(p + 1023) << 52); };
  double spacing = pow2(e - 23);
  // x rounded to binary32 may sit at the next binade's bottom: use its spacing then.
  const float xf = static_cast<float>(x);
  if (static_cast<double>(xf) >= pow2(e + 1)) spacing *= 2;
  return spacing;
}

std::string decimal32(float x) {
  return fmt::format("{}", x);
}

}  // namespace moe::fuzz
