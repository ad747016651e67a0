"""A small inline SVG line chart (no scripts, no external files) for the HTML report."""

from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
           "#e377c2")


def axis(value, max_intervals=5):
    """(top, step) of an axis from 0 that shows value: step is 1, 2, 2.5 or 5 times a
    power of ten, the smallest giving at most max_intervals intervals, so ticks read
    0, 5, 10, 15 rather than 0, 3.75, 7.5."""
    if value <= 0:
        return 1, 1
    power = 1.0
    while power * 10 <= value:
        power *= 10
    while power > value:
        power /= 10
    power /= 10
    while True:
        for m in (1, 2, 2.5, 5):
            step = m * power
            intervals = -(-value // step)  # ceil
            if intervals <= max_intervals:
                return intervals * step, step
        power *= 10


def _fmt(v):
    return f"{v:g}" if v < 10000 else f"{v / 1000:g}k"


def line_chart(series, *, title, x_label, y_label, width=520, height=220):
    """series: [(name, [(x, y), ...])]. Returns the <svg> element as a string."""
    left, right, top, bottom = 56, 12, 26, 38
    pw, ph = width - left - right, height - top - bottom
    xs = [x for _, pts in series for x, _ in pts] or [1]
    ys = [y for _, pts in series for _, y in pts] or [1]
    (x_max, x_step), (y_max, y_step) = axis(max(xs)), axis(max(ys))

    def px(x):
        return left + pw * x / x_max

    def py(y):
        return top + ph - ph * y / y_max

    out = [f'<svg width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
           f'<text x="{left}" y="16" class="t">{escape(title)}</text>']
    for i in range(round(y_max / y_step) + 1):
        y = y_step * i
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{py(y):.1f}" y2="{py(y):.1f}" '
                   f'class="g"/><text x="{left - 6}" y="{py(y) + 4:.1f}" class="a" '
                   f'text-anchor="end">{_fmt(y)}</text>')
    for i in range(round(x_max / x_step) + 1):
        x = x_step * i
        out.append(f'<text x="{px(x):.1f}" y="{top + ph + 16}" class="a" '
                   f'text-anchor="middle">{_fmt(x)}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 4}" class="a" '
               f'text-anchor="middle">{escape(x_label)}</text>')
    out.append(f'<text x="12" y="{top + ph / 2}" class="a" text-anchor="middle" '
               f'transform="rotate(-90 12 {top + ph / 2})">{escape(y_label)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="f"/>')
    for i, (name, pts) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        if pts:
            d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
            out.append(f'<polyline points="{d}" fill="none" stroke="{color}" '
                       f'stroke-width="2"/>')
        lx = left + 8 + 130 * i
        out.append(f'<rect x="{lx}" y="{top + 6}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{lx + 14}" y="{top + 15}" class="a">{escape(name)}</text>')
    out.append("</svg>")
    return "".join(out)
