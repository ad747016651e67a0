#include "dispatch_command.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "moe/fuzz/router.hpp"

namespace moe::fuzz {

namespace {

// As openRouter reads a path: relative to the current directory (dlopen would search the
// library path for a bare file name).
std::string libraryPath(const std::string& impl) {
  return impl.find('/') == std::string::npos ? "./" + impl : impl;
}

}  // namespace

bool usesDispatchDoor(const std::string& impl, const std::string& abi) {
  if (abi == kAbiDispatchV1) return true;
  if (!abi.empty() || !isLibraryPath(impl)) return false;
  const std::string path = libraryPath(impl);
  try {
    return exportsDispatch(path) && !libraryExports(path, "moe_route_v1") &&
           !libraryExports(path, "moe_route_v2");
  } catch (const DoorLoadError&) {
    return false;  // the router door says why it cannot be loaded
  }
}

std::unique_ptr<Dispatcher> openDispatcherOrSay(const std::string& impl, const char* cmd,
                                                const DoorOptions& options) {
  if (!isLibraryPath(impl)) {
    std::fprintf(stderr,
                 "moe-oracle %s: --abi moe_dispatch_v1 takes a shared library (a path), not %s\n",
                 cmd, impl.c_str());
    return nullptr;
  }
  try {
    return openDispatcher(libraryPath(impl), options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moe-oracle %s: %s\n", cmd, e.what());
    return nullptr;
  }
}

}  // namespace moe::fuzz
