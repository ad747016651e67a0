// drawShape: a case's shape and the style of its logits (shape_draw.hpp).
#include "moe/fuzz/shape_draw.hpp"

#include <algorithm>
#include <bit>
#include <optional>
#include <vector>

#include "moe/fuzz/model_shapes.hpp"

namespace moe::fuzz {

namespace {

// Sizes where kernels change path: powers of two and one either side, vector widths,
// tile and chunk sizes, the shapes of current models (E = 384 Kimi K2, 160 DeepSeek-V2).
constexpr int64_t kBoundaries[] = {
    0,    1,    2,    3,    4,     5,     7,     8,     9,     10,    15,    16,   17,   31,
    32,   33,   47,   48,   63,    64,    65,    127,   128,   129,   160,   255,  256,  257,
    383,  384,  385,  511,  512,   513,   1023,  1024,  1025,  2047,  2048,  2049, 4095, 4096,
    4097, 8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769, 65535, 65536};

int64_t uniformIn(ByteSource& src, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(src.u64() % static_cast<uint64_t>(hi - lo + 1));
}

// Log-uniform in [lo, hi] (lo >= 1): the width in bits first, so 2..3 comes up as often as
// 2048..4095, and small shapes (decode, few experts) dominate as they do in real serving.
int64_t logUniformIn(ByteSource& src, int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi - lo);
  const int bits = span == 0 ? 0 : 64 - std::countl_zero(span);
  const int b = src.u8() % (bits + 1);
  const uint64_t cap = b >= 63 ? span : std::min<uint64_t>(span, (uint64_t{1} << b) - 1);
  return lo + static_cast<int64_t>(src.u64() % (cap + 1));
}

// A member of `set` (not empty), each as likely as any other.
int64_t uniformMember(ByteSource& src, const IntSet& set) {
  uint64_t count = 0;
  for (const IntRange& r : set.ranges()) count += static_cast<uint64_t>(r.hi - r.lo) + 1;
  uint64_t at = src.u64() % count;
  for (const IntRange& r : set.ranges()) {
    const uint64_t size = static_cast<uint64_t>(r.hi - r.lo) + 1;
    if (at < size) return r.lo + static_cast<int64_t>(at);
    at -= size;
  }
  return set.min();
}

// k when the shape space leaves it free: small k, k around E (k >= E takes every expert,
// k > E leaves empty slots), or anything in [0, E + 2].
int64_t drawAnyK(ByteSource& src, int64_t experts) {
  const uint8_t mode = src.u8();
  if (mode < 80) return src.u8() % (std::min<int64_t>(experts + 2, 8) + 1);
  if (mode < 128) return std::max<int64_t>(0, experts - 2 + src.u8() % 5);
  return uniformIn(src, 0, experts + 2);
}

// The same within 1..E (E >= 1): small k, k up to E (every expert kept), anything.
int64_t drawRealK(ByteSource& src, int64_t experts) {
  const uint8_t mode = src.u8();
  if (mode < 80) return 1 + src.u8() % std::min<int64_t>(experts, 8);
  if (mode < 128) return std::max<int64_t>(1, experts - src.u8() % 3);
  return uniformIn(src, 1, experts);
}

// The experts of `space` that fit a case of `minTokens` tokens (at most 2^24 logits).
IntSet expertsFitting(const ShapeSpace& space, const IntSet& tokens) {
  const int64_t minT = tokens.empty() ? 1 : std::max<int64_t>(tokens.min(), 1);
  return space.experts.clamp(0, kDrawMaxLogits / minT);
}

// A model shape (shape_draw.hpp). T from 16 up within a size budget: 1,024 tokens and 2^18
// logits (15 cases in 16: many cases a second, each a prefill chunk or a batched decode
// step), else up to 65,536 tokens and 2^22 (1 in 21) or 2^24 logits (1 in 64: T = 65,536
// tokens of 256 experts), so that the chunked and threaded paths of a production kernel
// come up in every run.
std::optional<DrawnShape> modelDraw(ByteSource& src, const ShapeSpace& space) {
  IntSet tokens = space.tokens.clamp(kModelMinTokens, kDrawMaxTokens);
  // A space of small batches: the model's E and k at its T (T = 0 only when it has no other).
  if (tokens.empty()) tokens = space.tokens.clamp(1, kDrawMaxTokens);
  if (tokens.empty()) tokens = space.tokens;
  const IntSet experts = expertsFitting(space, tokens).clamp(kModelMinExperts, kModelMaxExperts);
  if (experts.empty()) return std::nullopt;
  const auto models = modelShapes();
  const ModelShape& m = models[src.u8() % models.size()];
  int64_t e = m.experts;
  const uint8_t how = src.u8();
  if (how >= 192) {
    e = uniformMember(src, experts);  // any kernel's size
  } else if (how >= 128) {
    static constexpr int64_t kNeighbours[] = {-16, -1, 1, 16};
    e += kNeighbours[src.u8() % 4];
  }
  if (!experts.contains(e)) {
    const IntSet near = modelExpertSizes().intersect(experts);
    e = near.empty() ? drawFrom(src, experts) : uniformMember(src, near);
  }
  const int64_t kMax = std::min(kModelMaxK, e);
  const IntSet ks = space.k.empty() ? IntSet::range(1, kMax) : space.k.clamp(1, kMax);
  int64_t k = src.u8() < 128 ? m.k : 1 + src.u8() % kMax;
  if (ks.empty()) {
    k = drawFrom(src, space.k);  // the space holds no k of a model at this E
  } else if (!ks.contains(k)) {
    k = drawFrom(src, ks);
  }
  const uint8_t budget = src.u8();
  const int64_t maxTokens = budget < 240 ? 1024 : kDrawMaxTokens;
  const int64_t maxLogits = budget < 240   ? (int64_t{1} << 18)
                            : budget < 252 ? (int64_t{1} << 22)
                                           : kDrawMaxLogits;
  // Tokens the caller asked for are never cut by the soft budget, only by the hard one.
  IntSet ts =
      tokens.clamp(0, space.tokensGiven ? kDrawMaxLogits / e : std::min(maxTokens, maxLogits / e));
  if (ts.empty()) ts = tokens.clamp(0, kDrawMaxLogits / e);
  DrawnShape s;
  s.experts = static_cast<int32_t>(e);
  s.k = static_cast<int32_t>(k);
  s.tokens = static_cast<int32_t>(drawFrom(src, ts));
  s.modelLike = src.u8() >= 128;
  return s;
}

// T for a case of E experts from `tokens` (T >= 1 there): 1 (a decode step) 3 times in 8,
// at most 64 another 3 times in 8, else anything within a soft size budget: 4,096 tokens
// and 2^16 logits (15 cases in 16) or 2^20 (1 in 20), or 16,384 tokens and 2^24 logits (1 in
// 85). Large batches of a few experts stay rare: their tokens would crowd out the models'.
int64_t edgeTokens(ByteSource& src, const ShapeSpace& space, const IntSet& tokens, int64_t e) {
  const int64_t perRow = std::max<int64_t>(e, 1);
  const uint8_t budgetByte = src.u8();
  const int64_t soft = budgetByte < 240   ? (int64_t{1} << 16)
                       : budgetByte < 253 ? (int64_t{1} << 20)
                                          : kDrawMaxLogits;
  const int64_t most = budgetByte < 253 ? 4096 : 16384;
  IntSet ts =
      tokens.clamp(0, space.tokensGiven ? kDrawMaxLogits / perRow : std::min(most, soft / perRow));
  if (ts.empty()) ts = tokens.clamp(0, kDrawMaxLogits / perRow);
  const uint8_t batchByte = src.u8();
  const IntSet small = ts.clamp(0, 64);
  if (batchByte < 96 && ts.contains(1)) return 1;
  if (batchByte < 192 && !small.empty()) return drawFrom(src, small);
  return drawFrom(src, ts);
}

// A kernel edge (shape_draw.hpp): E >= 2, k in 1..E, T >= 1, each adversarially.
std::optional<DrawnShape> edgeDraw(ByteSource& src, const ShapeSpace& space) {
  const IntSet tokens = space.tokens.clamp(1, kDrawMaxTokens);
  if (tokens.empty()) return std::nullopt;
  const IntSet experts = expertsFitting(space, tokens).clamp(2, kDrawMaxExperts);
  if (experts.empty()) return std::nullopt;
  const int64_t e = drawFrom(src, experts);
  int64_t k = 0;
  if (space.k.empty()) {
    k = drawRealK(src, e);
  } else {
    const IntSet ks = space.k.clamp(1, e);
    if (ks.empty()) return std::nullopt;
    k = drawFrom(src, ks);
  }
  DrawnShape s;
  s.experts = static_cast<int32_t>(e);
  s.k = static_cast<int32_t>(k);
  s.tokens = static_cast<int32_t>(edgeTokens(src, space, tokens, e));
  s.modelLike = src.u8() >= 192;
  return s;
}

// T for a degenerate case of E experts: 1..8, 1 case in 32 up to 4,096 (a kernel's chunked
// path on a degenerate shape). When the space holds nothing but degenerate shapes (E = 1
// only, say), as an edge's T: the run's tokens then all go there. None when the space has
// no T >= 1.
std::optional<int64_t> degenerateTokens(ByteSource& src, const ShapeSpace& space, int64_t e,
                                        bool onlyDegenerate) {
  const IntSet tokens = space.tokens.clamp(1, kDrawMaxTokens);
  if (tokens.empty()) return std::nullopt;
  if (onlyDegenerate) return edgeTokens(src, space, tokens, e);
  const int64_t perRow = std::max<int64_t>(e, 1);
  const int64_t most = src.u8() < 8 ? std::min<int64_t>(4096, kDrawMaxLogits / perRow) : 8;
  IntSet ts = tokens.clamp(0, most);
  if (ts.empty()) ts = tokens.clamp(0, kDrawMaxLogits / perRow);
  return drawFrom(src, ts);
}

// A degenerate shape of one class: 0 T = 0, 1 E = 0, 2 E = 1, 3 k = 0, 4 k > E; none when
// the space holds no case of that class.
std::optional<DrawnShape> degenerateOfClass(ByteSource& src, const ShapeSpace& space, int cls,
                                            bool onlyDegenerate) {
  const IntSet fitting = expertsFitting(space, space.tokens.clamp(1, kDrawMaxTokens));
  auto anyK = [&](int64_t e) {
    return space.k.empty() ? drawAnyK(src, e) : drawFrom(src, space.k);
  };
  int64_t e = 0, k = 0;
  std::optional<int64_t> t;
  switch (cls) {
    case 0:
      if (!space.tokens.contains(0)) return std::nullopt;
      e = drawFrom(src, space.experts);
      k = anyK(e);
      t = 0;
      break;
    case 1:
    case 2:
      e = cls - 1;
      if (!fitting.contains(e)) return std::nullopt;
      k = anyK(e);
      t = degenerateTokens(src, space, e, onlyDegenerate);
      break;
    case 3:
      if (fitting.empty() || !(space.k.empty() || space.k.contains(0))) return std::nullopt;
      e = drawFrom(src, fitting);
      t = degenerateTokens(src, space, e, onlyDegenerate);
      break;
    default: {
      const int64_t kTop = space.k.empty() ? kDrawMaxExperts + 2 : space.k.max();
      const IntSet below = fitting.clamp(0, kTop - 1);
      if (below.empty()) return std::nullopt;
      e = drawFrom(src, below);
      k = space.k.empty() ? e + 1 + src.u8() % 2 : drawFrom(src, space.k.clamp(e + 1, kTop));
      t = degenerateTokens(src, space, e, onlyDegenerate);
      break;
    }
  }
  if (!t) return std::nullopt;
  DrawnShape s;
  s.experts = static_cast<int32_t>(e);
  s.k = static_cast<int32_t>(k);
  s.tokens = static_cast<int32_t>(*t);
  return s;
}

std::optional<DrawnShape> degenerateDraw(ByteSource& src, const ShapeSpace& space,
                                         bool onlyDegenerate) {
  const int first = src.u8() % 5;
  for (int i = 0; i < 5; ++i) {
    if (auto s = degenerateOfClass(src, space, (first + i) % 5, onlyDegenerate)) return s;
  }
  return std::nullopt;
}

// Anything in the space (when none of the three kinds fits it).
DrawnShape anyDraw(ByteSource& src, const ShapeSpace& space) {
  DrawnShape s;
  s.experts = static_cast<int32_t>(drawFrom(src, expertsFitting(space, space.tokens)));
  s.k = static_cast<int32_t>(space.k.empty() ? drawAnyK(src, s.experts) : drawFrom(src, space.k));
  s.tokens = static_cast<int32_t>(
      drawFrom(src, space.tokens.clamp(0, kDrawMaxLogits / std::max(s.experts, 1))));
  return s;
}

}  // namespace

int64_t drawFrom(ByteSource& src, const IntSet& set) {
  const auto& ranges = set.ranges();
  const uint8_t mode = src.u8();
  if (mode < 64) {
    std::vector<int64_t> inside;
    for (int64_t b : kBoundaries) {
      if (set.contains(b)) inside.push_back(b);
    }
    if (!inside.empty()) return inside[src.u8() % inside.size()];
  } else if (mode < 96) {
    const IntRange& r = ranges[src.u8() % ranges.size()];
    return (src.u8() & 1) ? r.lo : r.hi;
  } else if (mode < 128) {
    static constexpr int64_t kSteps[] = {16, 32, 128};
    const int64_t step = kSteps[src.u8() % 3];
    const int64_t v = step * logUniformIn(src, 1, std::max<int64_t>(1, set.max() / step)) +
                      static_cast<int64_t>(src.u8() % 3) - 1;
    if (set.contains(v)) return v;
  }
  const IntRange& r = ranges[src.u8() % ranges.size()];
  if (r.hi == 0) return 0;
  return logUniformIn(src, std::max<int64_t>(r.lo, 1), r.hi);
}

DrawnShape drawShape(ByteSource& src, const ShapeSpace& space) {
  // Zero bytes (a libFuzzer input's end, Hypothesis shrinking) read as the simplest case: a
  // kernel edge at the space's smallest E of at least 2, k = 1, one token, logits +0.
  const uint8_t kind = src.u8();
  std::optional<DrawnShape> s;
  if (kind < 112) {
    s = edgeDraw(src, space);
  } else if (kind < 128) {
    s = degenerateDraw(src, space, false);
  } else {
    s = modelDraw(src, space);
  }
  // A kind the space holds no case of gives way to the next that it holds.
  if (!s) s = edgeDraw(src, space);
  if (!s) s = modelDraw(src, space);
  if (!s) s = degenerateDraw(src, space, true);
  return s ? *s : anyDraw(src, space);
}

}  // namespace moe::fuzz
