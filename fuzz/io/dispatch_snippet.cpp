#include "moe/fuzz/dispatch_snippet.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "moe/fuzz/dispatch_case.hpp"
#include "moe/fuzz/dispatch_contract.hpp"
#include "moe/fuzz/dispatch_verdict.hpp"
#include "moe/oracle/dispatch.hpp"
#include "snippet_parts.hpp"

namespace moe::fuzz {

namespace {

struct DispatchFinding {
  int64_t tcId = 0;
  std::string impl, kind, certificate;
  DispatchContract contract;
  DispatchCase c;
  nlohmann::json output;  // as recorded: status, rows, sorted_slots, block_expert, fault
};

DispatchFinding readFinding(const nlohmann::json& t) {
  DispatchFinding f;
  f.tcId = t.value("tcId", int64_t{0});
  f.impl = t.value("impl", std::string("the dispatcher"));
  f.kind = t.at("kind").get<std::string>();
  f.certificate = t.value("certificate", std::string());
  f.contract = parseDispatchContractJSON(t.at("contract"));
  f.c = dispatchCaseFromJSON(t.at("case"));
  f.output = t.at("output");
  if (!f.output.is_object()) throw std::invalid_argument("\"output\" must be an object");
  return f;
}

oracle::DispatchLayout specOf(const DispatchCase& c) {
  const std::vector<int64_t> ids(c.ids.begin(), c.ids.end());
  const auto C = c.capacity < 0 ? std::nullopt
                                : std::optional<std::size_t>(static_cast<std::size_t>(c.capacity));
  return oracle::dispatchSpec(static_cast<std::size_t>(c.experts),
                              static_cast<std::size_t>(c.block), C, ids);
}

template <class T>
std::string listOf(const std::vector<T>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(v[i]);
    if (i % 16 == 15 && i + 1 < v.size()) out += "\n   ";
  }
  return out;
}

std::vector<int32_t> recordedList(const nlohmann::json& output, const char* key) {
  if (!output.contains(key) || !output[key].is_array()) return {};
  return output[key].get<std::vector<int32_t>>();
}

// Runs of equal ids as (value, length): a large case, shrunk, is mostly empty slots (-1).
std::vector<std::pair<int32_t, size_t>> runsOf(const std::vector<int32_t>& v) {
  std::vector<std::pair<int32_t, size_t>> runs;
  for (int32_t id : v) {
    if (runs.empty() || runs.back().first != id) runs.emplace_back(id, 0);
    ++runs.back().second;
  }
  return runs;
}

// The ids as Python: a list, or, for a case of more than kDispatchPlainIds slots, the runs
// of 16 or more equal ids as np.full blocks.
std::string pythonIds(const std::vector<int32_t>& ids) {
  if (ids.size() <= kDispatchPlainIds) {
    return fmt::format("np.array([{}], dtype=np.int32)", listOf(ids));
  }
  std::string parts;
  std::vector<int32_t> loose;
  auto flush = [&] {
    if (loose.empty()) return;
    parts += fmt::format("    np.array([{}], dtype=np.int32),\n", listOf(loose));
    loose.clear();
  };
  for (const auto& [id, n] : runsOf(ids)) {
    if (n < 16) {
      loose.insert(loose.end(), n, id);
      continue;
    }
    flush();
    parts += fmt::format("    np.full({}, {}, dtype=np.int32),\n", n, id);
  }
  flush();
  return "np.concatenate([\n" + parts + "])";
}

void pythonSnippet(fmt::memory_buffer& out, const DispatchFinding& f) {
  const DispatchCase& c = f.c;
  if (!dueStatuses(c).empty()) {
    throw std::invalid_argument(fmt::format(
        "tcId {}: the case lies outside moe_dispatch_v1's domain (a status finding), which a "
        "Python function is never given: --as c calls moe_dispatch_v1 on it",
        f.tcId));
  }
  const oracle::DispatchLayout spec = specOf(c);
  auto to = std::back_inserter(out);
  fmt::format_to(to,
                 "# moe-oracle: a dispatch finding (moe_dispatch_v1) of {}: {}\n{}\n"
                 "#\n# Runs with NumPy alone. It checks the answer recorded when the finding "
                 "was made; set\n# `dispatch` to your function, dispatch(ids, k, experts, "
                 "block, capacity) ->\n# (sorted_slots, block_expert, rows), to check it on "
                 "the case instead (ids an int32\n# NumPy array [tokens, k]: "
                 "torch.from_numpy(ids) makes it a tensor).\nimport numpy as np\n\n"
                 "dispatch = None\n\n",
                 f.impl, f.kind, commented(f.certificate, "# "));
  fmt::format_to(to,
                 "tokens, k, experts, block, capacity = {}, {}, {}, {}, {}\n"
                 "ids = {}.reshape(tokens, k)\n"
                 "within_expert_order = \"{}\"\n\n",
                 c.tokens, c.k, c.experts, c.block, c.capacity, pythonIds(c.ids),
                 withinExpertOrderName(f.contract.order));
  fmt::format_to(to,
                 "# The spec's answer: each expert's kept slots (t * k + j) in slot order, "
                 "experts in\n# increasing order, each list padded with tokens * k = {} to a "
                 "multiple of block.\nspec_sorted_slots = [{}]\nspec_block_expert = [{}]\n"
                 "spec_rows = {}\n\n",
                 c.ids.size(), listOf(spec.sortedSlots), listOf(spec.blockExpert), spec.rows());
  if (f.output.contains("fault")) {
    fmt::format_to(to, "# What {} did when the finding was made:\n{}\nrecorded = None\n\n\n",
                   f.impl, commented(f.output["fault"].value("detail", std::string()), "#   "));
  } else {
    fmt::format_to(
        to, "# What {} returned when the finding was made.\nrecorded = ([{}], [{}], {})\n\n\n",
        f.impl, listOf(recordedList(f.output, "sorted_slots")),
        listOf(recordedList(f.output, "block_expert")), f.output.value("rows", int64_t{0}));
  }
  fmt::format_to(to, "{}",
                 "def as_list(x):\n"
                 "    \"\"\"An array or tensor (on any device) as a list of ints.\"\"\"\n"
                 "    x = x.cpu() if hasattr(x, \"cpu\") else x\n"
                 "    return [int(v) for v in np.asarray(x).reshape(-1)]\n\n\n"
                 "def canonical(slots):\n"
                 "    \"\"\"Each expert's list sorted when the order within an expert is "
                 "free.\"\"\"\n"
                 "    if within_expert_order == \"slot\":\n"
                 "        return slots\n"
                 "    out, start = [], 0\n"
                 "    for e in sorted(set(spec_block_expert)):\n"
                 "        n = spec_block_expert.count(e) * block\n"
                 "        out += sorted(slots[start:start + n])\n"
                 "        start += n\n"
                 "    return out + slots[start:]\n\n\n"
                 "if dispatch is not None:\n"
                 "    sorted_slots, block_expert, rows = dispatch(ids, k, experts, block, "
                 "capacity)\n"
                 "    sorted_slots, block_expert, rows = as_list(sorted_slots), "
                 "as_list(block_expert), int(rows)\n"
                 "elif recorded is None:\n"
                 "    raise SystemExit(\"the recorded call did not return: set `dispatch` to "
                 "rerun it\")\n"
                 "else:\n"
                 "    sorted_slots, block_expert, rows = recorded\n"
                 "blocks = -(-rows // block) if rows > 0 else 0\n"
                 "got = (rows, canonical(sorted_slots[:max(rows, 0)]), block_expert[:blocks])\n"
                 "want = (spec_rows, canonical(spec_sorted_slots), spec_block_expert)\n"
                 "print(\"dispatch (rows, sorted_slots, block_expert):\", got)\n"
                 "print(\"spec     (rows, sorted_slots, block_expert):\", want)\n"
                 "assert got == want, \"the dispatch differs from the spec's\"\n");
}

// A C array of at least one entry (C99 has no empty arrays).
std::string cArray(const char* name, const std::vector<int32_t>& v, bool isConst) {
  return fmt::format("  static {}int32_t {}[{}] = {{{}}};\n", isConst ? "const " : "", name,
                     std::max<size_t>(v.size(), 1), v.empty() ? "0" : listOf(v));
}

// The ids as C: an array, or, for a case of more than kDispatchPlainIds slots, filled run
// by run.
std::string cIds(const std::vector<int32_t>& ids) {
  if (ids.size() <= kDispatchPlainIds) return cArray("ids", ids, true);
  std::string out =
      fmt::format("  static int32_t ids[{}];\n  {{\n    int64_t at = 0, n;\n", ids.size());
  for (const auto& [id, n] : runsOf(ids)) {
    if (n < 16) {
      for (size_t r = 0; r < n; ++r) out += fmt::format("    ids[at++] = {};\n", id);
    } else {
      out += fmt::format("    for (n = 0; n < {}; ++n) ids[at++] = {};\n", n, id);
    }
  }
  return out + "  }\n";
}

void cSnippet(fmt::memory_buffer& out, const DispatchFinding& f, const std::string& suffix) {
  const DispatchCase& c = f.c;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "/* {}: {}\n{} */\nstatic int finding{}(void) {{\n", f.impl, f.kind,
                 commented(f.certificate, " * "), suffix);
  fmt::format_to(to,
                 "  const int32_t tokens = {}, k = {}, experts = {}, block = {}, capacity = {}, "
                 "max_rows = {};\n",
                 c.tokens, c.k, c.experts, c.block, c.capacity, c.maxRows);
  fmt::format_to(to, "{}", cIds(c.ids));
  fmt::format_to(to, "  static int32_t sorted_slots[{}], block_expert[{}];\n  int32_t rows = -1;\n",
                 std::max<size_t>(c.sortedEntries(), 1),
                 std::max<size_t>(c.blockExpertEntries(), 1));
  fmt::format_to(to,
                 "  const int status = moe_dispatch_v1(tokens, k, experts, block, capacity, {}, "
                 "{}, {}, {}, max_rows);\n",
                 c.nullIds ? "NULL" : "ids", c.nullSortedSlots ? "NULL" : "sorted_slots",
                 c.nullBlockExpert ? "NULL" : "block_expert", c.nullRows ? "NULL" : "&rows");
  const std::vector<DueStatus> due = dueStatuses(c);
  if (!due.empty()) {
    fmt::format_to(to,
                   "  /* Outside the domain: {} */\n"
                   "  printf(\"moe_dispatch_v1 returned %d; layer_abi.h asks for {}\\n\", "
                   "status);\n  return status == 0 && {};\n}}\n",
                   dueReasons(due), dueNames(due), noneOfDue(due));
    return;
  }
  const oracle::DispatchLayout spec = specOf(c);
  const std::vector<int32_t> specSlots(spec.sortedSlots.begin(), spec.sortedSlots.end());
  const std::vector<int32_t> specBlocks(spec.blockExpert.begin(), spec.blockExpert.end());
  fmt::format_to(to, "{}{}", cArray("spec_sorted_slots", specSlots, true),
                 cArray("spec_block_expert", specBlocks, true));
  fmt::format_to(to,
                 "  const int32_t spec_rows = {};\n"
                 "  int32_t i, differs = status != 0 || rows != spec_rows;\n"
                 "  for (i = 0; !differs && i < spec_rows / block; ++i) differs = "
                 "block_expert[i] != spec_block_expert[i];\n",
                 spec.rows());
  if (f.contract.order == WithinExpertOrder::kAny) {
    fmt::format_to(to, "{}",
                   "  /* within_expert_order \"any\": each expert's list sorted before it is "
                   "compared. */\n"
                   "  for (i = 0; !differs && i < spec_rows / block;) {\n"
                   "    int32_t end = i;\n"
                   "    while (end < spec_rows / block && spec_block_expert[end] == "
                   "spec_block_expert[i]) ++end;\n"
                   "    sort_slots(sorted_slots + i * block, (end - i) * block);\n"
                   "    i = end;\n"
                   "  }\n");
  }
  fmt::format_to(to, "{}",
                 "  for (i = 0; !differs && i < spec_rows; ++i) differs = sorted_slots[i] != "
                 "spec_sorted_slots[i];\n"
                 "  printf(\"moe_dispatch_v1: status %d, rows %d; the spec's rows: %d\\n\", "
                 "status, rows, spec_rows);\n"
                 "  for (i = 0; i < spec_rows && i < max_rows; ++i) printf(\"  position %d: "
                 "%d (spec %d)\\n\", i, sorted_slots[i], spec_sorted_slots[i]);\n"
                 "  printf(\"%s\\n\", differs ? \"differs from the spec\" : \"the spec's\");\n"
                 "  return differs;\n}\n");
}

}  // namespace

std::string dispatchSnippet(const nlohmann::json& file, std::string_view language) {
  const auto findings = snippetFindings(file, "DispatchReproducer", readFinding);
  if (language == "python") {
    return pythonSnippets(
        findings, [](fmt::memory_buffer& out, const DispatchFinding& f) { pythonSnippet(out, f); });
  }
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out),
                 "/* moe-oracle: {} dispatch finding(s) as C99. Build it with the dispatcher's "
                 "library and\n * moe-oracle's impl/include: cc -std=c99 -I impl/include "
                 "repro.c -L. -lyours\n * main calls moe_dispatch_v1 on each case, prints its "
                 "answer beside the spec's and\n * returns 1 when they differ. */\n"
                 "#include <stdint.h>\n#include <stdio.h>\n\n"
                 "#include \"moe/layer_abi.h\" /* moe_dispatch_v1 */\n",
                 findings.size());
  const bool anyOrder = std::any_of(findings.begin(), findings.end(), [](const auto& f) {
    return f.contract.order == WithinExpertOrder::kAny;
  });
  if (anyOrder) {
    fmt::format_to(std::back_inserter(out), "{}",
                   "\n/* Insertion sort: the padding value tokens * k, the largest, goes last. */\n"
                   "static void sort_slots(int32_t *v, int32_t n) {\n"
                   "  int32_t i, j;\n"
                   "  for (i = 1; i < n; ++i) {\n"
                   "    const int32_t x = v[i];\n"
                   "    for (j = i; j > 0 && v[j - 1] > x; --j) v[j] = v[j - 1];\n"
                   "    v[j] = x;\n"
                   "  }\n"
                   "}\n");
  }
  cFindingsAndMain(out, findings, cSnippet);
  return fmt::to_string(out);
}

}  // namespace moe::fuzz
