// kernelRouter: a moe_route_v1-shaped function behind the fuzzer's Router interface.
#include "moe/test/kernel_router.hpp"

#include <stdexcept>
#include <utility>

#include "moe/fuzz/contract.hpp"

namespace moe::test {

namespace {

class KernelRouter final : public fuzz::Router {
 public:
  KernelRouter(std::string name, fuzz::Contract contract, RouteV1Function kernel)
      : Router(std::move(name), std::move(contract)), kernel_(kernel) {}

 protected:
  int call(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
           float* gates, int32_t) const override {
    return kernel_(tokens, experts, k, logits, ids, gates);
  }

 private:
  RouteV1Function kernel_;
};

}  // namespace

std::unique_ptr<fuzz::Router> kernelRouter(std::string name, RouteV1Function kernel,
                                           std::string_view contractJson) {
  if (kernel == nullptr) throw std::invalid_argument("kernelRouter: the kernel is a null pointer");
  fuzz::Contract contract = fuzz::parseContract(contractJson);
  if (contract.v2()) {
    throw std::invalid_argument(
        "kernelRouter: a moe_route_v1 function with a moe_route_v2 contract (\"abi\")");
  }
  if (contract.name.empty()) contract.name = std::move(name);
  std::string shown = contract.name;
  return std::make_unique<KernelRouter>(std::move(shown), std::move(contract), kernel);
}

}  // namespace moe::test
