#include "moe/fuzz/layer_case.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>

#include "moe/fuzz/float_bits.hpp"

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

nlohmann::json layerCaseJSON(const LayerCase& c) {
  auto values = [](const std::vector<float>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (float f : v) a.push_back(hex32(f));
    return a;
  };
  nlohmann::json j = {{"tokens", c.tokens},
                      {"hidden", c.hidden},
                      {"intermediate", c.intermediate},
                      {"experts", c.experts},
                      {"k", c.k},
                      {"dtype", layerDtypeName(c.dtype)},
                      {"x", values(c.x)},
                      {"logits", values(c.logits)},
                      {"w13", values(c.w13)},
                      {"w2", values(c.w2)}};
  if (c.family) j["family"] = familyToJSON(*c.family);
  return j;
}

LayerCase layerCaseFromJSON(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("layer case: not an object");
  LayerCase c;
  auto size = [&](const char* key, int32_t& out, int32_t max) {
    if (!j.contains(key) || !j[key].is_number_integer()) {
      throw std::invalid_argument(fmt::format("layer case: \"{}\" must be an integer", key));
    }
    const int64_t v = j[key].get<int64_t>();
    if (v < 0 || v > max) {
      throw std::invalid_argument(
          fmt::format("layer case: \"{}\" = {} is outside 0..{}", key, v, max));
    }
    out = static_cast<int32_t>(v);
  };
  size("tokens", c.tokens, 65536);
  size("hidden", c.hidden, 65536);
  size("intermediate", c.intermediate, 65536);
  size("experts", c.experts, 4096);
  size("k", c.k, 4098);
  const std::string dtype = j.value("dtype", "f32");
  if (dtype != "f32" && dtype != "bf16") {
    throw std::invalid_argument(
        fmt::format("layer case: \"dtype\" is \"{}\", not \"f32\" or \"bf16\"", dtype));
  }
  c.dtype = dtype == "bf16" ? LayerDtype::kBf16 : LayerDtype::kF32;
  auto values = [&](const char* key, std::vector<float>& out, size_t n) {
    if (!j.contains(key) || !j[key].is_array()) {
      throw std::invalid_argument(fmt::format("layer case: \"{}\" must be an array", key));
    }
    if (j[key].size() != n) {
      throw std::invalid_argument(
          fmt::format("layer case: \"{}\" holds {} values, its shape {}", key, j[key].size(), n));
    }
    out.reserve(n);
    for (const auto& v : j[key]) {
      if (!v.is_string()) {
        throw std::invalid_argument(
            fmt::format("layer case: \"{}\" holds a value that is not a hex32 string", key));
      }
      out.push_back(parseHex32(v.get<std::string>()));
    }
  };
  const auto T = static_cast<size_t>(c.tokens), H = static_cast<size_t>(c.hidden),
             I = static_cast<size_t>(c.intermediate), E = static_cast<size_t>(c.experts);
  if (E * 3 * H * I > (size_t{1} << 31) || T * H > (size_t{1} << 31)) {
    throw std::invalid_argument("layer case: more than 2^31 values");
  }
  values("x", c.x, T * H);
  values("logits", c.logits, T * E);
  values("w13", c.w13, E * 2 * I * H);
  values("w2", c.w2, E * H * I);
  if (j.contains("family")) c.family = familyFromJSON(j["family"], c.experts);
  if (c.dtype == LayerDtype::kBf16 && !(allBf16(c.x) && allBf16(c.w13) && allBf16(c.w2))) {
    throw std::invalid_argument("layer case: a bf16 case holds a value bf16 does not represent");
  }
  return c;
}

std::string layerShapeText(const LayerCase& c) {
  std::string text = fmt::format("T {}, H {}, I {}, E {}, k {}, {}", c.tokens, c.hidden,
                                 c.intermediate, c.experts, c.k, layerDtypeName(c.dtype));
  if (c.family) text += ", " + familyText(*c.family);
  return text;
}

}  // namespace moe::fuzz
