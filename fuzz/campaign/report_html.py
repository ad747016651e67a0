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
    rows = []
    for v in report["violations"]:
        link = (f'<a href="{escape(v["reproducer"])}">{escape(v["reproducer"])}</a>'
                if v.get("reproducer") else "-")
        rows.append([f'<code class="sig">{escape(v["signature"])}</code>',
                     escape(v.get("kind", "")),
                     escape(v.get("source", "")), _num(v.get("count", 1)),
                     _badge("new") if v.get("new") else _badge("known"),
                     f'<code>{escape(v.get("command", ""))}</code>', link])
    return summary + _table(["signature", "kind", "found by", "inputs", "new", "reproduce with",
                             "reproducer"], rows)


def _routers(report):
    rows = []
    for r in report["routers"]:
        v = r.get("verdicts", {})
        reasons = ", ".join(f"{k}: {n}" for k, n in sorted(r.get("acceptable_reasons",
                                                                 {}).items()))
        rows.append([escape(r["router"]), _badge(r.get("status", "")), _num(r.get("cases", 0)),
                     _num(r.get("tokens", 0)), _num(r.get("cases_per_s", 0)),
                     _num(v.get("exact", 0)),
                     _num(v.get("acceptable", 0)), _num(v.get("violation", 0)),
                     escape(reasons or r.get("message", "")), escape(_coverage(r))])
    if not rows:
        return "<p>No router was run.</p>"
    return _table(["router", "status", "cases", "tokens", "cases/s", "exact", "acceptable",
                   "violation", "acceptable reasons / note",
                   "tokens judged by E and T band"], rows)


def _coverage(router):
    """The shape coverage of one router's run: tokens judged per band of E and of T."""
    cov = router.get("coverage") or {}
    parts = []
    for key, name in (("experts", "E"), ("tokens", "T")):
        bands = cov.get(key) or {}
        if bands:
            parts.append(f"{name} " + ", ".join(f"{b}: {n}" for b, n in bands.items() if n))
    return "; ".join(parts)


def _targets(report):
    rows = []
    for t in report["targets"]:
        rows.append([escape(t["target"]), escape(t["build"]), _badge(t.get("status", "")),
                     _num(t.get("execs_per_s", 0)), _num(t.get("execs", 0)),
                     _num(t.get("features", 0)), _num(t.get("coverage", 0)),
                     _num(t.get("corpus_files", 0)), _num(t.get("added", 0)),
                     _num(len(t.get("crashes", [])))])
    return _table(["target", "build", "status", "execs/s", "execs", "features (ft)",
                   "coverage (cov)", "corpus files", "added", "crashes"],
                  rows) if rows else "<p>No libFuzzer target was run.</p>"


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
<h2>Routers: moe-oracle fuzz, verdicts by kind (one per token)</h2>{_routers(report)}
<h2>libFuzzer targets</h2>{_targets(report)}
{_plots(report)}
{pending}
</body></html>
"""
