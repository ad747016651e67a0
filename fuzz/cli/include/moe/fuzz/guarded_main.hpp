// The main of the project's command-line programs: whatever escapes `run` (an allocation
// failure while the command line is set up, say) is a clear message and exit 2, the
// programs' usage-error status, never std::terminate.
#pragma once

#include <cstdio>
#include <exception>

namespace moe::fuzz {

inline int guardedMain(const char* program, int (*run)(int, char**), int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: unexpected error\n", program);
  }
  return 2;
}

}  // namespace moe::fuzz
