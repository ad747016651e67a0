#include "moe/fuzz/run_header.hpp"

#include <fmt/format.h>

#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/dispatch_contract.hpp"
#include "moe/fuzz/report.hpp"

namespace moe::fuzz {

namespace {

std::string kernelRunHeader(const std::string& name, std::string_view abi, const RunOptions& o,
                            const std::string& contract) {
  return fmt::format("moe-oracle fuzz {} ({}): seed {}, {:g} s{}; contract {}\n", name, abi, o.seed,
                     o.seconds, o.keepGoing ? ", keep going" : "", contract);
}

}  // namespace

std::string routerRunHeader(const Router& router, const CampaignOptions& o,
                            const FuzzRequest& request) {
  return fmt::format(
      "moe-oracle fuzz {}: seed {}, {:g} s, shapes {}{}; contract {}; judged with: {}\n",
      router.name(), o.seed, o.seconds, o.shapes.text(), o.keepGoing ? ", keep going" : "",
      contractToJSON(router.contract()),
      verdictConfigText(verdictConfigJSON(request.verdictConfig(), effectiveContract(router, o))));
}

std::string dispatchRunHeader(const Dispatcher& d, const RunOptions& o) {
  return kernelRunHeader(d.name(), kAbiDispatchV1, o, dispatchContractJSON(d.contract()).dump());
}

std::string layerRunHeader(const LayerKernel& kernel, const RunOptions& o) {
  return kernelRunHeader(kernel.name(), kAbiLayerV1, o, contractToJSON(kernel.contract()));
}

}  // namespace moe::fuzz
