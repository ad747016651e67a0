// The consumer's kernel: top-k on the logits (exact ties to the lower index), then the
// softmax over the kept ones, with moe_route_v1's signature and statuses (moe/route_abi.h).
#pragma once

#include <cstdint>

int my_topk_route(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
                  float* gates);

// What the kernel promises (docs/contract.schema.json): read by the test's kernelRouter.
inline constexpr const char* kMyTopkContract =
    R"({"name": "my_topk", "selects_on": "logits", "slot_order": "rank", "tie_order": "lowest-index"})";
