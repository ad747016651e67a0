#!/usr/bin/env python3
"""Renders the campaign report from a fixed input and opens it in headless Chromium.

Checks that the page is self-contained (nothing fetched), that Chromium's DOM holds the
numbers of the fixed input, and that the screenshot is a real 1200x1600 PNG with
content (not a blank page). Exits 77 (ctest SKIP_RETURN_CODE) when Chromium is absent:
scripts/setup-browser installs it.

usage: report_screenshot_test.py REPO [--keep SCREENSHOT.png]
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77
# Strings the fixed input (data/sample_report.json) must put on the page, as rendered.
EXPECTED = [
    "562,579",  # router cases, all routers together
    "559,099",  # exact verdicts
    "3,479",  # acceptable verdicts
    "10,500,000",  # libFuzzer executions
    "41,000.0",  # fuzz_route's execs/s in the plain build
    "moe-oracle: avx512-probs-gate-budget-E13-k3",  # the new violation's signature
    'href="reproducers/avx512-probs-gate-budget-E13-k3.json"',  # link to its reproducer
    "build/bin/moe-oracle replay reproducers/avx512-probs-gate-budget-E13-k3.json",
    "fuzz_vectors: coverage features over time",  # one plot per target
    "not available on this CPU",
    # Links to each step's log (router, libFuzzer run, merge, the crash's rerun).
    'href="logs/router-scalar-probs.log"',
    'href="logs/libfuzzer-fast-fuzz_route.log"',
    'href="logs/merge-asan-fuzz_gates.log"',
    'href="logs/rerun-crash-5f1e.min.log"',
    'href="reproducers/scalar-logits-tie-E5-k2.json"',  # the router violation's reproducer
    # What each verdict and acceptable reason means, one line each.
    'id="verdict-legend"',
    "exact", "acceptable", "near-tie-probabilities", "near-tie-order", "tie-order",
    "nonreal-row",
    # The time each router got, and each libFuzzer run: given / taken.
    "11 / 11.8",
    # Shape coverage: per band of E, k and T, and what was abstained.
    'id="coverage"',
    "tokens judged by E (experts)", "tokens judged by k (kept per token)",
    "tokens judged by T (tokens per case)", "1025-4096", "4096-65536",
    "MOE_ROUTE_EUNSUPPORTED (4): 12", "Abstained cases are not judged",
    # The library fuzz_external fuzzed, and where new corpus inputs went.
    "fuzz_external fuzzed", "/src/moe-oracle/build/lib/libmoe_route_auto.so",
    "this campaign's corpus/",
    # Next steps: fuzz your own library.
    'id="next-steps"',
    "cc -O2 -shared -fPIC -o libmine.so mine.c",
    "build/bin/moe-oracle fuzz --impl ./libmine.so --seconds 60",
    "docs/design.md",
]
# Each legend term must be followed by its explanation (a <dt> then a <dd>).
LEGEND_TERMS = ["exact", "acceptable", "near-tie-probabilities", "near-tie-order",
                "tie-order", "nonreal-row", "violation"]
FORBIDDEN = ["http://", "https://", "<script", "<link", "src="]


def find_chromium():
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def chromium_cmd(chromium, profile):
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={profile}", "--hide-scrollbars"]


def png_facts(path):
    """(width, height, distinct byte values in the image data) of a PNG, or raises."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG signature")
    width, height = struct.unpack(">II", data[16:24])
    idat, pos = b"", 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


def fail(msg):
    print(f"FAIL: {msg}")
    return 1


def main(argv):
    repo = os.path.abspath(argv[0])
    keep = argv[argv.index("--keep") + 1] if "--keep" in argv else None
    chromium = find_chromium()
    if not chromium:
        print("SKIP: chromium is not installed (run scripts/setup-browser to install it)")
        return SKIP
    with tempfile.TemporaryDirectory(prefix="moe-report-") as tmp:
        html = os.path.join(tmp, "report.html")
        subprocess.run([sys.executable, os.path.join(repo, "fuzz/nightly/render_report.py"),
                        os.path.join(repo, "tests/fuzz_campaign/data/sample_report.json"), "-o",
                        html], check=True, stdout=subprocess.DEVNULL)
        with open(html, encoding="utf-8") as f:
            page = f.read()
        for bad in FORBIDDEN:
            if bad in page:
                return fail(f"report.html is not self-contained: it contains {bad!r}")
        base = chromium_cmd(chromium, os.path.join(tmp, "profile"))
        dom = subprocess.run(base + ["--dump-dom", "file://" + html], capture_output=True,
                             text=True, timeout=120).stdout
        for want in EXPECTED:
            if want not in dom:
                return fail(f"Chromium's DOM lacks {want!r}")
        for term in LEGEND_TERMS:
            if f"<dt>{term}</dt><dd>" not in dom:
                return fail(f"the verdict legend does not explain {term!r}")
        # The sections come in reading order, next steps last.
        order = [dom.find(f'id="{i}"') for i in ("verdict-legend", "coverage", "next-steps")]
        if order != sorted(order) or dom.rfind("<h2") != order[-1] - 4:
            return fail(f"sections out of order (legend, coverage, next steps last): {order}")
        shot = os.path.join(tmp, "shot.png")
        subprocess.run(base + [f"--screenshot={shot}", "--window-size=1200,1600",
                               "file://" + html], capture_output=True, timeout=120)
        if not os.path.isfile(shot):
            return fail("Chromium wrote no screenshot")
        width, height, distinct = png_facts(shot)
        size = os.path.getsize(shot)
        if (width, height) != (1200, 1600):
            return fail(f"screenshot is {width}x{height}, not 1200x1600")
        # A blank page compresses to a few kB with a handful of byte values.
        if size < 20000 or distinct < 64:
            return fail(f"screenshot looks blank: {size} bytes, {distinct} distinct bytes")
        if keep:
            shutil.copyfile(shot, keep)
        print(f"OK: {width}x{height} PNG, {size} bytes, DOM has all {len(EXPECTED)} "
              f"expected strings" + (f"; kept at {keep}" if keep else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
