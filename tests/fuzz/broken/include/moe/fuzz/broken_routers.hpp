// Deliberately broken routers, each a bug class seen in production kernels (the
// acceptance list). Test-only (tests/fuzz/broken/, never in the shipped command): the same
// code is built in process (registerBrokenRouters: openRouter("broken-<bug>")) and as shared
// libraries libmoe_broken_<bug>.so that `moe-oracle fuzz --impl` must catch.
#pragma once

#include <cstdint>
#include <string_view>

namespace moe::fuzz {

enum class Bug : int {
  kNone = 0,       // the correct reference the bugs are made from
  kTieHigh,        // exact ties go to the higher index
  kNoMaxSubtract,  // exp(x) instead of exp(x - m): overflows past 88.72
  kNegZeroAbove,   // -0 ranked above +0 (compares bit patterns as signed ints)
  kMaskZero,       // iterative top-k masks chosen experts with 0.0 instead of -inf
  kNoRenorm,       // gates are the probabilities, not renormalised over the kept set
  kSimdTail,       // ignores the last E mod 8 experts (a vector loop with no tail)
  kOobId,          // writes id E instead of -1 in slots past E when k > E
  kGlobalMax,      // subtracts the batch's max instead of each token's
};

struct BugInfo {
  Bug bug;
  std::string_view name;          // "tie-high", ... (library: libmoe_broken_tie_high.so)
  std::string_view expectedKind;  // the violation kind the verdict must report
};

// All bugs except kNone.
const BugInfo* brokenRouterBugs(int* count);
const BugInfo* findBug(std::string_view name);

// The reference router with one bug injected: TorchLean's softmax in binary32 (expf),
// selection on probabilities, ties to the lower index, ids best first.
int routeWithBug(Bug bug, int32_t tokens, int32_t experts, int32_t k, const float* logits,
                 int32_t* ids, float* gates);

// The contract every broken router claims (a correct router's claim): probabilities,
// rank order, batch invariant, exp within 1 ulp; kMaskZero claims selection on logits.
std::string_view brokenContractJSON(Bug bug);

// Makes openRouter know "broken-<bug>" (moe_fuzz_broken; idempotent).
void registerBrokenRouters();

}  // namespace moe::fuzz
