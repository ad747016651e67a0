#include "moe/fuzz/layer_draw.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

namespace moe::fuzz {

namespace {

// The layer shapes of released models: hidden size H, expert intermediate size I, routed
// experts E and k (public model configurations). E above the generator's 256 is cut to it.
struct ModelShape {
  const char* name;
  int32_t hidden, intermediate, experts, k;
};
constexpr std::array<ModelShape, 15> kModels = {{
    {"mixtral-8x7b", 4096, 14336, 8, 2},
    {"mixtral-8x22b", 6144, 16384, 8, 2},
    {"qwen3-30b-a3b", 2048, 768, 128, 8},
    {"qwen2-57b-a14b", 3584, 2560, 64, 8},
    {"qwen1.5-moe-a2.7b", 2048, 1408, 60, 4},
    {"qwen3-next-80b", 2048, 512, 512, 10},
    {"deepseek-v2-lite", 2048, 1408, 64, 6},
    {"deepseek-v3", 7168, 2048, 256, 8},
    {"olmoe-1b-7b", 2048, 1024, 64, 8},
    {"dbrx", 6144, 10752, 16, 4},
    {"phi-3.5-moe", 4096, 6400, 16, 2},
    {"gpt-oss-20b", 2880, 2880, 32, 4},
    {"llama-4-scout", 5120, 8192, 16, 1},
    {"granite-3.0-1b-a400m", 1024, 512, 32, 8},
    {"arctic", 7168, 4864, 128, 2},
}};

constexpr const char* kStyles[] = {"uniform", "cancelling", "huge", "tiny", "bf16-edges", "sparse"};

// A value of a non-empty set: a range picked uniformly, then a value in it (small values
// more often in a wide range, so that cheap cases dominate).
int64_t drawFrom(ByteSource& src, const IntSet& set) {
  const auto& ranges = set.ranges();
  const IntRange& r = ranges[src.u16() % ranges.size()];
  const uint64_t width = static_cast<uint64_t>(r.hi - r.lo) + 1;
  if (width > 64 && (src.u8() & 1)) {
    const int bits = static_cast<int>(std::bit_width(width));
    const uint64_t cap = uint64_t{1} << (src.u8() % bits);
    return r.lo + static_cast<int64_t>(src.u32() % std::min(cap, width));
  }
  return r.lo + static_cast<int64_t>(((uint64_t{src.u32()} << 32) | src.u32()) % width);
}

// The biggest member of `set` not above `cap`, or the set's least when none is.
int64_t atMost(const IntSet& set, int64_t want, int64_t cap) {
  want = std::min(want, cap);
  if (set.empty() || set.contains(want)) return want;
  const IntSet below = set.clamp(set.min(), want);
  return below.empty() ? set.min() : below.max();
}

// splitmix64 for the bulk values, seeded from the case's stream (a case is a function of
// the run's seed, however many values it holds).
struct Bulk {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform() {  // [-1, 1)
    return static_cast<float>(static_cast<int64_t>(next() >> 40) - (int64_t{1} << 23)) * 0x1p-23f;
  }
};

// The bf16 values layers get wrong: zeros, the smallest subnormal and normal, the largest
// finite, one and its neighbours, powers of two.
constexpr uint16_t kBf16Edges[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x0080, 0x8080,
                                   0x7f7f, 0xff7f, 0x3f80, 0xbf80, 0x3f81, 0x3f7f,
                                   0x4000, 0x3f00, 0x4780, 0x3800, 0x1f80, 0x5f80};

float bf16Edge(Bulk& b) {
  const uint16_t bits = kBf16Edges[b.next() % std::size(kBf16Edges)];
  return std::bit_cast<float>(uint32_t{bits} << 16);
}

void fillValues(LayerCase& c, int style, Bulk& b) {
  const float fanH = 1.0f / std::sqrt(static_cast<float>(std::max(c.hidden, 1)));
  const float fanI = 1.0f / std::sqrt(static_cast<float>(std::max(c.intermediate, 1)));
  for (float& v : c.x) v = b.uniform() * 2.0f;
  for (float& v : c.w13) v = b.uniform() * fanH;
  for (float& v : c.w2) v = b.uniform() * fanI;
  switch (style) {
    case 1: {  // cancelling: x in opposite pairs, W3 the negation of W1 plus a little, W2
               // rows of exact eighths with neighbours that cancel
      for (size_t i = 0; i + 1 < c.x.size(); i += 2) c.x[i + 1] = -c.x[i] * (1 + 0x1p-12f);
      const auto H = static_cast<size_t>(c.hidden), I = static_cast<size_t>(c.intermediate);
      for (size_t e = 0; e < static_cast<size_t>(c.experts); ++e) {
        for (size_t j = 0; j < I; ++j) {
          const size_t w1 = (e * 2 * I + j) * H, w3 = (e * 2 * I + I + j) * H;
          for (size_t h = 0; h < H; ++h) c.w13[w3 + h] = -c.w13[w1 + h] + b.uniform() * 0x1p-10f;
        }
      }
      for (size_t i = 0; i < c.w2.size(); ++i) {
        c.w2[i] = i % 2 ? -c.w2[i - 1] : std::round(c.w2[i] * 8) / 8;
      }
      break;
    }
    case 2: {  // huge: x and W2 far from 1 in opposite directions, or products that
               // overflow binary32 (the verdict then does not judge y: "overflow")
      const int e = 20 + static_cast<int>(b.next() % 50);
      const float up = std::ldexp(1.0f, e), down = std::ldexp(1.0f, -e);
      for (float& v : c.x) v *= up;
      for (float& v : c.w2) v *= (b.next() % 4 == 0) ? up : down;
      break;
    }
    case 3: {  // tiny: products near and below binary32's subnormal range
      const int e = 40 + static_cast<int>(b.next() % 40);
      const float down = std::ldexp(1.0f, -e);
      for (float& v : c.x) v *= down;
      for (float& v : c.w13) v *= (b.next() % 2) ? down : 1.0f;
      break;
    }
    case 4: {  // bf16 edges mixed into bf16-rounded values
      for (auto* vec : {&c.x, &c.w13, &c.w2}) {
        for (float& v : *vec) v = (b.next() % 8 == 0) ? bf16Edge(b) : roundToBf16(v);
      }
      break;
    }
    case 5: {  // sparse: mostly zeros, a few unit weights
      for (auto* vec : {&c.x, &c.w13, &c.w2}) {
        for (float& v : *vec) v = (b.next() % 8 == 0) ? (b.next() % 2 ? 1.0f : -1.0f) : 0.0f;
      }
      break;
    }
    default:
      break;
  }
}

// Exact ties and ties one ulp apart in some rows (routing that a layer may break when it
// sorts with another comparison than its router's).
void tieLogits(LayerCase& c, Bulk& b) {
  if (c.experts < 2) return;
  for (int32_t t = 0; t < c.tokens; ++t) {
    if (b.next() % 4 != 0) continue;
    float* row = c.logits.data() + static_cast<size_t>(t) * c.experts;
    const auto i = static_cast<size_t>(b.next() % c.experts);
    const auto j = static_cast<size_t>(b.next() % c.experts);
    if (!std::isfinite(row[i])) continue;
    row[j] = row[i];
    if (b.next() % 2) row[j] = std::nextafter(row[j], b.next() % 2 ? 1e30f : -1e30f);
  }
}

// The family part: a valid family of the contract's on these logits (drawFamilyCase's
// adversarial structures), or none after a few draws outside the domain.
void drawFamily(ByteSource& src, LayerCase& c, const Families& fam) {
  ShapeSpace space;
  space.experts = IntSet::range(c.experts, c.experts);
  space.k = IntSet::range(c.k, c.k);
  space.tokens = IntSet::range(c.tokens, c.tokens);
  for (int attempt = 0; attempt < 4; ++attempt) {
    Case r = drawFamilyCase(src, space, fam);
    if (!r.family || !familyInvalidReason(*r.family, c.experts).empty()) continue;
    if (r.experts != c.experts || r.k != c.k || r.tokens != c.tokens) continue;
    c.family = std::move(r.family);
    c.logits = std::move(r.logits);
    return;
  }
}

}  // namespace

LayerDraw layerDrawFor(const Contract& contract, const std::string& tokens, const std::string& k,
                       const std::string& experts, const std::string& hidden,
                       const std::string& intermediate) {
  LayerDraw d;
  const SupportedShapes& s = contract.shapes;
  auto pick = [](const IntSet& fromContract, const std::string& flag, const char* name, int64_t lo,
                 int64_t hi) {
    if (!flag.empty()) return IntSet::parse(flag, fmt::format("--{}", name), lo, hi);
    IntSet set = fromContract.empty() ? IntSet::range(lo, hi) : fromContract.clamp(lo, hi);
    if (set.empty()) {
      throw std::invalid_argument(
          fmt::format("the contract's shapes.{} leave nothing in {}..{}, the layer door's range",
                      name, lo, hi));
    }
    return set;
  };
  d.tokens = pick(s.maxTokens > 0 ? s.tokens.empty() ? IntSet::range(1, s.maxTokens)
                                                     : s.tokens.clamp(0, s.maxTokens)
                                  : s.tokens,
                  tokens, "tokens", 1, kLayerMaxTokens);
  d.k = pick(s.k, k, "k", 1, kLayerMaxK);
  d.experts = pick(s.experts, experts, "experts", 1, kLayerMaxExperts);
  d.hidden = pick(s.hidden, hidden, "hidden", 1, kLayerMaxHidden);
  d.intermediate = pick(s.intermediate, intermediate, "intermediate", 1, kLayerMaxIntermediate);
  if (d.k.min() > d.experts.max()) {
    throw std::invalid_argument(
        fmt::format("k {} exceeds every E drawn (at most {})", d.k.text(), d.experts.max()));
  }
  d.f32 = contract.layer.f32;
  d.bf16 = contract.layer.bf16;
  const Families& f = contract.families;
  d.families = f.sigmoid || f.groups || f.bias || !f.recipes.empty() || f.restrictsGroups() ||
               !f.scales.empty() || !f.renormalize.empty();
  d.familySet = f;
  return d;
}

DrawnLayer drawLayerCase(ByteSource& src, const LayerDraw& d) {
  DrawnLayer out;
  LayerCase& c = out.c;
  // The shape: a model's (H one off a multiple of 64 now and then) when the lists hold it,
  // else drawn from the lists.
  int64_t H = 0, I = 0, E = 0, k = 0;
  const ModelShape& m = kModels[src.u8() % kModels.size()];
  const int offset = static_cast<int>(src.u8() % 4) - 1;  // -1, 0, +1, 0 (H +- 1)
  const int64_t mh = m.hidden + (offset == 2 ? 0 : offset);
  if (src.u8() < 160 && d.hidden.contains(mh)) {
    out.shape = m.name;
    H = mh;
    I = d.intermediate.contains(m.intermediate) ? m.intermediate : drawFrom(src, d.intermediate);
    E = atMost(d.experts, m.experts, kLayerMaxExperts);
    k = d.k.contains(m.k) ? m.k : drawFrom(src, d.k);
  } else {
    const uint8_t kind = src.u8();
    // Small shapes: a multiple of 64, one off it, or anything.
    const int64_t h64 = 64 * (1 + src.u8() % 8) + (kind % 3) - 1;
    H = kind < 128 && d.hidden.contains(h64) ? h64 : drawFrom(src, d.hidden.clamp(1, 1024));
    if (d.hidden.clamp(1, 1024).empty()) H = d.hidden.min();
    const IntSet smallI = d.intermediate.clamp(1, 512);
    I = smallI.empty() ? d.intermediate.min() : drawFrom(src, smallI);
    E = drawFrom(src, d.experts);
    k = drawFrom(src, d.k);
  }
  if (k > E) E = atMost(d.experts, std::max<int64_t>(k, d.experts.min()), kLayerMaxExperts);
  k = std::min(k, E);
  if (!d.k.contains(k)) k = atMost(d.k, k, E);
  // Fit the weights: E down to k (or the least E), then I, then H.
  const auto weights = [&] { return E * 3 * H * I; };
  if (weights() > d.maxWeights) {
    E = atMost(d.experts, std::max<int64_t>(k, d.maxWeights / (3 * H * I)), E);
  }
  if (weights() > d.maxWeights) {
    I = atMost(d.intermediate, std::max<int64_t>(1, d.maxWeights / (3 * H * E)), I);
  }
  if (weights() > d.maxWeights) {
    H = atMost(d.hidden, std::max<int64_t>(1, d.maxWeights / (3 * I * E)), H);
  }
  // T within the work a case may cost.
  const int64_t perToken = std::max<int64_t>(1, k * 3 * H * I);
  const int64_t T =
      atMost(d.tokens, drawFrom(src, d.tokens), std::max<int64_t>(1, d.maxWork / perToken));
  c.tokens = static_cast<int32_t>(T);
  c.hidden = static_cast<int32_t>(H);
  c.intermediate = static_cast<int32_t>(I);
  c.experts = static_cast<int32_t>(E);
  c.k = static_cast<int32_t>(k);
  c.x.resize(static_cast<size_t>(T * H));
  c.w13.resize(static_cast<size_t>(E * 2 * I * H));
  c.w2.resize(static_cast<size_t>(E * H * I));
  // The routing's logits: the router generator's adversarial rows, then ties.
  ShapeSpace space;
  space.experts = IntSet::range(E, E);
  space.k = IntSet::range(k, k);
  space.tokens = IntSet::range(T, T);
  Case r = drawCase(src, space);
  c.logits = std::move(r.logits);
  Bulk bulk{(uint64_t{src.u32()} << 32) | src.u32()};
  if (d.families && src.u8() < 160) drawFamily(src, c, d.familySet);
  tieLogits(c, bulk);
  const int style = src.u8() % std::size(kStyles);
  out.style = kStyles[style];
  fillValues(c, style, bulk);
  const bool bf16 = d.bf16 && (!d.f32 || style == 4 || src.u8() < 96);
  if (bf16) {
    c.dtype = LayerDtype::kBf16;
    for (auto* vec : {&c.x, &c.w13, &c.w2}) {
      for (float& v : *vec) v = roundToBf16(v);
    }
  }
  return out;
}

}  // namespace moe::fuzz
