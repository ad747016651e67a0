"""Reads libFuzzer's stderr: executions, coverage features and corpus size over time.

libFuzzer prints two kinds of status lines, one per mode:
  plain:  "#4096\tpulse  cov: 120 ft: 340 corp: 25/1034b lim: 43 exec/s: 2048 rss: 41Mb"
  -fork:  "#52000: cov: 130 ft: 388 corp: 31 exec/s: 5200 oom/timeout/crash: 0/0/1 time: 10s
           job: 4 dft_time: 0"
Both carry the execution count after '#', 'cov:', 'ft:' (coverage features), the
corpus size after 'corp:' and 'exec/s:' (the fork line also has 'time:'). Lines that are
not status lines are ignored, so the parser never fails on a sanitizer report or a
target's own output.
"""

import re

_STATUS = re.compile(r"^#(\d+)[:\s]")
_FIELD = {
    "cov": re.compile(r"\bcov: (\d+)"),
    "ft": re.compile(r"\bft: (\d+)"),
    "corp": re.compile(r"\bcorp: (\d+)"),
    "exec_s": re.compile(r"\bexec/s:? (\d+)"),
    "time": re.compile(r"\btime: (\d+)s"),
    "rss_mb": re.compile(r"\brss: (\d+)Mb"),
}
_FORK_FAULTS = re.compile(r"oom/timeout/crash: (\d+)/(\d+)/(\d+)")
_DONE = re.compile(r"^Done (\d+) runs in (\d+) second")


def parse_status_line(line):
    """Returns a dict of the numbers on one status line, or None if it is not one."""
    m = _STATUS.match(line)
    if not m or "cov:" not in line and "ft:" not in line and "corp:" not in line:
        return None
    stat = {"execs": int(m.group(1))}
    for name, pattern in _FIELD.items():
        f = pattern.search(line)
        if f:
            stat[name] = int(f.group(1))
    faults = _FORK_FAULTS.search(line)
    if faults:
        stat["ooms"], stat["timeouts"], stat["crashes"] = (int(g) for g in faults.groups())
    return stat


class LogSummary:
    """Accumulates status lines (with the wall time each was read at) into a summary."""

    def __init__(self):
        self.series = []  # [seconds, execs, ft, cov, corp], one point per status line
        self.last = {}
        self.done_runs = None
        self.done_seconds = None
        self.lines = 0

    def feed(self, line, seconds):
        self.lines += 1
        done = _DONE.match(line)
        if done:
            self.done_runs, self.done_seconds = int(done.group(1)), int(done.group(2))
            return
        stat = parse_status_line(line)
        if stat is None:
            return
        # Stamped when read (lines are streamed): the fork line's own "time:" counts whole
        # seconds only, too coarse for a short run.
        self.last.update(stat)
        self.series.append([round(float(seconds), 2), stat["execs"], stat.get("ft", 0),
                            stat.get("cov", 0), stat.get("corp", 0)])

    def summary(self, wall_seconds):
        """The per-run figures the report shows."""
        execs = self.last.get("execs", 0)
        if self.done_runs is not None:
            execs = max(execs, self.done_runs)
        wall = max(wall_seconds, 1e-9)
        return {
            "execs": execs,
            "execs_per_s": round(execs / wall, 1) if execs else self.last.get("exec_s", 0),
            "reported_exec_s": self.last.get("exec_s", 0),
            "features": self.last.get("ft", 0),
            "coverage": self.last.get("cov", 0),
            "corpus_units": self.last.get("corp", 0),
            "peak_rss_mb": self.last.get("rss_mb", 0),
            "series": _thin(self.series, 200),
        }


def _thin(points, limit):
    """Keeps at most limit points (first and last always), so a night's log stays small."""
    if len(points) <= limit:
        return list(points)
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]
