// `moe-oracle reproduce`: a libFuzzer routing input -> golden-vector reproducers (the
// campaign's crash triage calls it). Private to the command (command.cpp, reproduce.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace moe::fuzz {

struct ReproduceFlags {
  std::string outDir, input, signature;
  std::vector<std::string> impls;
  std::string abi;         // RouterOptions::abi for the libraries: --abi, else $MOE_ABI
  int32_t maxExperts = 0;  // 0 until addReproduce: $MOE_FUZZ_MAX_EXPERTS or kMaxExperts
};

// Adds the subcommand and its flags to `app`; returns it.
CLI::App* addReproduce(CLI::App& app, ReproduceFlags& flags);
// Exit 0: at least one reproducer written; 1: no router violates on this input; 2: an
// unreadable input or a router that cannot be loaded.
int runReproduce(const ReproduceFlags& flags);

}  // namespace moe::fuzz
