// PyTorch's CPU MixtralSparseMoeBlock as a fused layer (examples/torch_layer), judged by
// moe-oracle's layer door as a user would run it: with its contract ("tie_order": "any",
// f32 and bf16 inputs) it runs clean over real models' shapes and the generator's
// adversarial values.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "run_oracle.hpp"

namespace moe::fuzz {
namespace {

using testing::freshDir;
using testing::runOracle;

TEST(TorchLayer, TheMixtralSparseBlockRunsCleanThroughTheLayerDoor) {
  if (std::string(MOE_TORCH_LAYER).empty()) {
    GTEST_SKIP() << "libtorch was not found at configure time (Debian 12: apt-get install "
                    "libtorch-dev), so examples/torch_layer was not built";
  }
  const auto r = runOracle("fuzz --json --seconds 30 --seed 4 --min-tokens 200 --impl " +
                           std::string(MOE_TORCH_LAYER) + " --out " + freshDir("torch-layer"));
  ASSERT_EQ(r.exitCode, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["abi"], "moe_layer_v1");
  EXPECT_TRUE(j["violations"].empty()) << j;
  EXPECT_GE(j["tokens"].get<int64_t>(), 200) << j;
  EXPECT_EQ(j["coverage"]["dtype"].size(), 2u) << j["coverage"];
}

}  // namespace
}  // namespace moe::fuzz
