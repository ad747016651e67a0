// The model shapes (model_shapes.hpp). Values from the models' published configurations
// (num_experts / n_routed_experts and num_experts_per_tok).
#include "moe/fuzz/model_shapes.hpp"

#include <algorithm>
#include <vector>

namespace moe::fuzz {

namespace {

constexpr ModelShape kModelShapes[] = {
    {8, 2, "Mixtral 8x7B / 8x22B, Grok-1"},
    {16, 1, "Llama 4 Scout"},
    {16, 4, "DBRX"},
    {32, 4, "gpt-oss-20b"},
    {60, 4, "Qwen1.5-MoE-A2.7B"},
    {64, 6, "DeepSeek-MoE 16B"},
    {64, 8, "Qwen2-57B-A14B, OLMoE"},
    {128, 1, "Llama 4 Maverick"},
    {128, 2, "Snowflake Arctic"},
    {128, 4, "gpt-oss-120b"},
    {128, 8, "Qwen3-MoE, GLM-4.5-Air"},
    {160, 6, "DeepSeek-V2"},
    {160, 8, "GLM-4.5"},
    {256, 8, "DeepSeek-V3 / R1"},
    {384, 8, "Kimi K2"},
    {512, 10, "Qwen3-Next"},
};

}  // namespace

std::span<const ModelShape> modelShapes() {
  return kModelShapes;
}

bool isModelShape(int64_t experts, int64_t k, int64_t tokens) {
  return experts >= kModelMinExperts && experts <= kModelMaxExperts && k >= 1 &&
         k <= std::min(kModelMaxK, experts) && tokens >= kModelMinTokens;
}

bool isDegenerateShape(int64_t experts, int64_t k, int64_t tokens) {
  return experts <= 1 || k == 0 || k > experts || tokens == 0;
}

const IntSet& modelExpertSizes() {
  static const IntSet sizes = [] {
    std::vector<int64_t> values;
    for (const ModelShape& m : kModelShapes) {
      for (int64_t d : {-16, -1, 0, 1, 16}) {
        const int64_t e = m.experts + d;
        if (e >= kModelMinExperts && e <= kModelMaxExperts) values.push_back(e);
      }
    }
    return IntSet::ofValues(std::move(values));
  }();
  return sizes;
}

}  // namespace moe::fuzz
