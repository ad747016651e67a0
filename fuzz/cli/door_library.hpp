// What the dispatch and layer doors of the command share: a library named by --impl, read as
// openRouter reads it, and opened with the reason on stderr when it cannot be.
#pragma once

#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "moe/fuzz/router.hpp"

namespace moe::fuzz {

// As openRouter reads a path: relative to the current directory (dlopen would search the
// library path for a bare file name).
inline std::string libraryPath(const std::string& impl) {
  return impl.find('/') == std::string::npos ? "./" + impl : impl;
}

// open(path) for a library --impl names, or nullptr and why on stderr (`abi` is the door).
template <class Open>
auto openLibraryOrSay(const std::string& impl, const char* cmd, std::string_view abi, Open open)
    -> decltype(open(std::string())) {
  if (!isLibraryPath(impl)) {
    std::fprintf(stderr, "moe-oracle %s: --abi %s takes a shared library (a path), not %s\n", cmd,
                 std::string(abi).c_str(), impl.c_str());
    return nullptr;
  }
  try {
    return open(libraryPath(impl));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moe-oracle %s: %s\n", cmd, e.what());
    return nullptr;
  }
}

}  // namespace moe::fuzz
