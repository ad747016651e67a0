// The line a fuzz run starts with on stderr, before its first case: what runs, with which
// seed and time, on which contract, judged how. The command prints it, and so does the
// Python door when its progress is on, from this one place so that the two say the same.
#pragma once

#include <string>
#include <string_view>

#include "moe/fuzz/campaign.hpp"
#include "moe/fuzz/dispatcher.hpp"
#include "moe/fuzz/fuzz_request.hpp"
#include "moe/fuzz/layer_kernel.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/run_loop.hpp"

namespace moe::fuzz {

// A router's run (moe_route_v1, moe_route_v2): its shapes, contract and the verdict's
// configuration in force (the request's knobs over the contract's).
std::string routerRunHeader(const Router& router, const CampaignOptions& o,
                            const FuzzRequest& request);
// A dispatcher's run (moe_dispatch_v1) and a layer's (moe_layer_v1).
std::string dispatchRunHeader(const Dispatcher& d, const RunOptions& o);
std::string layerRunHeader(const LayerKernel& kernel, const RunOptions& o);

}  // namespace moe::fuzz
