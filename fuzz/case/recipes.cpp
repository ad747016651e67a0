// The recipe table (recipes.hpp). Values from the models' published configurations:
// scoring_func, n_group / topk_group, topk_method, norm_topk_prob and routed_scaling_factor.
#include "moe/fuzz/recipes.hpp"

#include <array>

namespace moe::fuzz {

namespace {

constexpr RecipeShape kDeepSeekV3[] = {{256, 8}};
constexpr RecipeShape kDeepSeekV2[] = {{160, 6}};
constexpr RecipeShape kKimiK2[] = {{384, 8}};
constexpr RecipeShape kGlm45[] = {{160, 8}, {128, 8}};  // GLM-4.5, GLM-4.5-Air
constexpr RecipeShape kLlama4[] = {{16, 1}, {128, 1}};  // Scout, Maverick
constexpr RecipeShape kMixtral[] = {{8, 2}};
constexpr RecipeShape kQwen2Moe[] = {{60, 4}, {64, 8}};  // Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B
constexpr RecipeShape kQwen3Moe[] = {{128, 8}};
constexpr RecipeShape kGptOss[] = {{32, 4}, {128, 4}};  // gpt-oss-20b, gpt-oss-120b

constexpr auto kSoftmax = ScoreFunction::kSoftmax;
constexpr auto kSigmoid = ScoreFunction::kSigmoid;
constexpr auto kMax = GroupScoreFunction::kMax;
constexpr auto kTop2Sum = GroupScoreFunction::kTop2Sum;

Family family(ScoreFunction score, int32_t groups, int32_t topkGroups,
              GroupScoreFunction groupScore, int32_t renormalize, float scale) {
  Family f;
  f.score = score;
  f.groups = groups;
  f.topkGroups = topkGroups;
  f.groupScore = groupScore;
  f.renormalize = renormalize;
  f.scale = scale;
  return f;
}

// name, models, family (score, groups, topk_groups, group_score, renormalize, scale), bias,
// shapes
const std::array<Recipe, 9> kRecipes = {{
    {"deepseek-v3", "DeepSeek-V3 / R1", family(kSigmoid, 8, 4, kTop2Sum, 1, 2.5f), true,
     kDeepSeekV3},
    {"deepseek-v2", "DeepSeek-V2", family(kSoftmax, 8, 3, kMax, 0, 16.0f), false, kDeepSeekV2},
    {"kimi-k2", "Kimi K2", family(kSigmoid, 1, 1, kMax, 1, 2.827f), true, kKimiK2},
    {"glm-4.5", "GLM-4.5, GLM-4.5-Air", family(kSigmoid, 1, 1, kMax, 1, 2.5f), true, kGlm45},
    {"llama4", "Llama 4 Scout, Maverick", family(kSigmoid, 1, 1, kMax, 0, 1.0f), false, kLlama4},
    {"mixtral", "Mixtral 8x7B", family(kSoftmax, 1, 1, kMax, 1, 1.0f), false, kMixtral},
    {"qwen2-moe", "Qwen1.5-MoE, Qwen2-MoE", family(kSoftmax, 1, 1, kMax, 0, 1.0f), false,
     kQwen2Moe},
    {"qwen3-moe", "Qwen3-MoE", family(kSoftmax, 1, 1, kMax, 1, 1.0f), false, kQwen3Moe},
    // Top-k on the logits, then softmax over the k: the renormalised softmax gates.
    {"gpt-oss", "gpt-oss", family(kSoftmax, 1, 1, kMax, 1, 1.0f), false, kGptOss},
}};

}  // namespace

std::span<const Recipe> recipes() {
  return kRecipes;
}

const Recipe* findRecipe(std::string_view name) {
  for (const Recipe& r : kRecipes) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::string recipeNames() {
  std::string out;
  for (const Recipe& r : kRecipes) out += (out.empty() ? "" : ", ") + std::string(r.name);
  return out;
}

Family recipeFamily(const Recipe& r) {
  return r.family;
}

std::string_view recipeOf(const Case& c) {
  if (!c.family) return "";
  const Family& f = *c.family;
  for (const Recipe& r : kRecipes) {
    bool shape = false;
    for (const RecipeShape& s : r.shapes) shape = shape || (s.experts == c.experts && s.k == c.k);
    if (!shape || f.structShort != 0 || f.bias.empty() == r.bias) continue;
    Family same = recipeFamily(r);
    same.bias = f.bias;
    if (f.groups == 1) same.groupScore = f.groupScore;  // ignored without groups
    if (same == f) return r.name;
  }
  return "";
}

}  // namespace moe::fuzz
