// The dispatch door of the command (docs/fuzz.md "The dispatch door"): which door a library
// goes through, and replay / explain for moe_dispatch_v1. command.cpp calls these.
#pragma once

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

}  // namespace moe::fuzz
