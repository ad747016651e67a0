// The broken routers in process, by name ("broken-<bug>"), for the suites and the test
// build of the command (moe-oracle-broken): registered with openRouter, never part of the
// shipped moe-oracle.
#include <fmt/format.h>

#include <memory>
#include <string_view>

#include "moe/fuzz/broken_routers.hpp"
#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/router.hpp"

namespace moe::fuzz {

namespace {

class BrokenRouter final : public Router {
 public:
  explicit BrokenRouter(const BugInfo& info)
      : Router(fmt::format("broken-{}", info.name), parseContract(brokenContractJSON(info.bug))),
        bug_(info.bug) {}

 protected:
  int call(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
           float* gates, int32_t) const override {
    return routeWithBug(bug_, tokens, experts, k, logits, ids, gates);
  }

 private:
  Bug bug_;
};

std::unique_ptr<Router> openBroken(std::string_view name) {
  if (name.rfind("broken-", 0) != 0) return nullptr;
  const BugInfo* bug = findBug(name.substr(7));
  return bug ? std::make_unique<BrokenRouter>(*bug) : nullptr;
}

}  // namespace

void registerBrokenRouters() {
  static const bool registered = (registerRouterOpener(&openBroken), true);
  (void)registered;
}

}  // namespace moe::fuzz
