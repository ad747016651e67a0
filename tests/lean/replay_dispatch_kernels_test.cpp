// Replay of DispatchTest through moe_dispatch_v1 (layer_abi.h) of the in-tree dispatch kernel
// (libmoe_dispatch_eigen.so): on every valid case, with max_rows = Lean's rows, status 0 and
// Lean's sorted_slots, block_expert and rows exactly; with one row less (rows > 0),
// MOE_ROUTE_EOVERFLOW; on every case outside Lean's dispatchValid, MOE_ROUTE_EBADPARAMS; and
// nothing written on any error. The same replay run on the broken test kernels
// (tests/fuzz/dispatch/broken_dispatch.c) must find each of them wrong on some vector.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "dispatch_vectors.hpp"
#include "lean_vectors.hpp"
#include "moe/layer_abi.h"

namespace moe::lean {
namespace {

using DispatchFn = int (*)(int32_t, int32_t, int32_t, int32_t, int32_t, const int32_t*, int32_t*,
                           int32_t*, int32_t*, int32_t);

DispatchFn loadDispatch(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return nullptr;
  return reinterpret_cast<DispatchFn>(dlsym(handle, "moe_dispatch_v1"));
}

constexpr int32_t kUnwritten = -12345;

struct Call {
  int status = 0;
  std::vector<int32_t> sorted, blockExpert;
  int32_t rows = kUnwritten;
};

// One call with buffers of max_rows entries prefilled with kUnwritten.
Call callKernel(DispatchFn fn, const DispatchVector& v, int32_t maxRows) {
  Call c;
  const int32_t block = std::max<int32_t>(v.block, 1);
  c.sorted.assign(static_cast<std::size_t>(std::max<int32_t>(maxRows, 0)) + 1, kUnwritten);
  c.blockExpert.assign(static_cast<std::size_t>(std::max<int32_t>(maxRows, 0) / block) + 1,
                       kUnwritten);
  c.status = fn(v.tokens, v.k, v.experts, v.block, v.capacity, v.ids.data(), c.sorted.data(),
                c.blockExpert.data(), &c.rows, maxRows);
  return c;
}

bool untouched(const Call& c) {
  return c.rows == kUnwritten &&
         std::all_of(c.sorted.begin(), c.sorted.end(), [](int32_t x) { return x == kUnwritten; }) &&
         std::all_of(c.blockExpert.begin(), c.blockExpert.end(),
                     [](int32_t x) { return x == kUnwritten; });
}

// What the kernel gets wrong on one vector ("" when nothing).
std::string replayOne(DispatchFn fn, const json& t) {
  const DispatchVector v = dispatchVector(t);
  if (t.at("result") == "invalid") {
    const Call c = callKernel(fn, v, static_cast<int32_t>(v.ids.size()) * 2 + 64);
    if (c.status != MOE_ROUTE_EBADPARAMS) {
      return "status " + std::to_string(c.status) + " outside dispatchValid (want EBADPARAMS)";
    }
    return untouched(c) ? "" : "wrote output with EBADPARAMS";
  }
  const Call c = callKernel(fn, v, v.rows);
  if (c.status != MOE_ROUTE_OK) return "status " + std::to_string(c.status);
  if (c.rows != v.rows) {
    return "rows " + std::to_string(c.rows) + ", Lean " + std::to_string(v.rows);
  }
  const std::vector<int32_t> sorted(c.sorted.begin(), c.sorted.begin() + v.rows);
  if (sorted != v.sortedSlots) return "sorted_slots differ from Lean's";
  const std::size_t blocks = v.blockExpert.size();
  if (!std::equal(v.blockExpert.begin(), v.blockExpert.end(), c.blockExpert.begin())) {
    return "block_expert differs from Lean's";
  }
  if (c.sorted[static_cast<std::size_t>(v.rows)] != kUnwritten ||
      c.blockExpert[blocks] != kUnwritten) {
    return "wrote past rows";
  }
  if (v.rows > 0) {
    const Call shortCall = callKernel(fn, v, v.rows - 1);
    if (shortCall.status != MOE_ROUTE_EOVERFLOW) {
      return "max_rows = rows - 1 gave status " + std::to_string(shortCall.status) +
             " (want EOVERFLOW)";
    }
    if (!untouched(shortCall)) return "wrote output with EOVERFLOW";
  }
  return "";
}

// The vectors a kernel gets wrong, each described.
std::vector<std::string> replayAll(DispatchFn fn) {
  std::vector<std::string> wrong;
  for (const json& t : testsOfType(vectors(), "DispatchTest")) {
    const std::string what = replayOne(fn, t);
    if (!what.empty()) wrong.push_back(describe(t) + ": " + what);
  }
  return wrong;
}

TEST(LeanReplayDispatchKernels, InTreeKernelMatchesLean) {
  const DispatchFn fn = loadDispatch(MOE_EIGEN_DISPATCH);
  ASSERT_NE(fn, nullptr) << MOE_EIGEN_DISPATCH << ": " << dlerror();
  ASSERT_GE(testsOfType(vectors(), "DispatchTest").size(), 200u);
  const std::vector<std::string> wrong = replayAll(fn);
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " vectors wrong, first: " << wrong.front();
}

TEST(LeanReplayDispatchKernels, CorrectTestKernelMatchesLean) {
  // The C reference kernel the fuzzer's tests use as its "correct" variant.
  const std::string path = std::string(MOE_TEST_DISPATCH_DIR) + "/libmoe_dispatch_test_correct.so";
  const DispatchFn fn = loadDispatch(path);
  ASSERT_NE(fn, nullptr) << path << ": " << dlerror();
  const std::vector<std::string> wrong = replayAll(fn);
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " vectors wrong, first: " << wrong.front();
}

class BrokenKernel : public ::testing::TestWithParam<const char*> {};

TEST_P(BrokenKernel, FailsTheReplay) {
  const std::string path =
      std::string(MOE_TEST_DISPATCH_DIR) + "/libmoe_dispatch_test_" + GetParam() + ".so";
  const DispatchFn fn = loadDispatch(path);
  ASSERT_NE(fn, nullptr) << path << ": " << dlerror();
  EXPECT_FALSE(replayAll(fn).empty()) << GetParam() << " passed every DispatchTest";
}

// The broken kernels whose bug a vector of at most 4,096 slots can show (float_index needs
// more than 2^24 slots; segv, oob and hang are hostile kernels for the fuzzer's isolation).
INSTANTIATE_TEST_SUITE_P(LeanReplayDispatchKernels, BrokenKernel,
                         ::testing::Values("last_block_unpadded", "pad_counted", "capacity_last",
                                           "duplicate", "expert_order", "drop_last",
                                           "reverse_slots"));

}  // namespace
}  // namespace moe::lean
