#!/usr/bin/env python3
"""Renders a campaign's report.json as report.html (used by the campaign and the tests).

usage: render_report.py REPORT.json [-o REPORT.html]
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atomic_io  # noqa: E402
import report_html  # noqa: E402


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("report")
    p.add_argument("-o", "--output", help="default: report.html beside the JSON")
    a = p.parse_args(argv)
    try:
        with open(a.report, encoding="utf-8") as f:
            report = json.load(f)
        html = report_html.render(report)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"render_report: cannot render {a.report}: {e!r}", file=sys.stderr)
        return 2
    out = a.output or os.path.join(os.path.dirname(os.path.abspath(a.report)), "report.html")
    atomic_io.write_text(out, html)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
