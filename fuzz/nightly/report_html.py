"""Renders report.json's content as ONE self-contained HTML page (inline CSS and SVG).

Nothing is fetched: the page must open from a CI artifact, offline, as it is.
"""

import re
from html import escape

import svg_plot

CSS = """
body{font:14px/1.4 'DejaVu Sans',Arial,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #ccc}
.meta{color:#555}.cards{display:flex;flex-wrap:wrap;gap:10px;margin:14px 0}
.card{border:1px solid #ccc;border-radius:6px;padding:8px 14px;min-width:120px}
.card b{display:block;font-size:22px}.bad b{color:#c00}.ok b{color:#070}
table{border-collapse:collapse;margin:4px 0}th,td{border:1px solid #ddd;padding:3px 8px;
text-align:right;font-size:13px}th{background:#f3f3f3;text-align:left}td.l,th.l{text-align:left}
code.sig{white-space:nowrap}
code{font:12px 'DejaVu Sans Mono',monospace;background:#f6f6f6;padding:1px 3px;word-break:break-all}
.badge{display:inline-block;padding:1px 8px;border-radius:9px;color:#fff;font-size:12px}
.b-ok{background:#2a7}.b-bad{background:#c33}.b-warn{background:#d80}.b-off{background:#888}
.plots{display:flex;flex-wrap:wrap;gap:12px}
dl.legend{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:4px 0}
dl.legend dt{font-weight:bold}dl.legend dd{margin:0}
.cov{display:flex;flex-wrap:wrap;gap:10px 22px;align-items:flex-start}
.cov h3{font-size:14px;margin:4px 0}.note{color:#555}
ol.next li{margin:4px 0}
svg .t{font-size:13px;font-weight:bold}svg .a{font-size:11px;fill:#444}
svg .g{stroke:#e4e4e4}svg .f{fill:none;stroke:#999}
"""

_STATUS_BADGE = {"clean": "b-ok", "ran": "b-ok", "merged": "b-ok", "violation": "b-bad",
                 "error": "b-bad", "hung": "b-bad", "interrupted": "b-warn",
                 "unavailable": "b-off", "skipped": "b-off", "new": "b-bad",
                 "insufficient-coverage": "b-warn",
                 "known": "b-off"}


def _badge(text):
    return f'<span class="badge {_STATUS_BADGE.get(text, "b-off")}">{escape(str(text))}</span>'


def _num(v):
    if isinstance(v, float):
        return f"{v:,.1f}"
    return f"{v:,}" if isinstance(v, int) else escape(str(v if v is not None else "-"))


def _card(label, value, tone=""):
    return f'<div class="card {tone}"><b>{_num(value)}</b>{escape(label)}</div>'


_NUMERIC = re.compile(r"^-?[0-9][0-9,.]*$")


def _table(headers, rows):
    """Numbers are right-aligned (so digits line up), text left-aligned."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f'<td class="{"" if _NUMERIC.match(c) else "l"}">{c}</td>'
                                    for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _violations(report):
    if not report["violations"]:
        return "<p>No violation and no crash in this campaign.</p>"
    classes = report["totals"].get("bug_classes", {})
    summary = ""
    if classes:
        summary = "<p>By bug class (signature without its shape): " + ", ".join(
            f"<code>{escape(c)}</code> &times; {n}" for c, n in sorted(classes.items())) + "</p>"
    logs = _step_logs(report)
    rows = []
    for v in report["violations"]:
        log = v.get("log") or next((logs[s] for s in v.get("found_by", []) if s in logs), None)
        rows.append([f'<code class="sig">{escape(v["signature"])}</code>',
                     escape(v.get("kind", "")),
                     escape(v.get("source", "")), _num(v.get("count", 1)),
                     _badge("new") if v.get("new") else _badge("known"),
                     f'<code>{escape(v.get("command", ""))}</code>',
                     _link(v.get("reproducer")), _link(log, "log")])
    return summary + _table(["signature", "kind", "found by", "inputs", "new", "reproduce with",
                             "reproducer", "log"], rows)


def _link(path, text=None):
    """A link to a file beside the report (paths in report.json are relative to it)."""
    if not path:
        return "-"
    return f'<a href="{escape(path)}">{escape(text or path)}</a>'


def _step_logs(report):
    """{step id: its log}, to link a finding to the run that found it."""
    logs = {f'router:{r["router"]}': r.get("log") for r in report["routers"]}
    logs.update({f'libfuzzer:{t["build"]}:{t["target"]}': t.get("log")
                 for t in report["targets"]})
    return {k: v for k, v in logs.items() if v}


def _seconds(entry):
    """The time a step was given and the time it took: "20 / 23.4"."""
    budget, wall = entry.get("budget_s"), entry.get("wall_s")
    if budget is None and wall is None:
        return "-"
    return f'{_num(budget) if budget is not None else "-"} / ' \
           f'{_num(float(wall)) if wall is not None else "-"}'


# One line each: what a verdict and each acceptable reason mean (docs/fuzz.md, "Verdicts"
# and "Tie policy", says it in full).
VERDICT_LEGEND = [
    ("exact", "the router kept the spec's experts in the spec's order, every gate within "
     "its budget of the exact gate"),
    ("acceptable", "it differs from the real-number spec only where rounding can explain "
     "it; the reason and the margin (difference / budget, at most 1) are recorded"),
    ("near-tie-probabilities", "it kept a different set on probabilities: each displaced "
     "expert that beats a kept one does so by no more than the certified binary32 budget"),
    ("near-tie-order", "the kept set is right but two slots are swapped where their "
     "probabilities are within that budget"),
    ("tie-order", "its contract says \"tie_order\": \"any\" and it resolved exactly equal "
     "scores (+0 and -0 included) in another order than the spec's lower index first"),
    ("nonreal-row", "a row with NaN, a +inf logit or only -inf logits: the spec's values "
     "are not real numbers, so only the structure (ids in range or -1, no repeats) is "
     "checked"),
    ("violation", "a bug: outside every budget, with a certificate and a reproducer"),
]


def _legend():
    items = "".join(f"<dt>{escape(term)}</dt><dd>{escape(text)}</dd>"
                    for term, text in VERDICT_LEGEND)
    return (f'<dl class="legend">{items}</dl><p class="note">Verdicts are per token. The '
            "derivation of each budget: docs/fuzz.md (sections Verdicts, Tie policy, The "
            "probability budget, The gate budget) and docs/design.md.</p>")


def _routers(report):
    rows = []
    for r in report["routers"]:
        v = r.get("verdicts", {})
        reasons = ", ".join(f"{k}: {n}" for k, n in sorted(r.get("acceptable_reasons",
                                                                 {}).items()))
        note = reasons or r.get("message", "")
        if r.get("message") and reasons:
            note += "; " + r["message"]
        rows.append([escape(r["router"]), _badge(r.get("status", "")), _seconds(r),
                     _num(r.get("cases", 0)),
                     _num(r.get("tokens", 0)), _num(r.get("cases_per_s", 0)),
                     _num(v.get("exact", 0)),
                     _num(v.get("acceptable", 0)), _num(v.get("violation", 0)),
                     escape(note), _link(r.get("log"), "log")])
    if not rows:
        return "<p>No router was run.</p>"
    return _table(["router", "status", "seconds given / taken", "cases", "tokens", "cases/s",
                   "exact", "acceptable", "violation", "acceptable reasons / note", "log"],
                  rows)


def _dispatchers(report):
    """The dispatch kernels (moe_dispatch_v1): judged exactly, one verdict per case; slots
    judged per band of T * k (the 2^16 and 2^24 crossings), and the cases outside the
    domain whose statuses were judged."""
    rows = []
    for d in report.get("dispatchers", []):
        cov = d.get("coverage") or {}
        bands = ", ".join(f"{b}: {n}" for b, n in sorted((cov.get("slots") or {}).items(),
                                                         key=lambda kv: _band_key(kv[0])))
        rows.append([escape(d["dispatcher"]), _badge(d.get("status", "")), _seconds(d),
                     _num(d.get("cases", 0)), _num(d.get("tokens", 0)), _num(d.get("slots", 0)),
                     _num(cov.get("outside_domain", 0)), escape(bands or "-"),
                     _num(len(d.get("violations", []))),
                     escape(d.get("message", "")), _link(d.get("log"), "log")])
    if not rows:
        return "<p>No dispatch kernel was run.</p>"
    return _table(["dispatch kernel", "status", "seconds given / taken", "cases", "tokens",
                   "slots judged", "cases outside the domain", "cases by slots (T * k)",
                   "violations", "note", "log"], rows)


# moe-oracle fuzz --json's coverage: tokens judged per band of each dimension.
COVERAGE_DIMENSIONS = (("experts", "E (experts)"), ("k", "k (kept per token)"),
                       ("tokens", "T (tokens per case)"), ("k_vs_experts", "k against E"))


def _band_key(band):
    """Bands in numeric order ("0", "1", "2-8", ..., "65+"; "k<E" before "k=E", "k>E")."""
    digits = re.match(r"\d+", band)
    return (0, int(digits.group()), band) if digits else (1, "<=>".find(band[1:2]), band)


# moe-oracle fuzz --json's coverage.shares: fractions of the tokens judged (docs/fuzz.md).
SHARE_COLUMNS = (("model_shapes", "model shapes"), ("degenerate", "degenerate"),
                 ("nonreal", "non-real rows"), ("model_like", "model-like logits"),
                 ("adversarial", "adversarial logits"))


def _shares(routers):
    """The shares of each router's judged tokens, as percentages, with the degenerate cases
    counted; "" when no router reported them (an older moe-oracle)."""
    rows = []
    for r in routers:
        shares = r["coverage"].get("shares")
        if not isinstance(shares, dict):
            continue
        cells = [f"{100 * shares[key]:.1f}%" if isinstance(shares.get(key), (int, float))
                 else "-" for key, _ in SHARE_COLUMNS]
        rows.append([escape(r["router"])] + cells
                    + [_num(r["coverage"].get("degenerate_cases", "-"))])
    if not rows:
        return ""
    return ("<div><h3>shares of the tokens judged</h3>"
            + _table(["router"] + [title for _, title in SHARE_COLUMNS] + ["degenerate cases"],
                     rows) + "</div>")


def _coverage(report):
    """The shares of the tokens judged (model shapes, degenerate, non-real, model-like or
    adversarial logits); per dimension, a table of tokens judged per band for every router
    that judged any; then what was abstained. Abstained cases are not judged: they test
    nothing."""
    routers = [r for r in report["routers"] if r.get("coverage")]
    if not routers:
        return ("<p>No router reported its shape coverage (moe-oracle fuzz --json, field "
                "coverage).</p>")
    tables = [_shares(routers)]
    for key, title in COVERAGE_DIMENSIONS:
        bands = sorted({b for r in routers for b in (r["coverage"].get(key) or {})},
                       key=_band_key)
        if not bands:
            continue
        rows = [[escape(r["router"])] + [_num(r["coverage"].get(key, {}).get(b, 0))
                                         for b in bands] for r in routers]
        tables.append(f"<div><h3>tokens judged by {escape(title)}</h3>"
                      f"{_table(['router'] + bands, rows)}</div>")
    rows = []
    for r in routers:
        cov = r["coverage"]
        why = ", ".join(f"{k}: {n}" for k, n in sorted((cov.get("abstain_reasons") or {})
                                                       .items()))
        rows.append([escape(r["router"]), _num(r.get("cases", 0)),
                     _num(cov.get("abstained", r.get("abstained", 0))), escape(why or "-"),
                     _num(cov.get("min_tokens", "-")),
                     _badge("insufficient-coverage") if cov.get("insufficient") else "enough"])
    tables.append("<div><h3>abstained cases</h3>" + _table(
        ["router", "cases", "abstained", "reasons", "min tokens", "coverage"], rows) + "</div>")
    return (f'<div class="cov">{"".join(tables)}</div><p class="note">Model shapes: E in '
            "8..512, k in 1..min(10, E), T >= 16; degenerate: E <= 1, k = 0, k > E or T = 0; "
            "non-real rows (a NaN or +inf logit) are judged on structure only. Abstained "
            "cases are "
            "not judged: a router that returns non-zero (a shape or CPU it does not support) "
            "is not tested on that case. A run with fewer tokens judged than min tokens, or "
            "with more than half of its cases abstained, is not a pass (status "
            "insufficient-coverage).</p>")


def _targets(report):
    rows = []
    for t in report["targets"]:
        logs = _link(t.get("log"), "log")
        if t.get("merge_log"):
            logs += " " + _link(t["merge_log"], "merge")
        rows.append([escape(t["target"]), escape(t["build"]), _badge(t.get("status", "")),
                     _seconds(t), _num(t.get("execs_per_s", 0)), _num(t.get("execs", 0)),
                     _num(t.get("features", 0)), _num(t.get("coverage", 0)),
                     _num(t.get("corpus_files", 0)), _num(t.get("added", 0)),
                     _num(len(t.get("crashes", []))), logs])
    if not rows:
        return "<p>No libFuzzer target was run.</p>"
    corpus = report.get("corpus") or {}
    where = ("the repository's corpus/&lt;target&gt;/ (--merge-corpus)"
             if corpus.get("merged_into_repo") else
             "this campaign's corpus/&lt;target&gt;/ beside the report (scripts/campaign "
             "--merge-corpus merges into the repository's corpus/ instead)")
    return (_external(report) + _table(
        ["target", "build", "status", "seconds given / taken", "execs/s", "execs",
         "features (ft)", "coverage (cov)", "corpus files", "added", "crashes", "logs"], rows)
        + f'<p class="note">New inputs that add coverage went to {where}.</p>')


def _external(report):
    """Which library fuzz_external fuzzed (the user's kernel, or an in-tree stand-in)."""
    libs, skipped = [], []
    for t in report["targets"]:
        if t["target"] != "fuzz_external":
            continue
        if t.get("library"):
            libs.append(f'<code>{escape(t["library"])}</code> ({escape(t["build"])} build)')
        elif t.get("message"):
            skipped.append(escape(t["message"]))
    if libs:
        return ("<p>fuzz_external fuzzed " + ", ".join(libs) + " (scripts/campaign --external "
                "PATH or $MOE_IMPL names the library).</p>")
    if skipped:
        return f"<p>fuzz_external was skipped: {skipped[0]}.</p>"
    return ""


def _next_steps():
    return """<ol class="next">
<li>Fuzz your own router: build it as a shared library that exports the C ABI
<code>moe_route_v1</code> (impl/include/moe/route_abi.h; examples/my_router.c is a complete
one), then run
<pre><code>cc -O2 -shared -fPIC -o libmine.so mine.c
build/bin/moe-oracle fuzz --impl ./libmine.so --seconds 60</code></pre>
Exit 0: no violation; 1: a violation, with a reproducer in ./moe-oracle-out; 3: too little
was judged (see the shape coverage above). An optional contract
(<code>moe_route_v1_contract</code>) says what your kernel promises: the shapes it supports,
its tie order, its exp's accuracy. A router of today's open models (sigmoid scores, a
selection bias, groups, a scale) exports <code>moe_route_v2</code> instead or as well; the
same command fuzzes it, drawing only the families its contract lists.</li>
<li>Replay a finding: <code>build/bin/moe-oracle replay FILE.json --impl ./libmine.so</code>;
explain one case: <code>build/bin/moe-oracle explain FILE.json --impl ./libmine.so</code>.</li>
<li>In this campaign: <code>scripts/campaign --routers ./libmine.so --targets fuzz_external
--external ./libmine.so</code>.</li>
<li>Read on: docs/fuzz.md (verdicts, budgets, the command, the contract), docs/design.md
(the spec, the verdicts, the C ABI), docs/nightly.md (this report and the campaign).</li>
</ol>"""


def _plots(report):
    by_target = {}
    for t in report["targets"]:
        pts = [(p[0], p[2]) for p in t.get("series", [])]
        by_target.setdefault(t["target"], []).append((t["build"], pts))
    charts = [svg_plot.line_chart(series, title=f"{name}: coverage features over time",
                                  x_label="seconds", y_label="features (ft)")
              for name, series in sorted(by_target.items())]
    return f'<div class="plots">{"".join(charts)}</div>' if charts else ""


def render(report):
    tot = report["totals"]
    status = ("complete" if report["complete"] else
              "interrupted" if report["interrupted"] else "running")
    host = report.get("host", {})
    cards = "".join([
        _card("violations (new: %d)" % tot["new_violations"], tot["violations"],
              "bad" if tot["violations"] else "ok"),
        _card("router cases", tot["router_cases"]),
        _card("tokens judged exact", tot["verdicts"]["exact"]),
        _card("tokens judged acceptable", tot["verdicts"]["acceptable"]),
        _card("tokens judged violation", tot["verdicts"]["violation"],
              "bad" if tot["verdicts"]["violation"] else "ok"),
        _card("dispatch slots judged", tot.get("dispatch_slots", 0)),
        _card("libFuzzer execs", tot["libfuzzer_execs"]),
        _card("corpus inputs added", tot["corpus_added"]),
        _card("steps failed (error, hang)", tot.get("failed_steps", 0),
              "bad" if tot.get("failed_steps") else "ok"),
    ])
    pending = ""
    if report["pending"]:
        pending = ("<h2>Not yet run</h2><p>" + ", ".join(escape(p) for p in report["pending"]) +
                   "</p><p>Run the same command again with the same --out to resume.</p>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>moe-oracle campaign {escape(
        report["campaign_id"])}</title><style>{CSS}</style></head><body>
<h1>moe-oracle fuzzing campaign {escape(report["campaign_id"])} {_badge(status)}</h1>
<div class="meta">started {escape(report["started"])}, finished {escape(
        str(report.get("finished") or "-"))}; budget {report["budget_s"]} s; seed
{report["seed"]}; resumed {report.get("resumed", 0)} time(s); {host.get("cpus", "?")} cores,
CPU flags: {escape(" ".join(host.get("cpu_flags", [])) or "none of avx2/avx512")}</div>
<div class="cards">{cards}</div>
<h2>Violations and crashes (deduplicated by signature)</h2>{_violations(report)}
<h2 id="verdict-legend">What the verdicts mean</h2>{_legend()}
<h2>Routers: moe-oracle fuzz, verdicts by kind (one per token)</h2>{_routers(report)}
<h2>Dispatch kernels: moe-oracle fuzz --abi moe_dispatch_v1, judged exactly</h2>{
    _dispatchers(report)}
<h2 id="coverage">Shape coverage: tokens judged per band of E, k and T</h2>{_coverage(report)}
<h2>libFuzzer targets</h2>{_targets(report)}
{_plots(report)}
{pending}
<h2 id="next-steps">Next steps</h2>{_next_steps()}
</body></html>
"""
