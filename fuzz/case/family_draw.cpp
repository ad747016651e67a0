// drawFamilyCase: the campaign's moe_route_v2 cases (docs/fuzz.md, "The routing family").
// drawCase gives the shape and the adversarial logits; this file adds the family's
// parameters (only those the contract's "families" lists) and the structures that break
// family routers: tied groups, a group whose best two keys tie with another's, biases that
// cancel score differences in binary32 or overturn the score order, groups of one, k above
// the eligible experts, sigmoid's saturation, the shapes of today's models, and parameters
// outside their domain.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/contract.hpp"

namespace moe::fuzz {

namespace {

int32_t pick(ByteSource& src, int32_t n) {
  return n <= 1 ? 0 : static_cast<int32_t>(src.u16() % static_cast<uint32_t>(n));
}

float uniform(ByteSource& src, float lo, float hi) {
  return lo + (hi - lo) * static_cast<float>(src.u16()) / 65535.0f;
}

std::vector<int32_t> divisors(int32_t n) {
  std::vector<int32_t> d;
  for (int32_t g = 1; g <= n; ++g) {
    if (n % g == 0) d.push_back(g);
  }
  return d;
}

// The binary32 sigmoid a kernel would compute, for biases that cancel score differences
// exactly in binary32 (over the reals they never do: the verdict sees near-ties).
float sigmoid32(float x) {
  return 1.0f / (1.0f + std::exp(0.0f - x));
}

// The model shapes (route_abi.h's table): used when the space holds the shape and the
// contract the features.
struct Preset {
  int32_t experts, k, score, groups, topkGroups, groupScore, renormalize;
  bool bias;
  float scale;
};
constexpr Preset kPresets[] = {
    {256, 8, 1, 8, 4, 1, 1, true, 2.5f},    // DeepSeek-V3/R1
    {384, 8, 1, 1, 1, 0, 1, true, 2.827f},  // Kimi K2
    {16, 1, 1, 1, 1, 0, 0, false, 1.0f},    // Llama 4 Scout
    {128, 1, 1, 1, 1, 0, 0, false, 1.0f},   // Llama 4 Maverick
    {160, 6, 0, 8, 3, 0, 0, false, 16.0f},  // DeepSeek-V2
    {60, 4, 0, 1, 1, 0, 0, false, 1.0f},    // Qwen1.5/Qwen2-MoE (raw probabilities)
    {128, 8, 1, 1, 1, 0, 1, true, 2.5f},    // GLM-4.5 (E = 128 here)
};

bool presetFits(const Preset& p, const ShapeSpace& space, const Families& fam) {
  if (!space.experts.contains(p.experts)) return false;
  if (!space.k.empty() && !space.k.contains(p.k)) return false;
  if (p.score == 1 ? !fam.sigmoid : !fam.softmax) return false;
  if (p.groups > 1 && !fam.groups) return false;
  if (p.bias && !fam.bias) return false;
  return true;
}

// Reshape to E experts (k given), keeping T within the draw's soft budget, and redraw.
void reshape(ByteSource& src, Case& c, int32_t experts, int32_t k, const ShapeSpace& space) {
  c.experts = experts;
  c.k = k;
  const int64_t cap = std::max<int64_t>(1, (int64_t{1} << 16) / std::max(experts, 1));
  int64_t t = std::min<int64_t>(c.tokens, cap);
  if (!space.tokens.contains(t))
    t = space.tokens.clamp(0, cap).empty() ? c.tokens : space.tokens.clamp(0, cap).max();
  c.tokens = static_cast<int32_t>(t);
  c.split = std::min(c.split, c.tokens);
  drawLogits(src, c);
}

constexpr float kScales[] = {1.0f, 1.0f, 1.0f,        2.5f,  16.0f,   2.827f,
                             0.3f, 1.7f, 7.0f / 3.0f, 1e-3f, 123.45f, -2.5f};

// The bias: small (DeepSeek's e_score_correction_bias is ~1e-3 to 1e-1), large enough to
// overturn the score order, constant (a shift changes nothing kept), exact zeros, or
// copies (ties between keys).
std::vector<float> drawBias(ByteSource& src, int32_t E) {
  std::vector<float> b(static_cast<size_t>(E));
  const uint8_t mode = src.u8() % 6;
  const float constant = uniform(src, -1.0f, 1.0f);
  for (int32_t e = 0; e < E; ++e) {
    float v = 0;
    switch (mode) {
      case 0:
        v = uniform(src, -0.1f, 0.1f);
        break;
      case 1:  // overturns: larger than every score difference in [0, 1]
        v = uniform(src, -4.0f, 4.0f);
        break;
      case 2:
        v = constant;
        break;
      case 3:
        v = 0.0f;
        break;
      case 4:  // a few distinct values: many exactly equal keys where logits tie
        v = static_cast<float>(static_cast<int>(src.u8() % 4)) * 0.25f;
        break;
      default:  // reversing the index order: a bias that decreases with e
        v = -static_cast<float>(e) / static_cast<float>(std::max(E, 1)) * 2.0f;
        break;
    }
    b[static_cast<size_t>(e)] = v;
  }
  return b;
}

// Copies expert `from`'s column (every token) and bias to `to`: an exactly equal key.
void copyExpert(Case& c, Family& f, int32_t from, int32_t to) {
  for (int32_t t = 0; t < c.tokens; ++t) {
    float* row = c.logits.data() + static_cast<size_t>(t) * c.experts;
    row[to] = row[from];
  }
  if (!f.bias.empty()) f.bias[static_cast<size_t>(to)] = f.bias[static_cast<size_t>(from)];
}

// The adversarial structures on a valid family.
void addStructure(ByteSource& src, Case& c, Family& f) {
  const int32_t E = c.experts, G = f.groups;
  if (E < 2 || c.tokens == 0) return;
  const int32_t size = E / G;
  switch (src.u8() % 8) {
    case 0:  // two groups exactly equal: tied group scores
      if (G > 1) {
        const int32_t a = pick(src, G), b = pick(src, G);
        for (int32_t i = 0; i < size; ++i) copyExpert(c, f, a * size + i, b * size + i);
      }
      break;
    case 1:  // group b's best two keys are group a's, its others far below
      if (G > 1 && size >= 2) {
        const int32_t a = pick(src, G), b = pick(src, G);
        if (a == b) break;
        for (int32_t i = 0; i < size; ++i) copyExpert(c, f, a * size + i, b * size + i);
        // Lowering all but two members keeps a's two best in b only if those are the two
        // kept: lower every member of b except the two a ranks best on token 0.
        std::vector<int32_t> order(static_cast<size_t>(size));
        for (int32_t i = 0; i < size; ++i) order[static_cast<size_t>(i)] = i;
        const auto row = c.row(0);
        auto key = [&](int32_t i) {
          const float s = f.score == 1 ? sigmoid32(row[a * size + i]) : row[a * size + i];
          const float v = f.bias.empty() ? s : s + f.bias[static_cast<size_t>(a * size + i)];
          return std::isnan(v) ? -INFINITY : v;  // a strict weak order for the sort
        };
        std::stable_sort(order.begin(), order.end(),
                         [&](int32_t x, int32_t y) { return key(x) > key(y); });
        for (int32_t r = 2; r < size; ++r) {
          const int32_t e = b * size + order[static_cast<size_t>(r)];
          for (int32_t t = 0; t < c.tokens; ++t) c.logits[static_cast<size_t>(t) * E + e] = -30.0f;
          if (!f.bias.empty()) f.bias[static_cast<size_t>(e)] = -1.0f;
        }
      }
      break;
    case 2:  // a bias that cancels a score difference exactly in binary32 (token 0, sigmoid)
      if (!f.bias.empty() && f.score == 1) {
        const int32_t i = pick(src, E), j = pick(src, E);
        const auto row = c.row(0);
        const float si = sigmoid32(row[i]), sj = sigmoid32(row[j]);
        f.bias[static_cast<size_t>(j)] = (si + f.bias[static_cast<size_t>(i)]) - sj;
      }
      break;
    case 3:  // sigmoid saturation: logits where binary32's sigmoid is exactly 1 or near it
      for (int32_t t = 0; t < c.tokens; ++t) {
        for (int32_t e = 0; e < E; ++e) {
          if (src.u8() < 96) c.logits[static_cast<size_t>(t) * E + e] = uniform(src, 15.0f, 20.0f);
        }
      }
      break;
    case 4:  // k above the eligible experts (empty slots)
      c.k = familyEligible(f, E) + 1 + src.u8() % 3;
      break;
    case 5:  // equal keys within a group (copies)
      for (int32_t n = 0; n < 1 + src.u8() % 4; ++n) copyExpert(c, f, pick(src, E), pick(src, E));
      break;
    default:  // as drawn
      break;
  }
}

// Parameters outside the domain (route_abi.h): the kernel must return EBADPARAMS, write
// nothing, and not crash.
void makeInvalid(ByteSource& src, Case& c, Family& f) {
  const int32_t E = c.experts;
  switch (src.u8() % 8) {
    case 0:
      if (E >= 2) {
        int32_t g = 2 + pick(src, E);
        while (E % g == 0) ++g;
        f.groups = g;
        f.topkGroups = 1;
        break;
      }
      [[fallthrough]];
    case 1:
      f.groups = (src.u8() & 1) ? 0 : -3;
      break;
    case 2:
      f.topkGroups = (src.u8() & 1) ? 0 : f.groups + 1;
      break;
    case 3:
      if (E >= 2) {  // top-2 sums of groups of one
        f.groups = E;
        f.topkGroups = 1;
        f.groupScore = 1;
        break;
      }
      [[fallthrough]];
    case 4:
      f.score = (src.u8() & 1) ? 2 : -1;
      break;
    case 5:
      f.renormalize = (src.u8() & 1) ? 2 : -1;
      break;
    case 6: {
      const float bad[] = {std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity()};
      f.scale = bad[src.u8() % 3];
      break;
    }
    default:
      f.structShort = 4 * (1 + src.u8() % 3);
      break;
  }
}

}  // namespace

Case drawFamilyCase(ByteSource& src, const ShapeSpace& space, const Families& fam) {
  Case c = drawCase(src, space);
  Family f;
  const uint8_t mode = src.u8();
  // 1 case in 8 at a model's shape (when the space and the contract allow one).
  if (mode < 32) {
    std::vector<const Preset*> fits;
    for (const Preset& p : kPresets) {
      if (presetFits(p, space, fam)) fits.push_back(&p);
    }
    if (!fits.empty()) {
      const Preset& p = *fits[static_cast<size_t>(pick(src, static_cast<int32_t>(fits.size())))];
      reshape(src, c, p.experts, p.k, space);
      f.score = p.score;
      f.groups = p.groups;
      f.topkGroups = p.topkGroups;
      f.groupScore = p.groupScore;
      f.renormalize = p.renormalize;
      f.scale = p.scale;
      if (p.bias) f.bias = drawBias(src, c.experts);
      if (src.u8() < 128) addStructure(src, c, f);
      c.family = std::move(f);
      return c;
    }
  }
  const int32_t E = c.experts;
  f.score = fam.softmax && fam.sigmoid ? (src.u8() & 1) : (fam.sigmoid ? 1 : 0);
  if (fam.bias && src.u8() < 160) f.bias = drawBias(src, E);
  if (fam.groups && E >= 2 && src.u8() < 176) {
    const std::vector<int32_t> d = divisors(E);
    // G = E (groups of one) a fifth of the time, else any divisor above 1.
    f.groups = src.u8() < 52
                   ? E
                   : d[static_cast<size_t>(1 + pick(src, static_cast<int32_t>(d.size()) - 1))];
    f.topkGroups = 1 + pick(src, f.groups);
    f.groupScore = (E / f.groups >= 2 && (src.u8() & 1)) ? 1 : 0;
  }
  f.renormalize = src.u8() & 1;
  f.scale = kScales[src.u8() % std::size(kScales)];
  c.family = std::move(f);
  // 1 case in 16 outside the domain: few tokens suffice.
  if (mode >= 240) {
    makeInvalid(src, c, *c.family);
    return c;
  }
  addStructure(src, c, *c.family);
  return c;
}

}  // namespace moe::fuzz
