#!/usr/bin/env python3
"""Unit tests of the campaign runner's parts that need no fuzzer: log parsing, crash
signatures, atomic files and their modes, state/resume decisions, dedup in the report,
the report page's sections (without a browser), the SVG axes.

usage: campaign_units_test.py REPO
"""

import contextlib
import io
import json
import os
import stat
import sys
import tempfile
import unittest

REPO = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "."
sys.path.insert(0, os.path.join(REPO, "fuzz", "nightly"))

import atomic_io  # noqa: E402
import campaign_state  # noqa: E402
import crash_triage  # noqa: E402
import libfuzzer_log  # noqa: E402
import report_html  # noqa: E402
import report_model  # noqa: E402
import router_fuzz  # noqa: E402
import run_campaign  # noqa: E402
import svg_plot  # noqa: E402


class LibFuzzerLogTest(unittest.TestCase):
    def test_plain_status_line(self):
        s = libfuzzer_log.parse_status_line(
            "#4096\tpulse  cov: 120 ft: 340 corp: 25/1034b lim: 43 exec/s: 2048 rss: 41Mb")
        self.assertEqual(s, {"execs": 4096, "cov": 120, "ft": 340, "corp": 25, "exec_s": 2048,
                             "rss_mb": 41})

    def test_fork_status_line(self):
        s = libfuzzer_log.parse_status_line(
            "#52000: cov: 130 ft: 388 corp: 31 exec/s 5200 oom/timeout/crash: 0/1/3 time: 10s "
            "job: 4 dft_time: 0")
        self.assertEqual((s["execs"], s["ft"], s["corp"], s["exec_s"], s["time"]),
                         (52000, 388, 31, 5200, 10))
        self.assertEqual((s["ooms"], s["timeouts"], s["crashes"]), (0, 1, 3))

    def test_other_lines_are_ignored(self):
        for line in ("INFO: Seed: 1", "==1== ERROR: AddressSanitizer: heap-buffer-overflow",
                     "#0 0x5555 in main foo.c:3", "", "#12 bogus", "\xff\xfe"):
            self.assertIsNone(libfuzzer_log.parse_status_line(line), line)

    def test_summary_uses_wall_time_and_done_line(self):
        log = libfuzzer_log.LogSummary()
        log.feed("#10\tINITED cov: 3 ft: 4 corp: 1/1b exec/s: 0 rss: 30Mb", 0.5)
        log.feed("#2000\tNEW    cov: 5 ft: 9 corp: 2/3b lim: 4 exec/s: 1000 rss: 31Mb", 2.0)
        log.feed("Done 4000 runs in 4 second(s)", 4.0)
        s = log.summary(4.0)
        self.assertEqual((s["execs"], s["execs_per_s"], s["features"]), (4000, 1000.0, 9))
        self.assertEqual(s["series"], [[0.5, 10, 4, 3, 1], [2.0, 2000, 9, 5, 2]])

    def test_series_is_thinned_keeping_ends(self):
        log = libfuzzer_log.LogSummary()
        for i in range(1000):
            log.feed(f"#{i + 1}\tpulse cov: 1 ft: {i} corp: 1/1b exec/s: 1", float(i))
        series = log.summary(1000.0)["series"]
        self.assertEqual(len(series), 200)
        self.assertEqual((series[0][2], series[-1][2]), (0, 999))


class SignatureTest(unittest.TestCase):
    def test_moe_oracle_line_wins(self):
        text = ("...\nmoe-oracle: avx2-probs-kept-set-E13-k3\n"
                "SUMMARY: AddressSanitizer: heap-buffer-overflow a.cc:3:1 in f\n")
        self.assertEqual(crash_triage.signature_from_output("fuzz_route", "crash", text),
                         "moe-oracle: avx2-probs-kept-set-E13-k3")

    def test_asan_summary(self):
        text = "SUMMARY: AddressSanitizer: heap-buffer-overflow /x/route.cc:41:7 in moe::pick\n"
        self.assertEqual(crash_triage.signature_from_output("fuzz_route", "crash", text),
                         "fuzz_route-address-heap-buffer-overflow-moe::pick")

    def test_ubsan_runtime_error(self):
        text = "/x/src/gates.cc:88:12: runtime error: signed integer overflow\n"
        self.assertEqual(crash_triage.signature_from_output("fuzz_gates", "crash", text),
                         "fuzz_gates-ubsan-gates.cc:88")

    def test_timeout_and_oom_and_unknown(self):
        sig = crash_triage.signature_from_output
        self.assertEqual(sig("fuzz_layer", "timeout", "ALARM"), "fuzz_layer-timeout")
        self.assertEqual(sig("fuzz_vectors", "crash", "==9== ERROR: libFuzzer: out-of-memory"),
                         "fuzz_vectors-oom")
        self.assertEqual(sig("t", "crash", "==7== ERROR: libFuzzer: fuzz target exited"),
                         "t-exited")
        self.assertEqual(sig("t", "crash", "nothing useful"), "t-crash-unclassified")


class AtomicIoTest(unittest.TestCase):
    def test_round_trip_and_corrupt_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.json")
            atomic_io.write_json(path, {"a": [1, 2]})
            self.assertEqual(atomic_io.read_json(path), {"a": [1, 2]})
            self.assertEqual(os.listdir(d), ["x.json"])  # no temp file left behind
            with open(path, "w") as f:
                f.write('{"a": [1,')  # as if torn
            self.assertEqual(atomic_io.read_json(path, "fresh"), "fresh")
            self.assertEqual(atomic_io.read_json(os.path.join(d, "missing"), 7), 7)

    def test_files_are_world_readable_whatever_the_umask(self):
        old = os.umask(0o077)
        try:
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "out")
                atomic_io.write_text(os.path.join(out, "report.html"), "<p>")
                self.assertEqual(stat.S_IMODE(os.stat(os.path.join(out, "report.html"))
                                              .st_mode), 0o644)  # mkstemp alone gives 0600
                os.makedirs(os.path.join(out, "logs"))
                os.makedirs(os.path.join(out, "work", "tmp"))
                for name in ("logs/a.log", "work/tmp/x"):
                    with open(os.path.join(out, name), "w") as f:
                        f.write("x")
                atomic_io.make_readable(out, skip=("work",))

                def mode(rel):
                    return stat.S_IMODE(os.stat(os.path.join(out, rel)).st_mode)

                self.assertEqual((mode(""), mode("logs"), mode("logs/a.log")),
                                 (0o755, 0o755, 0o644))
                self.assertEqual(mode("work/tmp/x"), 0o600)  # scratch space is left alone
        finally:
            os.umask(old)


class StateTest(unittest.TestCase):
    def test_unfinished_campaign_is_resumed_finished_one_is_not(self):
        with tempfile.TemporaryDirectory() as d:
            plan = ["router:a", "libfuzzer:asan:t"]
            s, resumed = campaign_state.load_or_start(d, budget_s=10, seed=3, plan=plan)
            self.assertFalse(resumed)
            campaign_state.remember_signature(s, "moe-oracle: a-x-E1-k1")
            campaign_state.finish_step(d, s, "router:a", {"router": "a"})
            again, resumed = campaign_state.load_or_start(d, budget_s=10, seed=9, plan=plan)
            self.assertTrue(resumed)
            self.assertEqual((again["seed"], list(again["steps"])), (3, ["router:a"]))
            campaign_state.complete(d, again, {"violations": 1})
            fresh, resumed = campaign_state.load_or_start(d, budget_s=10, seed=9, plan=plan)
            self.assertFalse(resumed)
            self.assertEqual(fresh["steps"], {})
            self.assertIn("moe-oracle: a-x-E1-k1", fresh["known_signatures"])
            self.assertFalse(campaign_state.remember_signature(fresh, "moe-oracle: a-x-E1-k1"))
            self.assertTrue(campaign_state.remember_signature(fresh, "moe-oracle: b-y-E2-k1"))

    def test_changed_plan_starts_afresh(self):
        with tempfile.TemporaryDirectory() as d:
            s, _ = campaign_state.load_or_start(d, budget_s=10, seed=3, plan=["router:a"])
            campaign_state.save(d, s)
            _, resumed = campaign_state.load_or_start(d, budget_s=10, seed=3, plan=["router:b"])
            self.assertFalse(resumed)


class PlanTest(unittest.TestCase):
    FAKE = os.path.join(REPO, "tests", "fuzz_campaign", "fake_moe_oracle.py")

    def test_every_router_then_each_distinct_v2_kernel(self):
        a = run_campaign.parse_args(["--moe-oracle", self.FAKE, "--targets", "none"])
        self.assertEqual(list(run_campaign.make_plan(a)),
                         ["router:scalar-probs", "router:scalar-logits",
                          "router:avx512-logits", "router:scalar-probs@moe_route_v2"])

    def test_routers_flag_names_the_abi_explicitly(self):
        a = run_campaign.parse_args(["--moe-oracle", self.FAKE, "--targets", "none",
                                     "--routers", "avx512-logits,scalar-probs@moe_route_v2"])
        self.assertEqual(list(run_campaign.make_plan(a)),
                         ["router:avx512-logits", "router:scalar-probs@moe_route_v2"])

    def test_a_misspelt_router_is_an_error_not_an_unavailable_step(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out")
            for routers, named in (("scalar-prob", "'scalar-prob'"),
                                   ("scalar-probs@moe_route_v3", "'scalar-probs@moe_route_v3'"),
                                   ("./nowhere.so", "./nowhere.so: no such library")):
                with self.subTest(routers=routers):
                    err = io.StringIO()
                    with contextlib.redirect_stderr(err):
                        rc = run_campaign.main(["--moe-oracle", self.FAKE, "--targets", "none",
                                                "--out", out, "--routers", routers])
                    self.assertEqual(rc, 2)
                    self.assertIn(named, err.getvalue())
            self.assertFalse(os.path.exists(out), "nothing is written for a usage error")

    def test_in_tree_dispatch_libraries_beside_moe_oracle_come_after_the_routers(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "bin"))
            os.makedirs(os.path.join(d, "lib"))
            fake = os.path.join(d, "bin", "moe-oracle")
            os.symlink(self.FAKE, fake)
            lib = os.path.join(d, "lib", "libmoe_dispatch_eigen.so")
            open(lib, "w").close()
            # The tests' broken kernels, built into the same folder, are not the campaign's.
            open(os.path.join(d, "lib", "libmoe_dispatch_test_segv.so"), "w").close()
            a = run_campaign.parse_args(["--moe-oracle", fake, "--targets", "none"])
            plan = list(run_campaign.make_plan(a))
            self.assertEqual([p for p in plan if p.startswith("dispatch:")], [f"dispatch:{lib}"])
            self.assertEqual(plan[-1], f"dispatch:{lib}")
            self.assertTrue(all(p.startswith("router:") for p in plan[:-1]), plan)
            # Part 1's share is split over the routers and the dispatch kernels alike.
            a.budget = 50
            self.assertEqual(run_campaign.budgets(a, run_campaign.make_plan(a)),
                             (50 // len(plan), 0))
            a = run_campaign.parse_args(["--moe-oracle", fake, "--targets", "none",
                                         "--dispatchers", "none"])
            self.assertNotIn(f"dispatch:{lib}", run_campaign.make_plan(a))

    def test_a_missing_dispatch_library_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                rc = run_campaign.main(["--moe-oracle", self.FAKE, "--targets", "none",
                                        "--out", os.path.join(d, "out"),
                                        "--dispatchers", "./nowhere.so"])
            self.assertEqual(rc, 2)
            self.assertIn("nowhere.so: no such library", err.getvalue())

    def test_split_router(self):
        self.assertEqual(router_fuzz.split_router("a@moe_route_v2"), ("a", "moe_route_v2"))
        self.assertEqual(router_fuzz.split_router("a"), ("a", None))
        self.assertEqual(router_fuzz.split_router("/l/x.so@moe_dispatch_v1"),
                         ("/l/x.so", "moe_dispatch_v1"))
        # An @ in a library's path that names no ABI is part of the path.
        self.assertEqual(router_fuzz.split_router("./lib@2.so"), ("./lib@2.so", None))


class ReportModelTest(unittest.TestCase):
    def test_violations_are_deduplicated_by_signature(self):
        state = {"campaign_id": "C2", "started": "t", "budget_s": 5, "seed": 1,
                 "known_signatures": {"sig-a": "C1", "sig-b": "C2"},
                 "plan": ["router:r", "libfuzzer:asan:t", "libfuzzer:fast:t"], "steps": {
                     "router:r": {"router": "r", "cases": 5, "verdicts": {
                         "exact": 4, "acceptable": 0, "violation": 1},
                         "violations": [{"signature": "sig-a", "kind": "k"}]},
                     "libfuzzer:asan:t": {"target": "t", "build": "asan", "execs": 100,
                                          "added": 2, "crashes": [
                                              {"signature": "sig-b", "count": 3,
                                               "input_bytes": 9, "input": "big"}]},
                     "libfuzzer:fast:t": {"target": "t", "build": "fast", "execs": 50,
                                          "crashes": [{"signature": "sig-b", "count": 2,
                                                       "input_bytes": 4, "input": "small"}]}}}
        r = report_model.build(state, interrupted=False)
        self.assertEqual([v["signature"] for v in r["violations"]], ["sig-b", "sig-a"])
        b = r["violations"][0]
        self.assertEqual((b["count"], b["input"], b["new"]), (5, "small", True))
        self.assertFalse(r["violations"][1]["new"])
        self.assertEqual(r["totals"]["libfuzzer_execs"], 150)
        self.assertEqual(r["totals"]["verdicts"], {"exact": 4, "acceptable": 0, "violation": 1})
        self.assertEqual((r["totals"]["new_violations"], r["pending"]), (1, []))
        json.dumps(r)  # the report must be serialisable as it is

    def test_a_dispatch_kernel_has_its_entry_totals_and_table(self):
        state = {"campaign_id": "C3", "started": "t", "budget_s": 5, "seed": 1,
                 "known_signatures": {"sig-d": "C3"},
                 "plan": ["router:r", "dispatch:/b/lib/libmoe_dispatch_eigen.so"], "steps": {
                     "router:r": {"router": "r", "cases": 5, "status": "clean"},
                     "dispatch:/b/lib/libmoe_dispatch_eigen.so": {
                         "dispatcher": "/b/lib/libmoe_dispatch_eigen.so@moe_dispatch_v1",
                         "status": "violation", "cases": 40, "tokens": 9000, "slots": 70000,
                         "coverage": {"slots": {"65536-16777215": 1, "1-65535": 39},
                                      "outside_domain": 3},
                         "violations": [{"signature": "sig-d", "kind": "bad-padding"}]}}}
        r = report_model.build(state, interrupted=False)
        self.assertEqual(len(r["dispatchers"]), 1)
        self.assertEqual((r["totals"]["dispatch_cases"], r["totals"]["dispatch_slots"]),
                         (40, 70000))
        self.assertEqual([v["signature"] for v in r["violations"]], ["sig-d"])
        self.assertEqual(r["totals"]["router_cases"], 5)  # the dispatch cases are apart
        page = report_html.render(r)
        self.assertIn("libmoe_dispatch_eigen.so@moe_dispatch_v1", page)
        self.assertLess(page.index("1-65535: 39"), page.index("65536-16777215: 1"))
        self.assertIn("<th>slots judged</th>", page)


class ReportPageTest(unittest.TestCase):
    """The page's sections, checked on the HTML itself (report_screenshot_test.py checks
    the same page in Chromium, where Chromium is installed)."""

    def page(self):
        with open(os.path.join(REPO, "tests", "fuzz_campaign", "data", "sample_report.json"),
                  encoding="utf-8") as f:
            return report_html.render(json.load(f))

    def test_every_verdict_and_reason_is_explained_in_one_line(self):
        page = self.page()
        for term in ("exact", "acceptable", "near-tie-probabilities", "near-tie-order",
                     "tie-order", "nonreal-row", "violation"):
            self.assertRegex(page, f"<dt>{term}</dt><dd>[^<\n]+</dd>", term)

    def test_logs_reproducers_library_time_and_next_steps(self):
        page = self.page()
        for want in ('href="logs/router-scalar-logits.log"',
                     'href="logs/libfuzzer-asan-fuzz_gates.log"',
                     'href="reproducers/avx512-probs-gate-budget-E13-k3.json"',
                     "fuzz_external fuzzed <code>/src/moe-oracle/build/lib/"
                     "libmoe_route_auto.so</code>", "11 / 11.8", "60 / 61.2",
                     "cc -O2 -shared -fPIC -o libmine.so mine.c",
                     "build/bin/moe-oracle fuzz --impl ./libmine.so --seconds 60"):
            self.assertIn(want, page)
        self.assertGreater(page.index('id="next-steps"'), page.index("libFuzzer targets"))

    def test_coverage_bands_in_numeric_order(self):
        self.assertEqual(sorted(["65+", "9-64", "0", "2-8", "1"], key=report_html._band_key),
                         ["0", "1", "2-8", "9-64", "65+"])
        self.assertEqual(sorted(["k>E", "k<E", "k=E"], key=report_html._band_key),
                         ["k<E", "k=E", "k>E"])
        page = self.page()
        bands = ["257-1024", "1025-4096"]
        self.assertLess(page.index(f"<th>{bands[0]}</th>"), page.index(f"<th>{bands[1]}</th>"))
        self.assertIn("Abstained cases are not judged", page)

    def test_coverage_shares_in_percent_beside_the_bands(self):
        page = self.page()
        self.assertIn("<h3>shares of the tokens judged</h3>", page)
        for want in ("<th>model shapes</th>", "<th>non-real rows</th>",
                     "<th>adversarial logits</th>", "87.1%", "0.1%", "0.9%", "47.3%", "52.7%",
                     ">37<"):
            self.assertIn(want, page)
        # Shares come first: where the tokens went, then the bands.
        self.assertLess(page.index("shares of the tokens judged"),
                        page.index("tokens judged by E (experts)"))

    def test_a_report_without_the_new_fields_still_renders(self):
        r = {"campaign_id": "C", "started": "t", "complete": False, "interrupted": True,
             "budget_s": 1, "seed": 1, "pending": ["router:a"], "violations": [],
             "totals": {"new_violations": 0, "violations": 0, "router_cases": 0,
                        "verdicts": {"exact": 0, "acceptable": 0, "violation": 0},
                        "libfuzzer_execs": 0, "corpus_added": 0},
             "routers": [{"router": "a", "status": "clean"}],
             "targets": [{"target": "fuzz_external", "build": "fast", "status": "skipped",
                          "message": "no moe_route_v1 library"}]}
        page = report_html.render(r)
        self.assertIn("fuzz_external was skipped", page)
        self.assertIn("No router reported its shape coverage", page)
        self.assertIn("No dispatch kernel was run", page)


class SvgAxisTest(unittest.TestCase):
    def test_axis_is_round_steps_covering_the_data(self):
        for value, top, step in ((0, 1, 1), (1, 1, 0.2), (7, 8, 2), (15, 15, 5), (60, 60, 20),
                                 (61, 80, 20), (1234, 1250, 250), (20780, 25000, 5000)):
            self.assertEqual(svg_plot.axis(value), (top, step), value)
            self.assertLessEqual(top / step, 5)
            self.assertGreaterEqual(top, value)


if __name__ == "__main__":
    unittest.main(verbosity=1)
