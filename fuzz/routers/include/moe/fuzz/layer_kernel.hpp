// A fused MoE layer under test (moe_layer_v1, impl/include/moe/layer_abi.h) behind one
// interface, as routers are: a function in this process (the test suites' layers), or a
// shared library exporting moe_layer_v1 (and, optionally, moe_layer_v1_contract).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/layer_case.hpp"
#include "moe/fuzz/router.hpp"

struct moe_layer_params_v1;

namespace moe::fuzz {

// What one moe_layer_v1 call produced.
struct LayerOutput {
  int status = 0;
  bool abstained = false;
  std::string abstainReason;
  std::optional<RouteFault> fault;
  std::vector<float> y;  // [T, H]
  bool routed = false;   // ids and gates were asked for and returned
  std::vector<int32_t> ids;
  std::vector<float> gates;
  double seconds = 0;
};

// Reruns the kernel under test on another case (the experiments that name a cause: one
// expert alone, another x with the same routing). Empty, or returning nullopt: no rerun,
// and the verdict names only what the numbers show.
using LayerRerun = std::function<std::optional<LayerOutput>(const LayerCase&)>;

using LayerEntry = int (*)(const moe_layer_params_v1*, const void*, const float*, const void*,
                           const void*, float*, int32_t*, float*);

class LayerKernel {
 public:
  virtual ~LayerKernel() = default;
  const std::string& name() const { return name_; }
  const Contract& contract() const { return contract_; }
  // Calls the layer on the case; withRouting passes ids and gates buffers (else NULL). y,
  // ids and gates are pre-filled with sentinels (a signalling NaN, id -2), so a value the
  // layer forgot to write is judged as written. A status route_abi.h does not define is a
  // bad-status fault; EUNSUPPORTED and the other defined statuses abstain.
  LayerOutput run(const LayerCase& c, bool withRouting) const;
  // The rerun the verdict's experiments use: the same kernel, the same withRouting.
  LayerRerun rerun(bool withRouting) const;

 protected:
  LayerKernel(std::string name, Contract contract)
      : name_(std::move(name)), contract_(std::move(contract)) {}
  // The call with the ABI's buffers (x, w13, w2 as the case's dtype); returns its status.
  virtual int call(const moe_layer_params_v1& p, const void* x, const float* logits,
                   const void* w13, const void* w2, float* y, int32_t* ids, float* gates,
                   RouteFault& fault) const = 0;

 private:
  std::string name_;
  Contract contract_;
};

// A moe_layer_v1 function of this process (a test's layer), with its contract's text.
std::unique_ptr<LayerKernel> layerKernelFromFunction(std::string name, LayerEntry entry,
                                                     std::string_view contractJson);

// A shared library exporting moe_layer_v1, loaded into this process. Throws RouterLoadError
// when it cannot be loaded, lacks moe_layer_v1, or has a contract that does not parse.
std::unique_ptr<LayerKernel> openLayerLibrary(const std::string& path);

// True when the library at `path` exports `symbol` (the door is picked by it).
bool libraryExports(const std::string& path, const char* symbol);

}  // namespace moe::fuzz
