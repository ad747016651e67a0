// The dispatch door of the command (docs/fuzz.md "The dispatch door"): which door a library
// goes through, and fuzz / replay / explain for moe_dispatch_v1. command.cpp calls these.
#pragma once

#include <csignal>
#include <cstdint>
#include <memory>
#include <string>

#include "moe/fuzz/dispatch_campaign.hpp"
#include "moe/fuzz/dispatcher.hpp"

namespace moe::fuzz {

// True when --impl goes through the dispatch door: --abi moe_dispatch_v1, or (no --abi) a
// library that exports moe_dispatch_v1 and no moe_route_v1 / moe_route_v2.
bool usesDispatchDoor(const std::string& impl, const std::string& abi);

// Opens the library's moe_dispatch_v1, or says why not on stderr and returns nullptr.
std::unique_ptr<Dispatcher> openDispatcherOrSay(const std::string& impl, const char* cmd,
                                                const DoorOptions& options);

struct DispatchFuzzArgs {
  std::string impl, out;
  double seconds = 10, shrinkSeconds = 10;
  uint64_t seed = 0, minTokens = 1000;
  bool json = false, keepGoing = false;
  std::string tokens, k, experts, block, capacity;
  DoorOptions door;
};

// `moe-oracle fuzz` on a dispatch kernel: the exit codes of the router door.
int runDispatchFuzz(const DispatchFuzzArgs& args);

}  // namespace moe::fuzz
