// One moe_layer_v1 library per variant (tests/fuzz/CMakeLists.txt builds each with one
// LAYER_VARIANT_*): the test layer of test_layer.hpp, correct or with one bug, plus layers
// that crash and hang, so that the layer door is tested through the real command as a
// user's kernel is.
#include <csignal>
#include <cstring>
#include <thread>

#include "test_layer.hpp"

namespace {

using moe::test_layer::Bug;
using moe::test_layer::Order;

#if defined(LAYER_VARIANT_DOUBLE_ADD)
constexpr Bug kBug = Bug::kDoubleAdd;
#elif defined(LAYER_VARIANT_GATE_BEFORE_ACT)
constexpr Bug kBug = Bug::kGateBeforeActivation;
#elif defined(LAYER_VARIANT_BF16_ACCUMULATOR)
constexpr Bug kBug = Bug::kBf16Accumulator;
#elif defined(LAYER_VARIANT_MISSING)
constexpr Bug kBug = Bug::kMissing;
#elif defined(LAYER_VARIANT_WRONG_GATE)
constexpr Bug kBug = Bug::kWrongGate;
#else
constexpr Bug kBug = Bug::kNone;
#endif

}  // namespace

extern "C" __attribute__((visibility("default"))) int moe_layer_v1(
    const moe_layer_params_v1* p, const void* x, const float* logits, const void* w13,
    const void* w2, float* y, int32_t* ids, float* gates) {
#if defined(LAYER_VARIANT_SEGV)
  // A layer that dies on batches of more than one token (a bug only bigger batches show).
  if (p && p->tokens > 1) std::raise(SIGSEGV);
#elif defined(LAYER_VARIANT_HANG)
  if (p && p->tokens > 2) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
#endif
  return moe::test_layer::layer<Order::kSequential, kBug>(p, x, logits, w13, w2, y, ids, gates);
}

extern "C" __attribute__((visibility("default"))) const char* moe_layer_v1_contract(void) {
  return R"({"abi": "moe_layer_v1", "dtype": ["f32", "bf16"]})";
}
