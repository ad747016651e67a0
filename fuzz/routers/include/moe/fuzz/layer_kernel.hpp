// A fused MoE layer under test (moe_layer_v1, impl/include/moe/layer_abi.h) behind one
// interface, as routers are: a function in this process (the test suites' layers, the
// Python door), or a shared library exporting moe_layer_v1 (and, optionally,
// moe_layer_v1_contract) called through a door (door.hpp: in a child process by default, so
// that a layer that crashes, hangs or writes out of bounds is a finding, not the end).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/door.hpp"
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
  bool stopped = false;  // the run is ending (a signal): the call was abandoned
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
  // The watchdog of the next calls in seconds (0: a default from the case's size).
  void setCallTimeout(double seconds) const { timeout_ = seconds; }

 protected:
  LayerKernel(std::string name, Contract contract)
      : name_(std::move(name)), contract_(std::move(contract)) {}
  // The call with the ABI's buffers (x, w13, w2 as the case's dtype); returns its status.
  // `timeout`: the watchdog's limit in seconds (a door's; a function ignores it). A fault
  // of the call (crash, hang, a write out of bounds) is set in `fault`; a call abandoned for
  // a signal sets `stopped`; a call that wrote no routing though asked clears `routed`.
  virtual int call(const LayerCase& c, const moe_layer_params_v1& p, const void* x,
                   const float* logits, const void* w13, const void* w2, float* y, int32_t* ids,
                   float* gates, double timeout, RouteFault& fault, bool& stopped,
                   bool& routed) const = 0;

 private:
  std::string name_;
  Contract contract_;
  mutable double timeout_ = 0;
};

// What a layer function (the Python door) answers: its status, whether it wrote ids and
// gates (a function may return y alone though the routing was asked for), a fault of the
// call (an exception), or that the run is ending (Ctrl-C).
struct LayerFnAnswer {
  int status = 0;
  bool routed = true;
  std::optional<RouteFault> fault;
  bool stopped = false;
};
// A layer function of any shape: it gets the case and y, ids, gates (NULL when the routing
// is not asked for).
using LayerFn =
    std::function<LayerFnAnswer(const LayerCase& c, float* y, int32_t* ids, float* gates)>;
std::unique_ptr<LayerKernel> makeFunctionLayer(std::string name, Contract contract, LayerFn fn);

// A moe_layer_v1 function of this process (a test's layer), with its contract's text.
std::unique_ptr<LayerKernel> layerKernelFromFunction(std::string name, LayerEntry entry,
                                                     std::string_view contractJson);

inline constexpr std::string_view kLayerSymbol = "moe_layer_v1";

// True when the library exports moe_layer_v1 (the command picks the layer door by it).
bool exportsLayer(const std::string& path);

// A shared library's moe_layer_v1 through a door (in a child unless options.inProcess).
// Throws DoorLoadError when it cannot be loaded, lacks moe_layer_v1, or has a contract that
// does not parse.
std::unique_ptr<LayerKernel> openLayerLibrary(const std::string& path, const DoorOptions& options);

}  // namespace moe::fuzz
