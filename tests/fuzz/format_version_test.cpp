// The versions a file carries: a reproducer's "formatVersion" (the vector layout) and a
// contract's "schema_version" (docs/contract.schema.json). A file without them is version 1
// (every file written before the fields existed has that layout); a later version is refused
// with its number named and `replay` exits 2, rather than reading fields whose meaning may
// have changed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/vectors.hpp"
#include "run_oracle.hpp"

namespace moe::fuzz {
namespace {

using testing::freshDir;
using testing::readJsonFile;
using testing::runOracle;

// A reproducer of the corpus, written before "formatVersion" existed: a recorded output the
// judge still finds to be the recorded violation (its router is not built in, so replay only
// re-judges the output).
const std::string kOldReproducer =
    std::string(MOE_CORPUS_DIR) + "/reproducers/moe_broken_oob_id-id-out-of-range-E6-k7-seed3.json";

std::string writeJSON(const std::string& dir, const std::string& name, const nlohmann::json& j) {
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name;
  std::ofstream(path) << j.dump(2);
  return path;
}

std::string layoutError(const nlohmann::json& file) {
  try {
    checkVectorLayout(file);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(FormatVersion, TheCorpusReproducerPredatesTheField) {
  ASSERT_FALSE(readJsonFile(kOldReproducer).contains("formatVersion"))
      << "the old-file test needs a file without the field";
}

TEST(FormatVersion, AbsentOrKnownVersionsAreRead) {
  nlohmann::json file = readJsonFile(kOldReproducer);
  EXPECT_EQ(layoutError(file), "");
  file["formatVersion"] = kVectorFormatVersion;
  EXPECT_EQ(layoutError(file), "");
}

TEST(FormatVersion, ALaterVersionIsRefusedNamingBoth) {
  nlohmann::json file = readJsonFile(kOldReproducer);
  file["formatVersion"] = kVectorFormatVersion + 1;
  const std::string why = layoutError(file);
  EXPECT_NE(why.find("format version 2 is newer than this moe-oracle reads (up to 1)"),
            std::string::npos)
      << why;
}

TEST(FormatVersion, AVersionThatIsNotAWholeNumberIsRefused) {
  for (const nlohmann::json& bad : {nlohmann::json("1"), nlohmann::json(0), nlohmann::json(-3),
                                    nlohmann::json(1.5), nlohmann::json(nullptr)}) {
    nlohmann::json file = readJsonFile(kOldReproducer);
    file["formatVersion"] = bad;
    EXPECT_NE(layoutError(file).find("\"formatVersion\" must be a whole number >= 1"),
              std::string::npos)
        << bad.dump();
  }
}

// The command end to end: the old file replays (exit 0), a later version exits 2 saying why.
TEST(FormatVersion, ReplayReadsOldFilesAndRefusesLaterOnes) {
  const auto old = runOracle("replay " + kOldReproducer, /*withStderr=*/true);
  EXPECT_EQ(old.exitCode, 0) << old.out;
  EXPECT_NE(old.out.find("1 passed, 0 failed"), std::string::npos) << old.out;

  const std::string dir = freshDir("format-version");
  nlohmann::json file = readJsonFile(kOldReproducer);
  file["formatVersion"] = kVectorFormatVersion;
  const auto same = runOracle("replay " + writeJSON(dir, "v1.json", file), true);
  EXPECT_EQ(same.exitCode, 0) << same.out;

  file["formatVersion"] = 7;
  const auto later = runOracle("replay " + writeJSON(dir, "v7.json", file), true);
  EXPECT_EQ(later.exitCode, 2) << later.out;
  EXPECT_NE(later.out.find("format version 7 is newer than this moe-oracle reads"),
            std::string::npos)
      << later.out;
  const auto explained = runOracle("explain " + writeJSON(dir, "v7.json", file), true);
  EXPECT_EQ(explained.exitCode, 2) << explained.out;
}

TEST(ContractSchemaVersion, AbsentOrOneIsReadAndALaterOneRefused) {
  EXPECT_NO_THROW(parseContract(R"({"tie_order": "any"})"));
  EXPECT_NO_THROW(parseContract(R"({"schema_version": 1, "tie_order": "any"})"));
  try {
    parseContract(R"({"schema_version": 2, "tie_order": "any"})");
    ADD_FAILURE() << "schema_version 2 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "\"schema_version\" 2 is not the contract schema this moe-oracle reads "
                  "(version 1)"),
              std::string::npos)
        << e.what();
  }
}

// replay parses the contract a reproducer recorded: one of a later schema is unreadable
// input (exit 2), not a router's failure.
TEST(ContractSchemaVersion, ReplayRefusesARecordedContractOfALaterSchema) {
  nlohmann::json file = readJsonFile(kOldReproducer);
  file["testGroups"][0]["tests"][0]["contract"]["schema_version"] = 2;
  const auto r = runOracle("replay " + writeJSON(freshDir("schema-version"), "c2.json", file),
                           /*withStderr=*/true);
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_NE(r.out.find("\"schema_version\" 2"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace moe::fuzz
