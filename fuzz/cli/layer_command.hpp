// The layer door of the command (docs/fuzz.md "The layer door"): which libraries go through
// it, and fuzz / replay / explain for moe_layer_v1. command.cpp calls these.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "moe/fuzz/layer_campaign.hpp"
#include "moe/fuzz/layer_kernel.hpp"

namespace moe::fuzz {

// True when --impl goes through the layer door: --abi moe_layer_v1, or (no --abi) a library
// that exports moe_layer_v1 and no moe_route_v1 / moe_route_v2 / moe_dispatch_v1.
bool usesLayerDoor(const std::string& impl, const std::string& abi);
// Without --abi, a library that exports moe_layer_v1 beside another door's symbol: the
// command asks which (a message for stderr), or "" when the door is clear.
std::string layerDoorAmbiguity(const std::string& impl, const std::string& abi);

// Opens the library's moe_layer_v1, or says why not on stderr and returns nullptr.
std::unique_ptr<LayerKernel> openLayerOrSay(const std::string& impl, const char* cmd,
                                            const DoorOptions& options);

struct LayerFuzzArgs {
  std::string impl, out;
  double seconds = 10, shrinkSeconds = 10;
  uint64_t seed = 0, minTokens = 1000;
  bool json = false, keepGoing = false;
  std::string tokens, k, experts, hidden, intermediate, family;
  DoorOptions door;
};

// `moe-oracle fuzz` on a fused layer: the exit codes of the router door.
int runLayerFuzz(const LayerFuzzArgs& args);

}  // namespace moe::fuzz
