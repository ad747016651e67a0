// fuzz_external: any router library named by the environment variable MOE_IMPL=path.so
// (differential, vs the oracle), through the same verdict as the built-in routers; through
// moe_route_v2 when the library exports it, unless MOE_ABI=moe_route_v1 says otherwise. The
// input's case follows the library's contract (routerCase, as `moe-oracle reproduce`
// decodes it): the byte layout for moe_route_v1, the routing family's draw, within the
// contract's families and shapes, for a library fuzzed through moe_route_v2.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "moe/fuzz/decision_coverage.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/router_case.hpp"
#include "target_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moe::fuzz;
  static const int32_t maxExperts = maxExpertsFromEnv();
  static const std::unique_ptr<Router> router = [] {
    const char* path = std::getenv("MOE_IMPL");
    if (!path || !*path) {
      std::fprintf(stderr, "fuzz_external: set MOE_IMPL=path/to/router.so\n");
      std::exit(2);
    }
    try {
      // In process: libFuzzer itself catches and reports the library's crashes.
      RouterOptions options;
      options.inProcess = true;
      options.abi = abiFromEnv();  // MOE_ABI=moe_route_v1: a v2 library through its v1
      std::unique_ptr<Router> r = openRouter(path, options);
      if (r->contract().v2()) {
        inputShapeSpace(r->contract(), maxExperts);  // a contract with no shape here: exit 2
        gFamilyStreamInput = true;
      }
      return r;
    } catch (const RouterLoadError& e) {
      std::fprintf(stderr, "fuzz_external: %s\n", e.what());
      std::exit(2);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "fuzz_external: %s\n", e.what());
      std::exit(2);
    }
  }();
  static Judge judge;
  const Case c = routerCase(std::span<const uint8_t>(data, size), router->contract(), maxExperts);
  const LevelCounters before = judge.levels();
  CaseResult r = judge.run(*router, c);
  markVerdictSignals(0, verdictSignals(before, judge.levels(), r), r.tokens.size());
  markCaseShape(c.experts, c.k);
  if (r.violation) reportAndAbort(mismatchReport(*router, c, r));
  return 0;
}
