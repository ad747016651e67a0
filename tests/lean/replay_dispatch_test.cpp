// Replay of DispatchTest against the oracle's dispatch (oracle/dispatch.hpp): dispatchKept,
// dispatchSpec's sortedSlots and blockExpert, and rows equal Lean's exactly; a case outside
// Lean's dispatchValid (block 0, an id of E or more) must be refused with SpecError.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <moe/oracle/dispatch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dispatch_vectors.hpp"
#include "lean_vectors.hpp"

namespace moe::lean {
namespace {

namespace oracle = moe::oracle;

TEST(LeanReplayDispatch, OracleMatchesLeanOnEveryValidCase) {
  std::size_t valid = 0;
  for (const json& t : testsOfType(vectors(), "DispatchTest")) {
    if (t.at("result") != "valid") continue;
    ++valid;
    const DispatchVector v = dispatchVector(t);
    const std::vector<std::int64_t> ids(v.ids.begin(), v.ids.end());
    const std::optional<std::size_t> C = oracleCapacity(v.capacity);
    std::vector<std::size_t> kept;
    for (const oracle::DispatchSlot& d : oracle::dispatchKept(C, ids)) kept.push_back(d.slot);
    EXPECT_EQ(kept, v.kept) << describe(t) << ": dispatchKept";
    const oracle::DispatchLayout layout = oracle::dispatchSpec(v.experts, v.block, C, ids);
    EXPECT_EQ(layout.sortedSlots, asSizes(v.sortedSlots)) << describe(t) << ": sortedSlots";
    EXPECT_EQ(layout.blockExpert, asSizes(v.blockExpert)) << describe(t) << ": blockExpert";
    EXPECT_EQ(layout.rows(), static_cast<std::size_t>(v.rows)) << describe(t) << ": rows";
  }
  EXPECT_GE(valid, 200u);
}

TEST(LeanReplayDispatch, OracleRefusesWhatLeanCallsInvalid) {
  std::size_t invalid = 0;
  for (const json& t : testsOfType(vectors(), "DispatchTest")) {
    if (t.at("result") != "invalid") continue;
    ++invalid;
    const DispatchVector v = dispatchVector(t);
    ASSERT_FALSE(v.brokenRules.empty()) << describe(t);
    const std::vector<std::int64_t> ids(v.ids.begin(), v.ids.end());
    EXPECT_THROW(oracle::dispatchSpec(v.experts, v.block, oracleCapacity(v.capacity), ids),
                 oracle::SpecError)
        << describe(t);
  }
  EXPECT_GE(invalid, 4u);
}

TEST(LeanReplayDispatch, PadToIsTheLeastMultipleOfTheBlock) {
  // padTo of each expert's kept count, read from Lean's layout: every expert's run in
  // block_expert is padTo(block, its kept slots) / block blocks long.
  std::size_t checked = 0;
  for (const json& t : testsOfType(vectors(), "DispatchTest")) {
    if (t.at("result") != "valid") continue;
    const DispatchVector v = dispatchVector(t);
    std::vector<std::size_t> keptPerExpert(static_cast<std::size_t>(v.experts), 0);
    for (std::size_t s : v.kept) ++keptPerExpert[static_cast<std::size_t>(v.ids[s])];
    std::vector<std::size_t> blocksPerExpert(keptPerExpert.size(), 0);
    for (std::int32_t e : v.blockExpert) ++blocksPerExpert[static_cast<std::size_t>(e)];
    for (std::size_t e = 0; e < keptPerExpert.size(); ++e) {
      const std::size_t block = static_cast<std::size_t>(v.block);
      EXPECT_EQ(oracle::padTo(block, keptPerExpert[e]), blocksPerExpert[e] * block)
          << describe(t) << ": expert " << e;
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000u);
}

TEST(LeanReplayDispatch, EdgeCasesPresent) {
  // The cases the dispatch's definitions turn on, each present in the file.
  std::map<std::string, std::size_t> flags;
  std::size_t maxExperts = 0, maxSlots = 0;
  for (const json& t : testsOfType(vectors(), "DispatchTest")) {
    for (const auto& f : t.at("flags")) ++flags[f.get<std::string>()];
    maxExperts = std::max(maxExperts, t.at("experts").get<std::size_t>());
    maxSlots = std::max(maxSlots, t.at("ids").size());
  }
  for (const char* flag :
       {"EmptySlot", "CapacityZero", "NoCapacity", "SlotDropped", "BlockOne", "Padding",
        "ExpertWithoutSlots", "OneExpertTakesAll", "LargeDispatch", "InvalidParams"}) {
    EXPECT_GE(flags[flag], 1u) << "no DispatchTest flagged " << flag;
  }
  EXPECT_GE(maxExperts, 256u);
  EXPECT_GE(maxSlots, 3000u);
}

}  // namespace
}  // namespace moe::lean
