#include "moe/fuzz/dispatcher.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "moe/layer_abi.h"

namespace moe::fuzz {

namespace {

// In the door's child: the integers are tokens, k, experts, block, capacity, max_rows; the
// buffers ids, sorted_slots, block_expert, rows.
int invokeDispatch(void* symbol, const int64_t* s, void* const* b) {
  auto fn = reinterpret_cast<decltype(&moe_dispatch_v1)>(symbol);
  return fn(static_cast<int32_t>(s[0]), static_cast<int32_t>(s[1]), static_cast<int32_t>(s[2]),
            static_cast<int32_t>(s[3]), static_cast<int32_t>(s[4]),
            static_cast<const int32_t*>(b[0]), static_cast<int32_t*>(b[1]),
            static_cast<int32_t*>(b[2]), static_cast<int32_t*>(b[3]), static_cast<int32_t>(s[5]));
}

class LibraryDispatcher final : public Dispatcher {
 public:
  LibraryDispatcher(std::string name, DispatchContract contract, std::unique_ptr<Door> door)
      : Dispatcher(std::move(name), std::move(contract)), door_(std::move(door)) {}

 protected:
  DoorCall call(const DispatchCase& c, std::span<DoorBuffer> buffers,
                double timeout) const override {
    const int64_t scalars[] = {c.tokens, c.k, c.experts, c.block, c.capacity, c.maxRows};
    return door_->call(scalars, buffers, timeout);
  }

 private:
  std::unique_ptr<Door> door_;
};

class FunctionDispatcher final : public Dispatcher {
 public:
  FunctionDispatcher(std::string name, DispatchContract contract, DispatchFn fn)
      : Dispatcher(std::move(name), std::move(contract)), fn_(std::move(fn)) {}

 protected:
  DoorCall call(const DispatchCase& c, std::span<DoorBuffer> buffers, double) const override {
    auto at = [&](size_t i) {
      return buffers[i].null ? nullptr : static_cast<int32_t*>(buffers[i].data);
    };
    DoorCall out;
    out.status = fn_(c, at(1), at(2), at(3));
    return out;
  }

 private:
  DispatchFn fn_;
};

}  // namespace

double dispatchWatchdogSeconds(const DispatchCase& c) {
  const double slots = c.slots() > 0 && !c.nullIds ? static_cast<double>(c.ids.size()) : 0;
  const double naive = slots * std::max(1, c.experts);
  return 60.0 + 2e-8 * naive + 5e-8 * (slots + static_cast<double>(c.sortedEntries()));
}

DispatchOutput Dispatcher::run(const DispatchCase& c) const {
  DispatchOutput out;
  out.sortedSlots.assign(c.sortedEntries(), kDispatchUnwritten);
  out.blockExpert.assign(c.blockExpertEntries(), kDispatchUnwritten);
  std::vector<int32_t> ids = c.ids;  // the kernel's copy: what it does to it is its own
  DoorBuffer buffers[] = {
      {"ids", ids.data(), ids.size() * 4, false, c.nullIds},
      {"sorted_slots", out.sortedSlots.data(), out.sortedSlots.size() * 4, true, c.nullSortedSlots},
      {"block_expert", out.blockExpert.data(), out.blockExpert.size() * 4, true, c.nullBlockExpert},
      {"rows", &out.rows, 4, true, c.nullRows},
  };
  const DoorCall r = call(c, buffers, timeout_ > 0 ? timeout_ : dispatchWatchdogSeconds(c));
  out.status = r.status;
  out.fault = r.fault;
  out.stopped = r.stopped;
  out.seconds = r.seconds;
  return out;
}

bool exportsDispatch(const std::string& path) {
  return libraryExports(path, std::string(kDispatchSymbol));
}

std::unique_ptr<Dispatcher> openDispatcher(const std::string& path, const DoorOptions& options) {
  DoorSpec spec;
  spec.symbol = std::string(kDispatchSymbol);
  spec.contractSymbol = spec.symbol + "_contract";
  spec.invoke = invokeDispatch;
  std::unique_ptr<Door> door = openDoor(path, spec, options);
  DispatchContract contract;
  if (door->contractText()) {
    try {
      contract = parseDispatchContract(*door->contractText());
    } catch (const std::invalid_argument& e) {
      throw DoorLoadError(fmt::format("dispatch library {}: {}", path, e.what()));
    }
  }
  std::string name = contract.name;
  if (name.empty()) name = std::filesystem::path(path).stem().string();
  if (name.rfind("lib", 0) == 0) name = name.substr(3);
  return std::make_unique<LibraryDispatcher>(name, contract, std::move(door));
}

std::unique_ptr<Dispatcher> makeFunctionDispatcher(std::string name, DispatchContract contract,
                                                   DispatchFn fn) {
  return std::make_unique<FunctionDispatcher>(std::move(name), std::move(contract), std::move(fn));
}

}  // namespace moe::fuzz
