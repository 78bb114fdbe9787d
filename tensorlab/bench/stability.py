"""When the benchmark's numbers should not be trusted, said next to them: the machine's load and a VM's
CPU steal while it runs (the header), a mark on every row whose spread or thread count makes its time
unreliable, and the ratios built from such rows; and the regression table of `--compare OLD.json`.

A row is marked
- `spread` when its IQR is more than SPREAD_LIMIT of its median (the time is not one number);
- `oversubscribed` when it ran more CPU threads than the CPUs left free (the CPUs this process may use,
  less the load other processes put on them);
- `busy` (CPU rows) when the machine was busy: a 1-minute load above the CPUs, or steal above STEAL_LIMIT.
A ratio is unreliable when either of its two rows is marked: the table prints it as `1.23x?`."""
from __future__ import annotations

import os
import subprocess
import time

SPREAD_LIMIT = 0.25   # IQR / median
STEAL_LIMIT = 5.0     # % of CPU time a hypervisor took while we sampled
NOISE_FLOOR = 0.10    # --compare: a change smaller than this (or than the rows' own spread) is noise


def usable_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _cpu_times():
    """(total, steal) jiffies from /proc/stat's aggregate line, or None off Linux."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    vals = [int(v) for v in fields[1:]]
    steal = vals[7] if len(vals) > 7 else 0
    return sum(vals[:8]), steal


def load_check(sample_s=0.25):
    """The machine while the benchmark starts: {"cpus", "loadavg_1m", "steal_pct", "busy"}."""
    cpus = usable_cpus()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = None
    a = _cpu_times()
    time.sleep(sample_s)
    b = _cpu_times()
    steal = None
    if a is not None and b is not None and b[0] > a[0]:
        steal = 100.0 * (b[1] - a[1]) / (b[0] - a[0])
    busy = (load is not None and load > cpus + 0.5) or (steal is not None and steal > STEAL_LIMIT)
    return {"cpus": cpus, "loadavg_1m": load, "steal_pct": steal, "busy": bool(busy)}


def load_text(load):
    parts = [f"load: {load['cpus']} usable CPU{'s' if load['cpus'] != 1 else ''}"]
    if load.get("loadavg_1m") is not None:
        parts.append(f"1-min load average {load['loadavg_1m']:.2f}")
    if load.get("steal_pct") is not None:
        parts.append(f"CPU steal {load['steal_pct']:.1f}%")
    text = ", ".join(parts)
    if load.get("busy"):
        text += (" - BUSY: other work competes for these CPUs; every CPU row is marked and its ratios are not to "
                 "be trusted")
    return text


def _free_cpus(load):
    """CPUs left for the benchmark: the usable ones less what other processes keep busy (the load average
    counts this process too: one thread of it)."""
    other = max(0.0, (load.get("loadavg_1m") or 0.0) - 1.0)
    return max(1.0, load["cpus"] - other)


def marks(record, load):
    """The reasons record's time is unreliable (empty: it is fine)."""
    out = []
    med, iqr = record.get("median_s"), record.get("iqr_s")
    if med and iqr is not None and iqr > SPREAD_LIMIT * med:
        out.append("spread")
    threads = record.get("threads")
    if record.get("device") == "cpu" and isinstance(threads, int) and threads > 1 and threads > _free_cpus(load):
        out.append("oversubscribed")
    if record.get("device") == "cpu" and load.get("busy"):
        out.append("busy")
    return out


def annotate(records, load, key):
    """Set each record's "unstable" (its marks) and, on rows with ratios, "unreliable_ratios" (the
    baselines whose ratio involves a marked row). key(record) -> the measurement both rows of a ratio share."""
    for r in records:
        r["unstable"] = marks(r, load)
    by = {}
    for r in records:
        by[(key(r), r["impl"])] = r
    for r in records:
        ratios = r.get("ratios") or {}
        bad = [b for b in ratios if r["unstable"] or (by.get((key(r), b)) or {}).get("unstable")]
        if bad:
            r["unreliable_ratios"] = bad
    return records


def ratio_text(r, b):
    ratios = r.get("ratios", {})
    if b not in ratios:
        return ""
    return f"{ratios[b]:.2f}x" + ("?" if b in r.get("unreliable_ratios", ()) else "")


def mark_text(r):
    return ",".join(r.get("unstable") or ())


FOOTNOTE = ("?: a ratio built from a marked row, not to be trusted. Marks: spread (IQR above "
            f"{SPREAD_LIMIT:.0%} of the median), oversubscribed (more threads than the CPUs left free by other "
            "work), busy (the machine was loaded or a hypervisor stole CPU time: see the load line).")


def machine_identity():
    """{"cpu_model", "commit", "dirty"}: what the JSON needs to say which machine and which code ran."""
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    if not model:
        import platform
        model = platform.processor() or platform.machine() or None
    from ..backends.diagnosis import checkout_root
    commit = dirty = None
    root = checkout_root()
    if root is not None:
        try:
            commit = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True,
                                    timeout=10).stdout.strip() or None
            status = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=10)
            dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            pass
    return {"cpu_model": model, "commit": commit, "dirty": dirty}


# -- --compare OLD.json --------------------------------------------------------------------------------
def _key(r):
    return (r["device"], r["workload"], r["size"], r["impl"], r.get("thread_setting", "default"))


def compare(old_doc, new_doc):
    """Rows matching between an earlier run and this one: {"device", "workload", "size", "impl", "threads",
    "old_s", "new_s", "change" (new/old), "verdict": "slower" | "faster" | "same" | "unreliable"}."""
    old = {_key(r): r for r in old_doc.get("results", []) if r.get("error") is None and r.get("median_s")}
    out = []
    for r in new_doc.get("results", []):
        o = old.get(_key(r))
        if o is None or r.get("error") is not None or not r.get("median_s"):
            continue
        change = r["median_s"] / o["median_s"]
        noise = max(NOISE_FLOOR, (r.get("iqr_s") or 0) / r["median_s"], (o.get("iqr_s") or 0) / o["median_s"])
        if r.get("unstable") or o.get("unstable"):
            verdict = "unreliable"
        elif change > 1 + noise:
            verdict = "slower"
        elif change < 1 / (1 + noise):
            verdict = "faster"
        else:
            verdict = "same"
        out.append({"device": r["device"], "workload": r["workload"], "size": r["size"], "impl": r["impl"],
                    "threads": r.get("thread_setting", "default"), "old_s": o["median_s"], "new_s": r["median_s"],
                    "change": change, "verdict": verdict})
    return out
