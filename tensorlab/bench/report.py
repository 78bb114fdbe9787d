"""What the benchmark command writes: the table it prints, the JSON file, and the PNG plot
(throughput against size, one line per implementation and device; needs matplotlib, the
`bench` extra - without it the plot is skipped with a note)."""
from __future__ import annotations

import json
import math
import os

from . import stability
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
    return f"n={r['size']}" if r["workload"].startswith("matmul") else fmt_size(r["size"])


def throughput_text(r):
    v = r.get("throughput")
    if v is None:
        return "-"
    return f"{v:.3g} {r['unit']}"


def threads_text(r):
    t = r.get("threads")
    return "-" if t is None else str(t)


def table(results):
    """The results as one text table: one row per (device, workload, size, implementation, thread
    setting); the tensorlab rows carry each baseline's time divided by tensorlab's (above 1x:
    tensorlab faster)."""
    present = [b for b in BASELINES if any(r["impl"] == b for r in results)]
    head = ["device", "workload", "size", "impl", "threads", "median", "IQR", "throughput", "% peak", "% roof"]
    head += [f"vs {b}" for b in present] + ["marks"]
    rows = []
    for r in results:
        if r["error"] is not None:
            row = [r["device"], r["workload"], size_text(r), r["impl"], threads_text(r), "error", "-", "-", "-", "-"]
        else:
            pct, roof = r.get("pct_peak"), r.get("pct_roof")
            row = [r["device"], r["workload"], size_text(r), r["impl"], threads_text(r), fmt_time(r["median_s"]),
                   fmt_time(r["iqr_s"]), throughput_text(r), "-" if pct is None else f"{pct:.0f}%",
                   "-" if roof is None else f"{roof:.0f}%"]
        row += [stability.ratio_text(r, b) for b in present] + [stability.mark_text(r)]
        rows.append(row)
    return _render(head, rows, [(r["device"], r["workload"]) for r in results], right_from=4, left=("marks",))


def _render(head, rows, keys, right_from, left=()):
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    right = {i for i in range(right_from, len(head)) if head[i] not in left}

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    out = [line(head), line(["-" * w for w in widths])]
    previous = None
    for key, row in zip(keys, rows):
        if previous is not None and key != previous:
            out.append("")
        previous = key
        out.append(line(row).rstrip())
    return "\n".join(out)


OVERHEAD_BASELINES = ("numpy", "cupy", "torch")


def overhead_table(records):
    """Per-op host overhead rows (overhead.py): median and min per call, the thread count, each
    baseline's median / tensorlab's, the issue's target for tensorlab and, on the emulated CUDA
    device, the kernel time taken out and the part spent in the emulation's own launch()."""
    present = [b for b in OVERHEAD_BASELINES if any(r["impl"] == b for r in records)]
    emulated = any(r.get("launch_s") is not None for r in records)
    head = ["device", "workload", "impl", "threads", "median", "min"]
    head += [f"vs {b}" for b in present] + ["target"]
    if emulated:
        head += ["emu launch()", "w/o emu launch"]
    rows = []
    for r in records:
        ok = r.get("median_s") is not None
        row = [r["device"] + (" (emulated)" if r.get("emulated") else ""), r["workload"], r["impl"], threads_text(r),
               fmt_time(r["median_s"]) if ok else "error", fmt_time(r["min_s"]) if ok else "-"]
        ratios = r.get("ratios", {})
        row += [f"{ratios[b]:.2f}x" if b in ratios else "" for b in present]
        target = r.get("target_s")
        row.append("" if target is None or not ok else
                   f"<={fmt_time(target)} {'met' if r.get('judged_s', r['median_s']) <= target else 'MISSED'}")
        if emulated:
            k = r.get("launch_s")
            row += ["" if k is None else fmt_time(k), "" if k is None else fmt_time(r["front_s"])]
        rows.append(row)
    return _render(head, rows, [(r["device"], r["workload"]) for r in records], right_from=3)


def overhead_footnotes(records):
    lines = ["Per-op host overhead: one call on 8 float32 elements; median and min per call over interleaved rounds "
             "(the libraries alternate inside each round). vs X: X's median / tensorlab's (below 1x: tensorlab "
             "costs more)."]
    if any(r.get("launch_s") is not None for r in records):
        lines.append("Emulated CUDA: timed with dry launches (the emulation driver's kernel_timing(dry=True): "
                     "arguments checked and packed, the kernel not run; results checked against NumPy before "
                     "timing), so median/min hold no kernel time. `emu launch()` is the emulation driver's argument "
                     "packing (CuPy's launch replaces it on a GPU); `w/o emu launch` is the median without it: the "
                     "front end and CUDA backend alone, which the target is judged on there.")
    return "\n".join(lines)


def models_table(records):
    """Training-step rows (models.py): median and min per step, threads, torch's median /
    tensorlab's, and the first-step losses the two libraries computed from the same weights."""
    head = ["device", "model", "impl", "threads", "median/step", "min/step", "vs torch", "first loss"]
    rows = []
    for r in records:
        ok = r.get("median_s") is not None
        ratio = r.get("ratios", {}).get("torch")
        loss = (r.get("losses") or [None])[0]
        rows.append([r["device"], r["model"], r["impl"], threads_text(r), fmt_time(r["median_s"]) if ok else "error",
                     fmt_time(r["min_s"]) if ok else "-", "" if ratio is None else f"{ratio:.2f}x",
                     "-" if loss is None else f"{loss:.6f}"])
    return _render(head, rows, [(r["device"], r["model"], r["thread_setting"]) for r in records], right_from=3)


def models_footnotes(records):
    lines = ["Models: one optimizer step (zero_grad, forward, loss, backward, step) from the same NumPy-drawn weights "
             "and data on each library, timed in interleaved rounds at 1 thread and at the default count (torch."
             "set_num_threads; tl.set_num_threads where tensorlab has it). vs torch: torch's median / tensorlab's "
             "(below 1x: tensorlab is slower)."]
    for m in dict.fromkeys(r["model"] for r in records):
        title = next(r["title"] for r in records if r["model"] == m)
        lines.append(f"  {m}: {title}")
    bad = {r["model"]: r["error"] for r in records if r.get("error")}
    for m, err in bad.items():
        lines.append(f"  {m} NOT TIMED: {err}")
    return "\n".join(lines)


def crossovers(results):
    """Where tensorlab on a CUDA device beats tensorlab on the CPU, per (workload, CUDA device):
    {"workload", "device", "size" (the smallest common size from which CUDA is faster at every
    larger common size, or None), "text"}. Empty without CUDA rows."""
    out = []
    ours = [r for r in results if r["impl"] == "tensorlab" and r["error"] is None
            and r.get("thread_setting", "default") == "default"]
    for w in dict.fromkeys(r["workload"] for r in ours):
        cpu = {r["size"]: r["median_s"] for r in ours if r["workload"] == w and r["device"] == "cpu"}
        for dev in dict.fromkeys(r["device"] for r in ours if r["workload"] == w and r["device"] != "cpu"):
            gpu = {r["size"]: r["median_s"] for r in ours if r["workload"] == w and r["device"] == dev}
            common = sorted(set(cpu) & set(gpu))
            if not common:
                continue
            wins = [gpu[n] < cpu[n] for n in common]
            size = None
            for k in range(len(common) - 1, -1, -1):
                if not wins[k]:
                    break
                size = common[k]
            fake = {"workload": w}
            if size is None:
                text = f"{w}: the CPU wins at every size both ran (up to {size_text(dict(fake, size=common[-1]))})"
            elif size == common[0]:
                text = f"{w}: {dev} wins at every size both ran (from {size_text(dict(fake, size=size))})"
            else:
                text = f"{w}: {dev} wins from {size_text(dict(fake, size=size))} on"
            out.append({"workload": w, "device": dev, "size": size, "sizes": common, "text": text})
    return out


def cuda_note(doc):
    """The figure's note when it has no CUDA rows (and why), or when its CUDA rows are emulated;
    None when real CUDA rows are present."""
    results = doc.get("results", [])
    cuda_rows = [r for r in results if r["device"] != "cpu"]
    info = doc.get("cuda") or {}
    if cuda_rows:
        if info.get("emulated"):
            return ("CUDA rows are EMULATED (TENSORLAB_CUDA_EMULATION=1): kernels ran on the host CPU; their times say "
                    "nothing about a GPU.")
        return None
    devices = doc.get("devices") or []
    if info.get("available") and not any(d.startswith("cuda") for d in devices):
        return "No CUDA rows: this run was limited to the CPU (--devices)."
    reason = info.get("reason") or ("the CUDA emulation driver does not count as a GPU (run with --devices cpu,cuda "
                                    "to include emulated rows)" if info.get("emulated_available") else
                                    "no CUDA device was found")
    return f"No CUDA rows: {reason}"


def torch_notes(doc):
    """Devices without a torch line although torch is installed, and why."""
    libs = doc.get("libraries") or {}
    if not libs.get("torch"):
        return []
    out = []
    for d in doc.get("devices") or []:
        if d != "cpu" and not libs.get("torch_cuda"):
            out.append(f"torch {libs['torch']} is installed without CUDA: no torch line on {d}.")
    return out


def footnotes(results, peaks):
    lines = [f"% peak: throughput over the {d} copy peak measured in this run ({p['GBps']:.3g} GB/s, {p['how']})"
             for d, p in peaks.items()]
    lines.append("GB/s counts the bytes an ideal kernel moves (inputs read once, outputs written once); matmul "
                 "reports TFLOP/s (2n^3) and has no % peak.\nAbove 100%: the data fits in a cache the copy peak does "
                 "not use.")
    for d, p in peaks.items():
        sw = p.get("sweep")
        if sw and sw.get("footprint"):
            pts = ", ".join(f"{fmt_size(f)}B {g:.0f}" for f, g in zip(sw["footprint"], sw["GBps"]))
            lines.append(f"% roof: throughput over the {d} copy bandwidth at the same footprint (the bytes the workload "
                         f"touches; {sw['how']}): {pts} GB/s")
    if any(r.get("thread_setting") == "1" for r in results):
        lines.append("threads: the CPU threads each library ran on (tensorlab: tl.get_num_threads(); torch: "
                     "torch.get_num_threads(); NumPy's matmul: BLAS's, not exposed: -). Large CPU cases run twice: "
                     "at 1 thread and at the default count; the ratios compare rows of the same setting.")
    else:
        lines.append("threads: the CPU threads each library ran on (tensorlab: tl.get_num_threads(), 1 where it has "
                     "none; torch: torch.get_num_threads(); NumPy's matmul: BLAS's, not exposed: -).")
    if any("ratios" in r for r in results):
        lines.append("vs X: X's median time / tensorlab's on the same device and input (above 1x: tensorlab is "
                     "faster).")
    if any(r.get("unstable") for r in results):
        lines.append(stability.FOOTNOTE)
    for c in crossovers(results):
        lines.append(f"crossover: {c['text']}")
    errors = [r for r in results if r["error"] is not None]
    if errors:
        lines.append(f"{len(errors)} measurement{'s' if len(errors) != 1 else ''} failed (not timed):")
        lines += [f"  {r['device']} {r['workload']} {size_text(r)} {r['impl']}: {r['error']}" for r in errors]
    return "\n".join(lines)


def compare_table(rows, against):
    """--compare OLD.json: each measurement both runs made, the old and new medians and the verdict."""
    head = ["device", "workload", "size", "impl", "threads", "old median", "new median", "new/old", "verdict"]
    body = [[r["device"], r["workload"], size_text(r), r["impl"], str(r["threads"]), fmt_time(r["old_s"]),
             fmt_time(r["new_s"]), f"{r['change']:.2f}x", r["verdict"]] for r in rows]
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("slower", "faster", "same", "unreliable")}
    summary = (f"against {against}: {len(rows)} measurements in both runs; " +
               ", ".join(f"{n} {v}" for v, n in counts.items()) +
               f" (a change inside {stability.NOISE_FLOOR:.0%} or the rows' own IQR is 'same'; a marked row "
               "'unreliable')")
    return _render(head, body, [(r["device"], r["workload"]) for r in rows], right_from=4) + "\n" + summary


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, default=str)
        f.write("\n")


def plain_number(v):
    """A tick label without exponents: 0.05, 0.2, 1, 20, 2000."""
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else ""
    if abs(v) >= 1:
        return f"{v:.0f}" if float(v).is_integer() else f"{v:.3g}"
    digits = max(0, -math.floor(math.log10(abs(v)))) + 2
    return f"{v:.{digits}f}".rstrip("0").rstrip(".")


def size_tick(v, matmul=False):
    """An x tick label: sizes spelled as the table spells them (4Ki, 1Mi), matmul's n plain."""
    if v <= 0 or not math.isfinite(v):
        return ""
    n = int(round(v))
    return str(n) if matmul else fmt_size(n)


def panel_title(workload, records):
    """'add: float32, cpu + cuda:0 (emulated)' for a panel's records."""
    dtype = next((r.get("dtype") for r in records if r.get("dtype")), "float32")
    devices = []
    for r in records:
        d = r["device"] + (" (emulated)" if r.get("emulated") else "")
        if d not in devices:
            devices.append(d)
    return f"{workload}: {dtype}, {' + '.join(devices)}"


def _roof_curve(sweep, records):
    """(sizes, GB/s) of the copy roofline under a panel: the copy bandwidth at each size's footprint."""
    from .roofline import roof_at
    per = [r["work"] / r["size"] for r in records if r.get("work") and r.get("size")]
    sizes = sorted({r["size"] for r in records})
    if not per or not sizes or not sweep or not sweep.get("footprint"):
        return None
    ratio = per[0]
    lo, hi = math.log2(sizes[0]), math.log2(sizes[-1])
    xs = [2 ** (lo + (hi - lo) * k / 48) for k in range(49)] if hi > lo else [sizes[0]]
    return xs, [roof_at(sweep, ratio * x) for x in xs]


def log_subs(lo, hi):
    """The mantissas of a log axis's labelled ticks: 1, 2, 5 per decade over a short range, 1 alone
    over a long one (plain labels need room)."""
    decades = math.log10(hi / lo) if lo > 0 and hi > lo else 0
    return (1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)


def _log_axis(axis, lo, hi):
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    axis.set_major_locator(LogLocator(base=10, subs=log_subs(lo, hi)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: plain_number(v)))
    axis.set_minor_formatter(NullFormatter())


def _style_axes(ax, matmul):
    """Call after plotting (the y range picks the ticks): log-2 x with the table's size labels, log-10
    y with plain labels."""
    from matplotlib.ticker import FuncFormatter, NullFormatter
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: size_tick(v, matmul)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    _log_axis(ax.yaxis, *ax.get_ylim())


def plot(path, results, peaks, title="", notes=(), overhead=None, models=None):
    """Write the PNG; returns None, or the reason it was skipped (matplotlib missing)."""
    try:
        fig = figure(results, peaks, title, notes, overhead, models)
    except ImportError as e:
        from ..backends.diagnosis import DIST
        return (f"matplotlib is not installed ({e}); no plot written. Install it with "
                f"pip install '{DIST}[bench]'")
    fig.savefig(path, dpi=110)
    return None


def figure(results, peaks, title="", notes=(), overhead=None, models=None):
    """The matplotlib Figure (ImportError without matplotlib): one panel per workload (default
    thread setting; the 1-thread rows of large cases as x markers on dotted lines), each with the copy roofline at the workload's footprint and, where CUDA rows
    exist, the crossover size from which CUDA beats the CPU; one panel of per-op host overhead when
    `overhead` records are given, one of training steps when `models` records are; `notes` printed
    under the figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    one_thread = [r for r in results if r.get("thread_setting") == "1" and r["error"] is None]
    results = [r for r in results if r.get("thread_setting", "default") == "default"]
    workloads = list(dict.fromkeys(r["workload"] for r in results))
    overhead = [r for r in overhead or [] if r.get("median_s") is not None]
    trained = [dict(r, threads_label="1 thread" if r.get("thread_setting") == "1" else "default threads")
               for r in models or [] if r.get("median_s") is not None]
    panels = len(workloads) + (1 if overhead else 0) + (1 if trained else 0)
    cols = min(4, max(1, panels))
    rows = max(1, math.ceil(panels / cols))
    notes = [n for n in notes if n]
    fig = Figure(figsize=(4.4 * cols, 3.6 * rows + 0.25 * len(notes)), layout="constrained")
    FigureCanvasAgg(fig)
    if notes:
        fig.get_layout_engine().set(rect=(0, 0.02 + 0.035 * len(notes) / rows, 1, 1 - 0.02 - 0.035 * len(notes) / rows))
    impls = list(dict.fromkeys([r["impl"] for r in results] + [r["impl"] for r in overhead + trained]))
    colors = {name: f"C{i}" for i, name in enumerate(impls)}
    devices = list(dict.fromkeys(r["device"] for r in results))
    styles = {d: ("-", "o") if d == "cpu" else ("--", "s") for d in devices}
    cross = {(c["workload"], c["device"]): c for c in crossovers(results)}
    for k, w in enumerate(workloads):
        ax = fig.add_subplot(rows, cols, k + 1)
        mine = [r for r in results if r["workload"] == w and r["error"] is None]
        unit = next((r["unit"] for r in results if r["workload"] == w), "")
        for d in devices:
            for name in impls:
                rs = sorted((r for r in mine if r["device"] == d and r["impl"] == name), key=lambda r: r["size"])
                pts = [(r["size"], r["throughput"]) for r in rs]
                if pts:
                    ls, mk = styles[d]
                    ax.plot(*zip(*pts), ls, marker=mk, color=colors[name], label=f"{name} ({d})", markersize=3)
                    band = [(r["size"], r["throughput"] * r["median_s"] / r["q3_s"],
                             r["throughput"] * r["median_s"] / r["q1_s"]) for r in rs
                            if r.get("q1_s") and r.get("q3_s") and r.get("median_s")]
                    if band:  # the IQR as a band: throughput at the first and third quartile times
                        ax.fill_between(*zip(*band), color=colors[name], alpha=0.15, lw=0)
                    bad = [(r["size"], r["throughput"]) for r in rs if r.get("unstable")]
                    if bad:  # marked rows (spread, oversubscribed, busy): a red ring
                        ax.plot(*zip(*bad), "o", mfc="none", mec="red", markersize=6, mew=0.8)
                pts = sorted((r["size"], r["throughput"]) for r in one_thread
                             if r["workload"] == w and r["device"] == d and r["impl"] == name)
                if pts:  # the large cases' 1-thread rows: markers on a thin dotted line
                    ax.plot(*zip(*pts), ":", marker="x", color=colors[name], lw=0.8, markersize=4,
                            label=f"{name} ({d}, 1 thread)")
            curve = _roof_curve(peaks.get(d, {}).get("sweep"), [r for r in mine if r["device"] == d]) \
                if unit == "GB/s" else None
            if curve:
                ax.plot(*curve, color="gray", ls=styles[d][0], lw=1.0, alpha=0.8, label=f"copy at same footprint ({d})")
            c = cross.get((w, d))
            if c is not None and c["size"] is not None:
                ax.axvline(c["size"], color="black", ls=":", lw=0.9)
                ax.axvspan(c["size"], c["sizes"][-1], color="gold", alpha=0.12, lw=0)
                ax.annotate(f"{d} wins ->", (c["size"], 0.97), xycoords=("data", "axes fraction"), fontsize=6,
                            ha="left", va="top", xytext=(2, 0), textcoords="offset points")
            elif c is not None:
                ax.annotate(f"CPU wins at every size", (0.02, 0.97), xycoords="axes fraction", fontsize=6,
                            ha="left", va="top")
        _style_axes(ax, w.startswith("matmul"))
        ax.set_title(panel_title(w, mine or [r for r in results if r["workload"] == w]), fontsize=9)
        ax.set_xlabel("n (n x n)" if w.startswith("matmul") else "elements")
        ax.set_ylabel(unit)
        ax.grid(True, which="major", alpha=0.3)
    handles = {}
    for ax in fig.axes:  # one legend for every workload panel: the same libraries and devices everywhere
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    if handles:
        fig.legend(list(handles.values()), list(handles), loc="outside right upper", fontsize=7)
    if overhead:
        ax = fig.add_subplot(rows, cols, len(workloads) + 1)
        _overhead_panel(ax, overhead, colors)
    if trained:
        ax = fig.add_subplot(rows, cols, panels)
        _models_panel(ax, trained, colors)
    if title:
        fig.suptitle(title, fontsize=9)
    for i, note in enumerate(notes):
        fig.text(0.5, 0.005 + 0.035 * (len(notes) - 1 - i) / rows, note, ha="center", va="bottom", fontsize=8,
                 color="firebrick")
    return fig


def _bars(ax, records, key, label, colors, scale):
    """Horizontal bars of median_s * scale: one group per key(record), one bar per library; a black
    tick at each group's target_s where a record has one."""
    keys = list(dict.fromkeys(key(r) for r in records))
    names = list(dict.fromkeys(r["impl"] for r in records))
    height = 0.8 / max(1, len(names))
    for j, name in enumerate(names):
        ys, xs = [], []
        for i, k in enumerate(keys):
            r = next((r for r in records if key(r) == k and r["impl"] == name), None)
            if r is not None:
                ys.append(i + j * height)
                xs.append(r["median_s"] * scale)
        ax.barh(ys, xs, height=height, color=colors.get(name), label=name)
    for i, k in enumerate(keys):
        r = next((r for r in records if key(r) == k and r.get("target_s")), None)
        if r is not None:
            ax.plot([r["target_s"] * scale] * 2, [i - 0.1, i + 0.8], color="black", lw=0.8)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(keys))])
    ax.set_yticklabels([label(k) for k in keys], fontsize=6)
    ax.invert_yaxis()
    ax.set_xscale("log")
    _log_axis(ax.xaxis, *ax.get_xlim())
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=6)


def _overhead_panel(ax, records, colors):
    emulated = {r["device"] for r in records if r.get("emulated")}
    _bars(ax, records, lambda r: (r["device"], r["workload"]),
          lambda k: f"{k[1]}\n{k[0]}" + (" (emu)" if k[0] in emulated else ""), colors, 1e6)
    ax.set_xlabel("us per call (median; black tick: target)")
    ax.set_title("per-op host overhead: 8 float32", fontsize=9)


def _models_panel(ax, records, colors):
    _bars(ax, records, lambda r: (r["device"], r["model"], r["threads_label"]),
          lambda k: f"{k[1]}\n{k[0]}, {k[2]}", colors, 1e3)
    ax.set_xlabel("ms per training step (median)")
    ax.set_title("training step vs torch (same weights)", fontsize=9)


def write(out_dir, doc):
    """Write the JSON and the plot into out_dir; returns (json path, png path or None, note or None)."""
    os.makedirs(out_dir, exist_ok=True)
    jpath = os.path.join(out_dir, JSON_NAME)
    write_json(jpath, doc)
    if doc.get("no_plot"):
        return jpath, None, "plot not requested (--no-plot)"
    ppath = os.path.join(out_dir, PNG_NAME)
    title = f"tensorlab-bench {doc.get('version', '')} ({doc.get('mode', '')}), {doc.get('created', '')}"
    notes = [cuda_note(doc)] + torch_notes(doc)
    note = plot(ppath, doc["results"], doc["peaks"], title, notes, doc.get("overhead"), doc.get("models"))
    return jpath, (None if note else ppath), note
