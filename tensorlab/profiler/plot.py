"""prof.plot_timeline(): a matplotlib picture of a short timeline: the host thread (ops, ranges, host
waits), one lane per stream (kernels, copies) and allocated memory. matplotlib is optional, imported
here only (as tensorlab.bench.report does): without it the call raises ImportError saying so."""
from __future__ import annotations


def plot(rec, path=None, max_ms=None):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        from ..backends.diagnosis import DIST
        raise ImportError(f"plot_timeline() needs matplotlib ({e}); install it with pip install '{DIST}[bench]', "
                          "or open export_chrome_trace()'s file in Perfetto instead") from None
    t0 = rec.t0
    end = (rec.t1 - t0) * 1e3
    if max_ms is not None:
        end = min(end, max_ms)
    lanes = [("ranges", [(r.start, r.end, r.name) for r in rec.ranges], "#9b59b6"),
             ("host ops", [(o.start, o.end, o.name) for o in rec.ops], "#3498db"),
             ("host waits", [(w.start, w.end, w.reason) for w in rec.waits], "#e74c3c")]
    streams = {}
    for d in (*rec.kernels, *rec.copies):
        if d.dev_start is not None:
            streams.setdefault((d.device, d.stream), []).append((d.dev_start, d.dev_end, d.name.split("<")[0]))
    for (dev, s), items in streams.items():
        lanes.append((f"cuda:{dev} stream {s}", items, "#2ecc71"))
    has_mem = bool(rec.mems)
    fig = Figure(figsize=(12, 1.0 + 0.5 * len(lanes) + (1.5 if has_mem else 0)))
    FigureCanvasAgg(fig)
    if has_mem:
        ax, axm = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [max(len(lanes), 1), 2]})
    else:
        ax, axm = fig.subplots(1, 1), None
    for i, (name, items, color) in enumerate(lanes):
        y = len(lanes) - 1 - i
        for a, b, label in items:
            x0, x1 = (a - t0) * 1e3, (b - t0) * 1e3
            if x0 > end:
                continue
            ax.broken_barh([(x0, max(x1 - x0, end * 1e-4))], (y - 0.4, 0.8), facecolors=color, edgecolors="black",
                           linewidth=0.3)
            if x1 - x0 > end / 40:
                ax.text((x0 + min(x1, end)) / 2, y, label, ha="center", va="center", fontsize=6, clip_on=True)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([n for n, _, _ in reversed(lanes)], fontsize=8)
    ax.set_xlim(0, end)
    ax.set_title("tensorlab profile timeline")
    if axm is not None:
        by_dev = {}
        for m in rec.mems:
            by_dev.setdefault(m.device, []).append(((m.t - t0) * 1e3, m.allocated))
        for dev, pts in by_dev.items():
            axm.step([p[0] for p in pts], [p[1] for p in pts], where="post", label=f"{dev} allocated")
        axm.set_ylabel("bytes", fontsize=8)
        axm.legend(fontsize=7, loc="upper left")
        axm.set_xlabel("ms since the profile started")
    else:
        ax.set_xlabel("ms since the profile started")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
