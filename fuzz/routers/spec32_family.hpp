// The binary32 evaluation of the routing family's spec as a moe_route_v2 router ("spec32"
// opened with --abi moe_route_v2): the reference every verdict budget is derived from.
#pragma once

#include <memory>

#include "moe/fuzz/router.hpp"

namespace moe::fuzz {

std::unique_ptr<Router> makeSpec32FamilyRouter();

}  // namespace moe::fuzz
