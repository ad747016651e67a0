#include "door_findings.hpp"

#include "moe/fuzz/out_dir.hpp"

#ifndef MOE_ORACLE_VERSION
#define MOE_ORACLE_VERSION "unknown"
#endif

namespace moe::fuzz {

nlohmann::json doorReproducerFile(const DoorFile& door, ViolationKind kind, const std::string& tag,
                                  const std::string& certificate, const std::string& impl,
                                  const nlohmann::json& provenance, const nlohmann::json& fields) {
  const std::string name(kindName(kind));
  nlohmann::json test = {{"tcId", 1},
                         {"comment", certificate},
                         {"flags", {name}},
                         {"result", "invalid"},
                         {"kind", name},
                         {"tag", tag},
                         {"certificate", certificate},
                         {"impl", impl}};
  test.update(fields);
  return {{"algorithm", door.algorithm},
          {"generatorVersion", std::string("moe-oracle fuzz ") + MOE_ORACLE_VERSION},
          {"header", {door.header}},
          {"notes", {{name, "the violation kind the verdict reported (docs/fuzz.md)"}}},
          {"numberOfTests", 1},
          {"provenance", provenance},
          {"schema", "moe_vectors_v1.schema.json"},
          {"testGroups", {{{"type", door.group}, {"tests", {test}}}}}};
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
