// The routing recipes of today's open models (docs/design.md, section 6): each fixes every
// field of the routing family and the shapes (E, k) the model routes at, so that a kernel
// written for one model says so in one word ("families": {"recipes": ["deepseek-v3"]},
// --family deepseek-v3) and is fuzzed on exactly that.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "moe/fuzz/case.hpp"

namespace moe::fuzz {

struct RecipeShape {
  int32_t experts = 0, k = 0;
};

struct Recipe {
  std::string_view name;    // "deepseek-v3": what contracts and --family say
  std::string_view models;  // "DeepSeek-V3 / R1": for docs and reports
  Family family;            // every field but the bias, which is drawn (the model learns it)
  bool bias = false;        // a per-expert selection bias
  std::span<const RecipeShape> shapes;  // the (E, k) of the model's sizes
};

// Every recipe, in the order docs/design.md lists them.
std::span<const Recipe> recipes();
// The recipe of that name, or nullptr.
const Recipe* findRecipe(std::string_view name);
// "deepseek-v3, deepseek-v2, kimi-k2, ...": for error messages and help.
std::string recipeNames();
// The family of a recipe (the bias, when it has one, left for the caller to draw: E values).
Family recipeFamily(const Recipe& r);
// The recipe a case follows: its shape is one of the recipe's and its family has every
// field of it (a bias present exactly when the recipe has one); "" when none does (a v1
// case, parameters outside the domain, a shape or family no model uses).
std::string_view recipeOf(const Case& c);

}  // namespace moe::fuzz
