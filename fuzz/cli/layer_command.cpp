#include "layer_command.hpp"

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
  if (!isLibraryPath(impl)) {
    std::fprintf(stderr,
                 "moe-oracle %s: --abi moe_layer_v1 takes a shared library (a path), not %s\n", cmd,
                 impl.c_str());
    return nullptr;
  }
  try {
    return openLayerLibrary(libraryPath(impl), options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moe-oracle %s: %s\n", cmd, e.what());
    return nullptr;
  }
}

}  // namespace moe::fuzz
