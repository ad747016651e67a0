// The library under test in a child process: a fork server that loads the
// library once and serves calls, restarted after it dies, so that the judge in the parent
// survives whatever the kernel does. Each call's output buffers end at a guard page and
// start after canary bytes; a watchdog bounds the call. A crash (any signal or exit), a hang,
// a write past or before ids or gates, become RouteFaults: findings, not the end of the run.
#pragma once

#include <memory>
#include <string>

#include "moe/fuzz/router.hpp"

namespace moe::fuzz {

// The name a shared library's router goes by, in process or isolated: the contract's
// "name", else the file's stem without "lib".
std::string libraryRouterName(const std::string& path, const Contract& contract);

// Starts the child, loads `path` (an existing file: openRouter checks) there and reads its
// contract. Throws RouterLoadError when the library cannot be loaded, lacks moe_route_v1, crashes
// while loading, or has a contract that does not parse.
std::unique_ptr<Router> openIsolatedLibrary(const std::string& path, const RouterOptions& options);

}  // namespace moe::fuzz
