// A user's shared library as a Router (moe_route_v1 or moe_route_v2), called through a door
// (door.hpp): by default in a child process, a fork server that loads the library once and
// is restarted after it dies, so that the judge in the parent survives whatever the kernel
// does. Each call's ids and gates end at a guard page and start after canary bytes; a
// watchdog bounds the call. A crash (any signal or exit), a hang, a write past or before ids
// or gates, become RouteFaults: findings, not the end of the run. With
// RouterOptions::inProcess, the library runs in this process instead.
#pragma once

#include <memory>
#include <string>

#include "moe/fuzz/router.hpp"

namespace moe::fuzz {

// The name a shared library's kernel goes by, in process or isolated, whichever its door:
// the contract's "name", else the file's stem without "lib".
std::string libraryRouterName(const std::string& path, const Contract& contract);

// Loads `path` (an existing file: openRouter checks), in a child unless options.inProcess,
// picks its entry point (options.abi, chooseAbi) and reads its contract. Throws
// RouterLoadError when the library cannot be loaded, lacks the entry point, crashes while
// loading, or has a contract that does not parse.
std::unique_ptr<Router> openLibraryRouter(const std::string& path, const RouterOptions& options);

}  // namespace moe::fuzz
