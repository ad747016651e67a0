// drawFamilyCase: the campaign's moe_route_v2 cases (docs/fuzz.md, "The routing family").
// drawCase gives the shape and the adversarial logits; this file adds the family's
// parameters (only those the contract's "families" lists) and the structures that break
// family routers: tied groups, a group whose best two keys tie with another's, biases that
// cancel score differences in binary32 or overturn the score order, groups of one, k above
// the eligible experts, sigmoid's saturation, the shapes of today's models, and parameters
// outside their domain.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/recipes.hpp"

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

// True when the family fields of `fam` allow G groups on E experts: G divides E, and some
// allowed topk_groups and group score fit it.
bool groupsAllowed(const Families& fam, int32_t E, int32_t G) {
  if (G < 1 || (E > 0 && E % G != 0)) return false;
  if (!fam.groupValues.empty() ? !fam.groupValues.contains(G) : (G > 1 && !fam.groups)) {
    return false;
  }
  if (!fam.topkGroups.empty() && fam.topkGroups.clamp(1, G).empty()) return false;
  const bool onlyTop2 = fam.groupScores.size() == 1 && fam.groupScores[0] == 1;
  return !(G > 1 && onlyTop2 && E / G < 2);
}

// Every G the family fields allow on E experts (E = 0: any allowed G divides it).
std::vector<int32_t> groupChoices(const Families& fam, int32_t E) {
  std::vector<int32_t> out;
  const int32_t top =
      E > 0 ? E
            : static_cast<int32_t>(
                  fam.groupValues.empty() ? 1 : std::min<int64_t>(fam.groupValues.max(), 4096));
  for (int32_t g = 1; g <= top; ++g) {
    if (groupsAllowed(fam, E, g)) out.push_back(g);
  }
  return out;
}

// The recipe's shapes that the space holds, when the contract's families allow every field
// of it (none otherwise).
std::vector<RecipeShape> recipeFits(const Recipe& r, const ShapeSpace& space, const Families& fam) {
  if (r.score == 1 ? !fam.sigmoid : !fam.softmax) return {};
  if (r.bias ? !fam.bias : fam.biasRequired) return {};
  if (!fam.recipes.empty()) {
    if (std::find(fam.recipes.begin(), fam.recipes.end(), r.name) == fam.recipes.end()) return {};
  } else {
    auto allows = [](const auto& list, auto v) {
      return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
    };
    if (!allows(fam.renormalize, r.renormalize) || !allows(fam.scales, r.scale)) return {};
    if (!groupsAllowed(fam, 0, r.groups)) return {};
    if (!fam.topkGroups.empty() && !fam.topkGroups.contains(r.topkGroups)) return {};
    if (r.groups > 1 && !allows(fam.groupScores, r.groupScore)) return {};
  }
  std::vector<RecipeShape> out;
  for (const RecipeShape& s : r.shapes) {
    if (space.experts.contains(s.experts) && (space.k.empty() || space.k.contains(s.k))) {
      out.push_back(s);
    }
  }
  return out;
}

// The experts of the space on which the family fields allow some groups: all of them unless
// the contract narrows the groups (then E must be a multiple of an allowed G). Computed once
// per families and space (a run asks the same question for every case).
const IntSet& expertsForGroups(const ShapeSpace& space, const Families& fam) {
  thread_local std::string key;
  thread_local IntSet cached;
  const std::string now = space.experts.text() + "|" + fam.groupValues.text() + "|" +
                          fam.topkGroups.text() + "|" + std::to_string(fam.groups) +
                          std::to_string(fam.groupScores.size()) +
                          (fam.groupScores.empty() ? "" : std::to_string(fam.groupScores[0]));
  if (now == key) return cached;
  std::vector<int64_t> fit;
  for (const IntRange& r : space.experts.ranges()) {
    for (int64_t e = r.lo; e <= r.hi; ++e) {
      if (!groupChoices(fam, static_cast<int32_t>(e)).empty()) fit.push_back(e);
    }
  }
  key = now;
  cached = IntSet::ofValues(std::move(fit));
  return cached;
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

// The bias: small (DeepSeek's e_score_correction_bias is ~1e-3 to 1e-1; always so for a
// case with model-like logits), large enough to overturn the score order, constant (a shift
// changes nothing kept), exact zeros, or copies (ties between keys).
std::vector<float> drawBias(ByteSource& src, int32_t E, bool modelLike) {
  std::vector<float> b(static_cast<size_t>(E));
  const uint8_t mode = modelLike ? 0 : src.u8() % 6;
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

// The adversarial structures on a valid family (k changes only where the space allows it).
void addStructure(ByteSource& src, Case& c, Family& f, const ShapeSpace& space) {
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
    case 4: {  // k above the eligible experts (empty slots)
      const int32_t k = familyEligible(f, E) + 1 + src.u8() % 3;
      if (space.k.empty() || space.k.contains(k)) c.k = k;
      break;
    }
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

namespace {

// One of `values` (not empty).
template <class T>
T pickOf(ByteSource& src, const std::vector<T>& values) {
  return values[static_cast<size_t>(pick(src, static_cast<int32_t>(values.size())))];
}

// A case of a named recipe (or a model's shape the families allow): its shape, every field
// of it, a drawn bias when it has one, now and then a structure that breaks routers.
Case recipeCase(ByteSource& src, Case c, const Recipe& r, const RecipeShape& shape,
                const ShapeSpace& space) {
  reshape(src, c, shape.experts, shape.k, space);
  Family f = recipeFamily(r);
  if (r.bias) f.bias = drawBias(src, c.experts, c.modelLike);
  ShapeSpace atShape = space;  // the structures keep the recipe's k
  atShape.k = IntSet::range(shape.k, shape.k);
  if (src.u8() < (c.modelLike ? 64 : 128)) addStructure(src, c, f, atShape);
  c.family = std::move(f);
  return c;
}

// The recipes the families allow with a shape the space holds.
std::vector<std::pair<const Recipe*, RecipeShape>> fittingRecipes(const ShapeSpace& space,
                                                                  const Families& fam) {
  std::vector<std::pair<const Recipe*, RecipeShape>> fits;
  for (const Recipe& r : recipes()) {
    for (const RecipeShape& s : recipeFits(r, space, fam)) fits.emplace_back(&r, s);
  }
  return fits;
}

}  // namespace

bool caseInside(const Case& c, const ShapeSpace& space, const Families* fam) {
  if (!space.experts.contains(c.experts) || !space.tokens.contains(c.tokens)) return false;
  if (!space.k.empty() && !space.k.contains(c.k)) return false;
  if (!c.family || fam == nullptr || !familyInvalidReason(*c.family, c.experts).empty()) {
    return true;
  }
  const Family& f = *c.family;
  if (!fam->recipes.empty()) {
    const std::string_view r = recipeOf(c);
    return std::find(fam->recipes.begin(), fam->recipes.end(), r) != fam->recipes.end();
  }
  auto allows = [](const auto& list, auto v) {
    return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
  };
  if (f.score == 1 ? !fam->sigmoid : !fam->softmax) return false;
  if (f.bias.empty() ? fam->biasRequired : !fam->bias) return false;
  if (!allows(fam->renormalize, f.renormalize) || !allows(fam->scales, f.scale)) return false;
  if (!groupsAllowed(*fam, c.experts, f.groups)) return false;
  if (!fam->topkGroups.empty() && !fam->topkGroups.contains(f.topkGroups)) return false;
  return f.groups == 1 || allows(fam->groupScores, f.groupScore);
}

void checkFamiliesDrawable(const Families& fam, const ShapeSpace& space) {
  if (!fam.softmax && !fam.sigmoid) throw std::invalid_argument("families: no score function");
  if (!fam.recipes.empty()) {
    for (const std::string& name : fam.recipes) {
      const Recipe* r = findRecipe(name);
      if (r == nullptr || recipeFits(*r, space, fam).empty()) {
        std::string shapes;
        if (r != nullptr) {
          for (const RecipeShape& s : r->shapes) {
            shapes += fmt::format("{}E = {}, k = {}", shapes.empty() ? "" : " or ", s.experts, s.k);
          }
        }
        throw std::invalid_argument(fmt::format(
            "recipe {} routes at {}, outside the shapes drawn ({})", name, shapes, space.text()));
      }
    }
    return;
  }
  if (fam.restrictsGroups() && expertsForGroups(space, fam).empty()) {
    throw std::invalid_argument(
        fmt::format("families: no E of the shapes drawn ({}) takes the groups allowed (groups "
                    "{}, topk_groups {})",
                    space.text(), fam.groupValues.empty() ? "any" : fam.groupValues.text(),
                    fam.topkGroups.empty() ? "any" : fam.topkGroups.text()));
  }
}

Case drawFamilyCase(ByteSource& src, const ShapeSpace& space, const Families& fam) {
  if (!fam.recipes.empty()) {
    // Every case follows one of the recipes named (1 in 16 with parameters outside the
    // domain, which the kernel must refuse before it looks at what it supports).
    const auto fits = fittingRecipes(space, fam);
    if (fits.empty()) checkFamiliesDrawable(fam, space);  // throws, naming the recipe
    const auto& [r, shape] = pickOf(src, fits);
    Case c = recipeCase(src, drawCase(src, space), *r, shape, space);
    if (src.u8() >= 240) makeInvalid(src, c, *c.family);
    return c;
  }
  ShapeSpace drawn = space;
  if (fam.restrictsGroups()) drawn.experts = expertsForGroups(space, fam);
  Case c = drawCase(src, drawn);
  const uint8_t mode = src.u8();
  // At a model's recipe: 1 case in 8, and half of those with model-like logits (when the
  // space and the contract allow one).
  if (mode < 32 || (c.modelLike && mode < 128)) {
    const auto fits = fittingRecipes(space, fam);
    if (!fits.empty()) {
      const auto& [r, shape] = pickOf(src, fits);
      return recipeCase(src, std::move(c), *r, shape, space);
    }
  }
  const int32_t E = c.experts;
  Family f;
  f.score = fam.softmax && fam.sigmoid ? (src.u8() & 1) : (fam.sigmoid ? 1 : 0);
  if (fam.biasRequired || (fam.bias && src.u8() < 160)) f.bias = drawBias(src, E, c.modelLike);
  if (fam.restrictsGroups()) {
    // Only what the contract lists (E was drawn among the experts that take some of it).
    const std::vector<int32_t> choices = groupChoices(fam, E);
    if (!choices.empty()) f.groups = pickOf(src, choices);
    std::vector<int32_t> topks;
    for (int32_t t = 1; t <= f.groups; ++t) {
      if (fam.topkGroups.empty() || fam.topkGroups.contains(t)) topks.push_back(t);
    }
    if (!topks.empty()) f.topkGroups = pickOf(src, topks);
    std::vector<int32_t> scores =
        fam.groupScores.empty() ? std::vector<int32_t>{0, 1} : fam.groupScores;
    if (f.groups > 1 && E / f.groups < 2) std::erase(scores, 1);  // top-2 of groups of one
    if (!scores.empty()) f.groupScore = pickOf(src, scores);
  } else if (fam.groups && E >= 2 && src.u8() < 176) {
    const std::vector<int32_t> d = divisors(E);
    // G = E (groups of one) a fifth of the time, else any divisor above 1.
    f.groups = src.u8() < 52
                   ? E
                   : d[static_cast<size_t>(1 + pick(src, static_cast<int32_t>(d.size()) - 1))];
    f.topkGroups = 1 + pick(src, f.groups);
    f.groupScore = (E / f.groups >= 2 && (src.u8() & 1)) ? 1 : 0;
  }
  f.renormalize = fam.renormalize.empty() ? (src.u8() & 1) : pickOf(src, fam.renormalize);
  f.scale = fam.scales.empty() ? kScales[src.u8() % std::size(kScales)] : pickOf(src, fam.scales);
  c.family = std::move(f);
  // 1 case in 16 outside the domain: few tokens suffice.
  if (mode >= 240) {
    makeInvalid(src, c, *c.family);
    return c;
  }
  // Model-like logits are mostly left as a model would give them (they bring their own
  // planted ties); the adversarial ones always get a structure.
  if (!c.modelLike || src.u8() < 64) addStructure(src, c, *c.family, space);
  return c;
}

}  // namespace moe::fuzz
