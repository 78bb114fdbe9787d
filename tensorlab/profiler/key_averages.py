"""key_averages(): totals per name in torch.profiler's shape (EventList of FunctionEventAvg, and
its table). Times are microseconds, memory bytes, as in torch."""
from __future__ import annotations



class FunctionEventAvg:
    """One row: an op, a record_function range, a kernel or a copy, summed over its calls."""

    def __init__(self, key, kind, input_shapes=None, stack=None):
        self.key = key
        self.kind = kind  # "op", "range", "kernel", "copy"
        self.input_shapes = input_shapes
        self.stack = stack or []
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_device_memory_usage = 0

    # torch's older names
    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)
    cuda_memory_usage = property(lambda self: self.device_memory_usage)
    self_cuda_memory_usage = property(lambda self: self.self_device_memory_usage)

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self):
        return self.device_time_total / self.count if self.count else 0.0

    cuda_time = device_time

    def add(self, cpu, self_cpu, dev, self_dev, cmem, self_cmem, dmem, self_dmem):
        self.count += 1
        self.cpu_time_total += cpu
        self.self_cpu_time_total += self_cpu
        self.device_time_total += dev
        self.self_device_time_total += self_dev
        self.cpu_memory_usage += cmem
        self.self_cpu_memory_usage += self_cmem
        self.device_memory_usage += dmem
        self.self_device_memory_usage += self_dmem

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time_total:.3f}us self_device_time={self.self_device_time_total:.3f}us "
                f"device_time={self.device_time_total:.3f}us input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} device_memory_usage={self.device_memory_usage} "
                f"count={self.count}>")


_SORT_KEYS = ("cpu_time", "cuda_time", "device_time", "cpu_time_total", "cuda_time_total", "device_time_total",
              "self_cpu_time_total", "self_cuda_time_total", "self_device_time_total", "cpu_memory_usage",
              "cuda_memory_usage", "device_memory_usage", "self_cpu_memory_usage", "self_cuda_memory_usage",
              "self_device_memory_usage", "count")


class EventList(list):
    """A list of FunctionEventAvg rows with torch's table()."""

    def __init__(self, rows=(), self_cpu_total=0.0, self_device_total=0.0, shapes=False, memory=True):
        super().__init__(rows)
        self._memory = memory
        self.self_cpu_time_total = self_cpu_total
        self.self_device_time_total = self_device_total
        self._shapes = shapes

    def table(self, sort_by=None, row_limit=100, max_name_column_width=55, max_shapes_column_width=80,
              header=None, top_level_events_only=False):
        rows = list(self)
        if top_level_events_only:
            rows = [r for r in rows if r.kind in ("op", "range")]
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise AttributeError(f"table(): sort_by={sort_by!r} is not a FunctionEventAvg attribute; use one of "
                                     f"{', '.join(_SORT_KEYS)}")
            rows.sort(key=lambda r: getattr(r, sort_by), reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        return _table(rows, self, max_name_column_width, max_shapes_column_width, header)

    def __str__(self):
        return self.table()

    def total_average(self):
        """One FunctionEventAvg, key "Total", summing every row (torch's EventList.total_average)."""
        total = FunctionEventAvg("Total", "total")
        for r in self:
            total.count += r.count
            for name in ("cpu_time_total", "self_cpu_time_total", "device_time_total", "self_device_time_total",
                         "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage",
                         "self_device_memory_usage"):
                setattr(total, name, getattr(total, name) + getattr(r, name))
        return total


def _fmt_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _fmt_mem(n):
    gb, mb, kb = 1024 ** 3, 1024 ** 2, 1024
    a = abs(n)
    if a >= gb:
        return f"{n / gb:.2f} Gb"
    if a >= mb:
        return f"{n / mb:.2f} Mb"
    if a >= kb:
        return f"{n / kb:.2f} Kb"
    return f"{n} b"


def _pct(x, total):
    return f"{100.0 * x / total:.2f}%" if total else "0.00%"


def _table(rows, lst, name_w, shapes_w, header):
    cpu_total, dev_total = lst.self_cpu_time_total, lst.self_device_time_total
    has_dev = dev_total > 0 or any(r.device_time_total for r in lst)
    has_cmem = lst._memory and any(r.self_cpu_memory_usage for r in lst)
    has_dmem = lst._memory and any(r.self_device_memory_usage for r in lst)
    cols = [("Name", lambda r: r.key if len(r.key) <= name_w else r.key[:name_w - 3] + "...", "<")]
    cols += [("Self CPU %", lambda r: _pct(r.self_cpu_time_total, cpu_total), ">"),
             ("Self CPU", lambda r: _fmt_time(r.self_cpu_time_total), ">"),
             ("CPU total %", lambda r: _pct(r.cpu_time_total, cpu_total), ">"),
             ("CPU total", lambda r: _fmt_time(r.cpu_time_total), ">"),
             ("CPU time avg", lambda r: _fmt_time(r.cpu_time), ">")]
    if has_dev:
        cols += [("Self CUDA", lambda r: _fmt_time(r.self_device_time_total), ">"),
                 ("Self CUDA %", lambda r: _pct(r.self_device_time_total, dev_total), ">"),
                 ("CUDA total", lambda r: _fmt_time(r.device_time_total), ">"),
                 ("CUDA time avg", lambda r: _fmt_time(r.device_time), ">")]
    if has_cmem:
        cols += [("CPU Mem", lambda r: _fmt_mem(r.cpu_memory_usage), ">"),
                 ("Self CPU Mem", lambda r: _fmt_mem(r.self_cpu_memory_usage), ">")]
    if has_dmem:
        cols += [("CUDA Mem", lambda r: _fmt_mem(r.device_memory_usage), ">"),
                 ("Self CUDA Mem", lambda r: _fmt_mem(r.self_device_memory_usage), ">")]
    cols.append(("# of Calls", lambda r: str(r.count), ">"))
    if lst._shapes:
        cols.append(("Input Shapes", lambda r: _cut(str(r.input_shapes or []), shapes_w), "<"))
    cells = [[f(r) for _, f, _ in cols] for r in rows]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, (h, _, _) in enumerate(cols)]
    sep = "  ".join("-" * w for w in widths)

    def line(vals):
        return "  ".join(f"{v:{cols[i][2]}{widths[i]}}" for i, v in enumerate(vals)).rstrip()

    out = []
    if header:
        out.append("=" * len(sep))
        out.append(header)
    out += [sep, line([h for h, _, _ in cols]), sep]
    out += [line(c) for c in cells]
    out.append(sep)
    out.append(f"Self CPU time total: {_fmt_time(cpu_total)}")
    if has_dev:
        out.append(f"Self CUDA time total: {_fmt_time(dev_total)}")
    return "\n".join(out) + "\n"


def _cut(s, w):
    return s if len(s) <= w else s[:w - 3] + "..."


def _mem_split(mems):
    cpu = sum(m.nbytes for m in mems if m.device == "cpu")
    return cpu, sum(m.nbytes for m in mems) - cpu


def _stack_of(x):
    """The record's Python stack, innermost first (with_stack: the whole user stack of an op)."""
    full = getattr(x, "stack", None)
    if full:
        return list(full)
    return [f"{x.file}({x.line})"] if x.file else []


def _us(a, b):
    return max(0.0, (b - a) * 1e6)


def function_events(rec):
    """Per op / range: (record, cpu total, self cpu, device total, self device, cpu mem, self cpu mem,
    device mem, self device mem) in record order."""
    children = {}
    for x in (*rec.ranges, *rec.ops):
        children.setdefault(x.parent, []).append(x)
    memo = {}

    def stats(x):
        got = memo.get(id(x))
        if got is not None:
            return got
        cpu = _us(x.start, x.end)
        if x.kind == "op":
            # as torch: an op's device time is the sum of its kernels and copies, whose rows own it as
            # self time (the op's self device time is 0), so the Self CUDA % column sums to 100%
            dev = sum((k.dev_dur or 0.0) for k in (*x.kernels, *x.copies)) * 1e6
            cm, dm = _mem_split(x.mems)
            got = (x, cpu, cpu, dev, 0.0, cm, cm, dm, dm)
        else:
            kids = [stats(c) for c in children.get(x.id, ())]
            self_cpu = max(0.0, cpu - sum(k[1] for k in kids))
            dev = sum(k[3] for k in kids)
            cm, dm = sum(k[5] for k in kids), sum(k[7] for k in kids)
            got = (x, cpu, self_cpu, dev, 0.0, cm, 0, dm, 0)
        memo[id(x)] = got
        return got

    return [stats(x) for x in sorted((*rec.ranges, *rec.ops), key=lambda x: (x.start, x.id))]


def key_averages(rec, group_by_input_shape=False, group_by_stack_n=0):
    rows = {}
    self_cpu_total = 0.0
    for x, cpu, self_cpu, dev, self_dev, cm, scm, dm, sdm in function_events(rec):
        shapes = getattr(x, "shapes", None) if x.kind == "op" else None
        key = [x.name]
        if group_by_input_shape:
            key.append(str(shapes))
        stack = _stack_of(x)
        if group_by_stack_n > 0:
            key.append(str(stack[:group_by_stack_n]))
        key = tuple(key)
        row = rows.get(key)
        if row is None:
            row = rows[key] = FunctionEventAvg(x.name, x.kind, shapes if group_by_input_shape else None, stack)
        row.add(cpu, self_cpu, dev, self_dev, cm, scm, dm, sdm)
        self_cpu_total += self_cpu
    dev_total = 0.0
    for d in (*rec.kernels, *rec.copies):
        key = ("\x00device", d.name)
        row = rows.get(key)
        if row is None:
            row = rows[key] = FunctionEventAvg(d.name, d.kind)
        t = (d.dev_dur or 0.0) * 1e6
        row.add(0.0, 0.0, t, t, 0, 0, 0, 0)
        dev_total += t
    return EventList(rows.values(), self_cpu_total, dev_total, shapes=group_by_input_shape,
                     memory=rec.prof.profile_memory)


def events(rec):
    rows, self_cpu_total = [], 0.0
    for x, cpu, self_cpu, dev, self_dev, cm, scm, dm, sdm in function_events(rec):
        row = FunctionEventAvg(x.name, x.kind, getattr(x, "shapes", None) if x.kind == "op" else None, _stack_of(x))
        row.add(cpu, self_cpu, dev, self_dev, cm, scm, dm, sdm)
        row.id, row.start_us, row.parent = x.id, (x.start - rec.t0) * 1e6, x.parent
        rows.append(row)
        self_cpu_total += self_cpu
    dev_total = sum((d.dev_dur or 0.0) for d in (*rec.kernels, *rec.copies)) * 1e6
    return EventList(rows, self_cpu_total, dev_total, shapes=rec.prof.record_shapes, memory=rec.prof.profile_memory)


_STACK_METRICS = ("self_cpu_time_total", "self_cuda_time_total", "self_device_time_total")


def export_stacks(rec, path, metric="self_cpu_time_total"):
    """Collapsed stacks for flame graphs (flamegraph.pl, speedscope): one line per op call with a
    recorded stack, "outermost;...;innermost;op value", the value in whole microseconds of `metric`
    (torch's Profiler.export_stacks format). Needs with_stack=True."""
    if metric not in _STACK_METRICS:
        raise ValueError(f"export_stacks(): metric must be one of {', '.join(_STACK_METRICS)}, not {metric!r}")
    device = metric != "self_cpu_time_total"
    lines = []
    for x, cpu, self_cpu, dev, self_dev, *_ in function_events(rec):
        stack = getattr(x, "stack", None)
        if x.kind != "op" or not stack:
            continue
        value = dev if device else self_cpu  # an op's device time is its kernels'
        if int(value) <= 0:
            continue
        frames = [f.replace(";", ",").replace(" ", "_") for f in reversed(stack)]
        lines.append(";".join(frames + [x.name]) + f" {int(value)}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + ("\n" if lines else ""))
