#include "door_findings.hpp"

#include "moe/fuzz/out_dir.hpp"

#ifndef MOE_ORACLE_VERSION
#define MOE_ORACLE_VERSION "unknown"
#endif

namespace moe::fuzz {

nlohmann::json doorReproducerTest(const std::string& kind, const std::string& tag,
                                  const std::string& certificate, const std::string& impl) {
  return {{"tcId", 1},
          {"comment", certificate},
          {"flags", {kind}},
          {"result", "invalid"},
          {"kind", kind},
          {"tag", tag},
          {"certificate", certificate},
          {"impl", impl}};
}

nlohmann::json doorReproducerFile(const char* algorithm, const char* header,
                                  const std::string& kind, const nlohmann::json& provenance,
                                  const char* group, nlohmann::json test) {
  return {{"algorithm", algorithm},
          {"generatorVersion", std::string("moe-oracle fuzz ") + MOE_ORACLE_VERSION},
          {"header", {header}},
          {"notes", {{kind, "the violation kind the verdict reported (docs/fuzz.md)"}}},
          {"numberOfTests", 1},
          {"provenance", provenance},
          {"schema", "moe_vectors_v1.schema.json"},
          {"testGroups", {{{"type", group}, {"tests", {std::move(test)}}}}}};
}

std::string writeDoorReproducer(
    const RunOptions& o, const std::string& impl, const char* abi, ViolationKind kind,
    const std::string& tag,
    const std::function<nlohmann::json(const nlohmann::json& provenance)>& file) {
  const nlohmann::json provenance = {
      {"tool", "moe-oracle fuzz"}, {"seed", o.seed}, {"impl", impl}, {"abi", abi}};
  return writeReproducer(reproducerPath(o.outDir, impl, kind, tag, "", o.seed), file(provenance));
}

}  // namespace moe::fuzz
