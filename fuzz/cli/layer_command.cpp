#include "layer_command.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "door_library.hpp"
#include "moe/fuzz/router.hpp"

namespace moe::fuzz {

namespace {

// The other doors' symbols a layer library also exports ("" when none).
std::string otherDoors(const std::string& path) {
  std::string found;
  for (const char* symbol : {"moe_route_v1", "moe_route_v2", "moe_dispatch_v1"}) {
    if (libraryExports(path, symbol)) found += (found.empty() ? "" : ", ") + std::string(symbol);
  }
  return found;
}

}  // namespace

bool usesLayerDoor(const std::string& impl, const std::string& abi) {
  if (abi == kAbiLayerV1) return true;
  if (!abi.empty() || !isLibraryPath(impl)) return false;
  const std::string path = libraryPath(impl);
  try {
    return exportsLayer(path) && otherDoors(path).empty();
  } catch (const DoorLoadError&) {
    return false;  // the router door says why it cannot be loaded
  }
}

std::string layerDoorAmbiguity(const std::string& impl, const std::string& abi) {
  if (!abi.empty() || !isLibraryPath(impl)) return "";
  const std::string path = libraryPath(impl);
  try {
    if (!exportsLayer(path)) return "";
    const std::string others = otherDoors(path);
    if (others.empty()) return "";
    return fmt::format(
        "{} exports moe_layer_v1 and {}: say which door with --abi (moe_layer_v1, {})", impl,
        others, others);
  } catch (const DoorLoadError&) {
    return "";
  }
}

std::unique_ptr<LayerKernel> openLayerOrSay(const std::string& impl, const char* cmd,
                                            const DoorOptions& options) {
  return openLibraryOrSay(impl, cmd, kAbiLayerV1,
                          [&](const std::string& path) { return openLayerLibrary(path, options); });
}

}  // namespace moe::fuzz
