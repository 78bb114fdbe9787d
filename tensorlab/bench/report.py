"""What the benchmark command writes: the table it prints, the JSON file, and the PNG plot
(throughput against size, one line per implementation and device; needs matplotlib, the
`bench` extra - without it the plot is skipped with a note)."""
from __future__ import annotations

import json
import math
import os

from .libs import BASELINES

JSON_NAME = "tensorlab-bench.json"
PNG_NAME = "tensorlab-bench.png"


def fmt_time(s):
    if s is None or not math.isfinite(s):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def fmt_size(n):
    for suffix, scale in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{suffix}"
    return str(n)


def size_text(r):
    return f"n={r['size']}" if r["workload"] == "matmul" else fmt_size(r["size"])


def throughput_text(r):
    v = r.get("throughput")
    if v is None:
        return "-"
    return f"{v:.3g} {r['unit']}"


def table(results):
    """The results as one text table: one row per (device, workload, size, implementation); the
    tensorlab rows carry each baseline's time divided by tensorlab's (above 1x: tensorlab faster)."""
    present = [b for b in BASELINES if any(r["impl"] == b for r in results)]
    head = ["device", "workload", "size", "impl", "median", "IQR", "throughput", "% peak"]
    head += [f"vs {b}" for b in present]
    rows = []
    for r in results:
        if r["error"] is not None:
            row = [r["device"], r["workload"], size_text(r), r["impl"], "error", "-", "-", "-"]
        else:
            pct = r.get("pct_peak")
            row = [r["device"], r["workload"], size_text(r), r["impl"], fmt_time(r["median_s"]), fmt_time(r["iqr_s"]),
                   throughput_text(r), "-" if pct is None else f"{pct:.0f}%"]
        ratios = r.get("ratios", {})
        row += [f"{ratios[b]:.2f}x" if b in ratios else "" for b in present]
        rows.append(row)
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    right = set(range(4, len(head)))

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    out = [line(head), line(["-" * w for w in widths])]
    previous = None
    for r, row in zip(results, rows):
        key = (r["device"], r["workload"])
        if previous is not None and key != previous:
            out.append("")
        previous = key
        out.append(line(row).rstrip())
    return "\n".join(out)


def footnotes(results, peaks):
    lines = [f"% peak: throughput over the {d} copy peak measured in this run ({p['GBps']:.3g} GB/s, {p['how']})"
             for d, p in peaks.items()]
    lines.append("GB/s counts the bytes an ideal kernel moves (inputs read once, outputs written once); matmul "
                 "reports TFLOP/s (2n^3) and has no % peak.\nAbove 100%: the data fits in a cache the copy peak does "
                 "not use.")
    if any("ratios" in r for r in results):
        lines.append("vs X: X's median time / tensorlab's on the same device and input (above 1x: tensorlab is "
                     "faster).")
    errors = [r for r in results if r["error"] is not None]
    if errors:
        lines.append(f"{len(errors)} measurement{'s' if len(errors) != 1 else ''} failed (not timed):")
        lines += [f"  {r['device']} {r['workload']} {size_text(r)} {r['impl']}: {r['error']}" for r in errors]
    return "\n".join(lines)


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, default=str)
        f.write("\n")


def plot(path, results, peaks, title=""):
    """Write the PNG; returns None, or the reason it was skipped (matplotlib missing)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        from ..backends.diagnosis import DIST
        return (f"matplotlib is not installed ({e}); no plot written. Install it with "
                f"pip install '{DIST}[bench]'")
    workloads = list(dict.fromkeys(r["workload"] for r in results))
    cols = min(4, max(1, len(workloads)))
    rows = math.ceil(len(workloads) / cols)
    fig = Figure(figsize=(4.2 * cols, 3.4 * rows), layout="constrained")
    FigureCanvasAgg(fig)
    impls = list(dict.fromkeys(r["impl"] for r in results))
    colors = {name: f"C{i}" for i, name in enumerate(impls)}
    devices = list(dict.fromkeys(r["device"] for r in results))
    styles = {d: ("-", "o") if d == "cpu" else ("--", "s") for d in devices}
    for k, w in enumerate(workloads):
        ax = fig.add_subplot(rows, cols, k + 1)
        mine = [r for r in results if r["workload"] == w and r["error"] is None]
        unit = next((r["unit"] for r in results if r["workload"] == w), "")
        for d in devices:
            for name in impls:
                pts = sorted((r["size"], r["throughput"]) for r in mine if r["device"] == d and r["impl"] == name)
                if pts:
                    ls, mk = styles[d]
                    ax.plot(*zip(*pts), ls, marker=mk, color=colors[name], label=f"{name} ({d})", markersize=3)
            if unit == "GB/s" and d in peaks:
                ax.axhline(peaks[d]["GBps"], color="gray", ls=styles[d][0], lw=0.8, label=f"copy peak ({d})")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(w)
        ax.set_xlabel("n (n x n)" if w == "matmul" else "elements")
        ax.set_ylabel(unit)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=6)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.savefig(path, dpi=110)
    return None


def write(out_dir, doc):
    """Write the JSON and the plot into out_dir; returns (json path, png path or None, note or None)."""
    os.makedirs(out_dir, exist_ok=True)
    jpath = os.path.join(out_dir, JSON_NAME)
    write_json(jpath, doc)
    if doc.get("no_plot"):
        return jpath, None, "plot not requested (--no-plot)"
    ppath = os.path.join(out_dir, PNG_NAME)
    title = f"tensorlab-bench {doc.get('version', '')} ({doc.get('mode', '')}), {doc.get('created', '')}"
    note = plot(ppath, doc["results"], doc["peaks"], title)
    return jpath, (None if note else ppath), note
