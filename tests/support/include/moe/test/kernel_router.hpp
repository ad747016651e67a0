// A kernel of the program under test as a router for EXPECT_ROUTE_MATCH: a function with
// moe_route_v1's signature (route_abi.h) called in this process, with the contract its
// moe_route_v1_contract() would return. A kernel repository's GoogleTest suite judges its own
// function this way without building it as a shared library.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "moe/fuzz/router.hpp"

namespace moe::test {

// moe_route_v1's signature: tokens x experts logits in, tokens x k ids and gates out, a
// MOE_ROUTE_* status back.
using RouteV1Function = int (*)(int32_t tokens, int32_t experts, int32_t k, const float* logits,
                                int32_t* ids, float* gates);

// `contractJson` is read as the command reads a library's contract (docs/contract.schema.json);
// a bad one throws std::invalid_argument naming the problem. "name" defaults to `name`.
std::unique_ptr<fuzz::Router> kernelRouter(std::string name, RouteV1Function kernel,
                                           std::string_view contractJson = "{}");

}  // namespace moe::test
