#include "moe/fuzz/layer_case.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>

namespace moe::fuzz {

const char* layerDtypeName(LayerDtype d) {
  return d == LayerDtype::kBf16 ? "bf16" : "f32";
}

bool LayerCase::sizesConsistent() const {
  const auto T = static_cast<size_t>(tokens), H = static_cast<size_t>(hidden),
             I = static_cast<size_t>(intermediate), E = static_cast<size_t>(experts);
  return tokens >= 0 && hidden >= 0 && intermediate >= 0 && experts >= 0 && k >= 0 &&
         x.size() == T * H && logits.size() == T * E && w13.size() == E * 2 * I * H &&
         w2.size() == E * H * I;
}

LayerCase layerTokenCase(const LayerCase& c, int32_t t) {
  LayerCase one = c;
  one.tokens = 1;
  const auto xr = c.xRow(t);
  const auto lr = c.logitRow(t);
  one.x.assign(xr.begin(), xr.end());
  one.logits.assign(lr.begin(), lr.end());
  return one;
}

float roundToBf16(float v) {
  if (std::isnan(v)) return v;
  uint32_t b = std::bit_cast<uint32_t>(v);
  // Round to nearest, ties to even, on the 16 bits dropped (an overflow carries into the
  // exponent and gives infinity, as it should).
  b += 0x7fffu + ((b >> 16) & 1u);
  return std::bit_cast<float>(b & 0xffff0000u);
}

bool allBf16(std::span<const float> v) {
  for (float x : v) {
    if ((std::bit_cast<uint32_t>(x) & 0xffffu) != 0) return false;
  }
  return true;
}

std::string layerShapeText(const LayerCase& c) {
  std::string text = fmt::format("T {}, H {}, I {}, E {}, k {}, {}", c.tokens, c.hidden,
                                 c.intermediate, c.experts, c.k, layerDtypeName(c.dtype));
  if (c.family) text += ", " + familyText(*c.family);
  return text;
}

}  // namespace moe::fuzz
