#include "dispatch_command.hpp"

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

int runDispatchFuzz(const DispatchFuzzArgs& a) {
  std::unique_ptr<Dispatcher> d = openDispatcherOrSay(a.impl, "fuzz", a.door);
  if (!d) return 2;
  DispatchCampaignOptions o;
  try {
    o.draw.shapes =
        dispatchShapesFor(d->contract().shapes, a.tokens, a.k, a.experts, a.block, a.capacity);
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
  std::fprintf(stderr, "moe-oracle fuzz %s (moe_dispatch_v1): seed %llu, %g s%s; contract %s\n",
               d->name().c_str(), static_cast<unsigned long long>(o.seed), a.seconds,
               a.keepGoing ? ", keep going" : "",
               dispatchContractJSON(d->contract()).dump().c_str());
  const DispatchSummary s = runDispatchCampaign(*d, o);
  for (const auto& f : s.findings) std::fputs(f.report.c_str(), stderr);
  std::fputs(dispatchSummaryText(s).c_str(), stderr);
  if (a.json) {
    std::cout << dispatchSummaryJSON(s).dump() << "\n";
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
