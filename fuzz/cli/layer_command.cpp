#include "layer_command.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <iostream>

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

int runLayerFuzz(const LayerFuzzArgs& a) {
  std::unique_ptr<LayerKernel> kernel = openLayerOrSay(a.impl, "fuzz", a.door);
  if (!kernel) return 2;
  LayerCampaignOptions o;
  try {
    o.draw = layerDrawFor(kernel->contract(), a.tokens, a.k, a.experts, a.hidden, a.intermediate);
    if (!a.family.empty()) {
      o.draw.familySet = familiesOfRecipes(a.family, "--family");
      o.draw.families = true;
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "moe-oracle fuzz: %s\n", e.what());
    return 2;
  }
  o.seconds = a.seconds;
  o.seed = a.seed;
  o.outDir = a.out;
  o.keepGoing = a.keepGoing;
  o.shrinkSeconds = a.shrinkSeconds;
  o.minTokens = a.minTokens;
  o.stop = a.door.stop;
  std::fprintf(stderr, "moe-oracle fuzz %s (moe_layer_v1): seed %llu, %g s%s; contract %s\n",
               kernel->name().c_str(), static_cast<unsigned long long>(o.seed), a.seconds,
               a.keepGoing ? ", keep going" : "", contractToJSON(kernel->contract()).c_str());
  const LayerSummary s = runLayerCampaign(*kernel, o);
  for (const auto& f : s.findings) std::fputs(f.report.c_str(), stderr);
  std::fputs(layerSummaryText(s).c_str(), stderr);
  if (a.json) {
    std::cout << layerSummaryJSON(s).dump() << "\n";
  } else {
    for (const auto& f : s.findings) {
      if (!f.reproducer.empty()) std::cout << "reproducer: " << f.reproducer << "\n";
      std::cout << f.signature << "\n";
    }
  }
  if (a.door.stop && *a.door.stop) return 128 + *a.door.stop;
  return s.exitCode();
}

}  // namespace moe::fuzz
