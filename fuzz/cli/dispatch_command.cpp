#include "dispatch_command.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "door_library.hpp"
#include "moe/fuzz/router.hpp"

namespace moe::fuzz {

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
  return openLibraryOrSay(impl, cmd, kAbiDispatchV1,
                          [&](const std::string& path) { return openDispatcher(path, options); });
}

}  // namespace moe::fuzz
