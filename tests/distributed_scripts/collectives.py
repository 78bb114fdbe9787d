"""Every collective and ReduceOp against NumPy, on the device named by argv[1] ("cpu" or "cuda");
argv[2] == "quick" runs the smaller set (CUDA under the emulation driver). Launched on 2 and 4 ranks
by tests/test_distributed.py; prints "OK <rank>" when every check passed."""
import sys
import warnings

import numpy as np

import tensorlab as tl
import tensorlab.distributed as dist
from _common import close, data, host, reference, tensor

DEV = sys.argv[1] if len(sys.argv) > 1 else "cpu"
QUICK = len(sys.argv) > 2 and sys.argv[2] == "quick"

dist.init_process_group("mpi")
R, N = dist.get_rank(), dist.get_world_size()
assert dist.is_initialized() and dist.get_backend() == "mpi"
DTYPES = ["float32", "int64", "bool"] if QUICK else ["float32", "float64", "int64", "bool"]
OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]
seed = [0]


def inputs(shape, dtype, small=False):
    """(this rank's tensor, every rank's values as NumPy): the values as the tensors hold them."""
    seed[0] += 1
    arrays = [host(tensor(data(k, shape, dtype, seed[0], small), dtype, "cpu")) for k in range(N)]
    return tensor(arrays[R], dtype, DEV), arrays


# -- all_reduce: every dtype x op ---------------------------------------------------------------------------------------
for dtype in DTYPES:
    for op in OPS:
        t, arrays = inputs((3, 5), dtype, small=(op == "PRODUCT"))
        v0 = t._version
        if dtype == "bool" and op == "AVG":
            try:
                dist.all_reduce(t, op=dist.ReduceOp.AVG)
            except RuntimeError as e:
                assert "Cannot use ReduceOp.AVG with boolean inputs" in str(e), e
                assert np.array_equal(host(t), arrays[R])  # unchanged
            else:
                raise AssertionError("AVG on bool did not raise")
            continue
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        close(t, reference(op, arrays, dtype), dtype, f"all_reduce {op} {dtype}")
        assert t._version > v0, "all_reduce must bump the version counter"
for dtype in (["int64", "bool"]):
    for op in ("BAND", "BOR", "BXOR"):
        t, arrays = inputs((7,), dtype)
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        close(t, reference(op, arrays, dtype), dtype, f"all_reduce {op} {dtype}")
try:
    dist.all_reduce(tl.ones(2, device=DEV), op=dist.ReduceOp.BAND)
except RuntimeError as e:
    assert "BAND" in str(e) and "floating point" in str(e), e
else:
    raise AssertionError("BAND on float did not raise")
if not QUICK:
    for dtype in ("float16", "bfloat16", "int32", "int8", "uint8"):
        t, arrays = inputs((4, 3), dtype, small=True)
        dist.all_reduce(t)
        close(t, reference("SUM", arrays, dtype), dtype, f"all_reduce SUM {dtype}")
    # a non-contiguous view: the result lands through its strides, the rest of the base is untouched
    base = tl.arange(24, dtype=tl.float64, device=DEV).reshape(4, 6) * (R + 1)
    view = base[:, ::2].t()
    dist.all_reduce(view)
    expected = np.arange(24, dtype=np.float64).reshape(4, 6) * (R + 1)
    expected[:, ::2] = np.arange(24, dtype=np.float64).reshape(4, 6)[:, ::2] * sum(range(1, N + 1))
    close(base, expected, "float64", "all_reduce of a transposed strided view")
    # 0-dim and empty tensors
    z = tl.tensor(float(R + 1), device=DEV)
    dist.all_reduce(z, op=dist.ReduceOp.MAX)
    assert z.shape == () and z.item() == N
    e = tl.empty(0, device=DEV)
    dist.all_reduce(e)
    assert e.shape == (0,)

# -- broadcast, reduce --------------------------------------------------------------------------------------------------
for dtype in DTYPES:
    src = N - 1
    t, arrays = inputs((2, 3), dtype)
    dist.broadcast(t, src=src)
    close(t, arrays[src], dtype, f"broadcast {dtype}")
    dst = 1 % N
    for op in ("SUM", "MAX"):
        t, arrays = inputs((5,), dtype)
        dist.reduce(t, dst=dst, op=getattr(dist.ReduceOp, op))
        close(t, reference(op, arrays, dtype) if R == dst else arrays[R], dtype, f"reduce {op} {dtype}")
t, arrays = inputs((3,), "float32")
dist.broadcast(t, group_src=0)
close(t, arrays[0], "float32", "broadcast group_src")

# -- all_gather (uneven sizes), all_gather_into_tensor, reduce_scatter_tensor -------------------------------------------
for dtype in DTYPES:
    seed[0] += 1
    arrays = [host(tensor(data(k, (k + 1,), dtype, seed[0]), dtype, "cpu")) for k in range(N)]
    outs = [tensor(np.zeros(k + 1), dtype, DEV) for k in range(N)]
    dist.all_gather(outs, tensor(arrays[R], dtype, DEV))
    for k in range(N):
        close(outs[k], arrays[k], dtype, f"all_gather[{k}] {dtype}")
    t, arrays = inputs((2, 3), dtype)
    cat = tensor(np.zeros((2 * N, 3)), dtype, DEV)
    dist.all_gather_into_tensor(cat, t)
    close(cat, np.concatenate(arrays), dtype, f"all_gather_into_tensor concat {dtype}")
    stack = tensor(np.zeros((N, 2, 3)), dtype, DEV)
    dist.all_gather_into_tensor(stack, t)
    close(stack, np.stack(arrays), dtype, f"all_gather_into_tensor stack {dtype}")
    for op in (["SUM", "MAX"] if dtype == "bool" else ["SUM", "AVG", "MIN"]):
        t, arrays = inputs((N * 2, 3), dtype)
        out = tensor(np.zeros((2, 3)), dtype, DEV)
        dist.reduce_scatter_tensor(out, t, op=getattr(dist.ReduceOp, op))
        close(out, reference(op, arrays, dtype)[2 * R:2 * R + 2], dtype, f"reduce_scatter_tensor {op} {dtype}")

# -- gather, scatter, all_to_all_single --------------------------------------------------------------------------------
for dtype in DTYPES:
    dst = N - 1
    t, arrays = inputs((4,), dtype)
    gl = [tensor(np.zeros(4), dtype, DEV) for _ in range(N)] if R == dst else None
    dist.gather(t, gl, dst=dst)
    if R == dst:
        for k in range(N):
            close(gl[k], arrays[k], dtype, f"gather[{k}] {dtype}")
    seed[0] += 1
    parts = [host(tensor(data(k, (2, 2), dtype, seed[0]), dtype, "cpu")) for k in range(N)]
    out = tensor(np.zeros((2, 2)), dtype, DEV)
    dist.scatter(out, [tensor(p, dtype, DEV) for p in parts] if R == 0 else None, src=0)
    close(out, parts[R], dtype, f"scatter {dtype}")
    # all_to_all_single, equal splits: rank r's chunk k goes to rank k
    seed[0] += 1
    ins = [host(tensor(data(k, (N * 2, 3), dtype, seed[0]), dtype, "cpu")) for k in range(N)]
    out = tensor(np.zeros((N * 2, 3)), dtype, DEV)
    dist.all_to_all_single(out, tensor(ins[R], dtype, DEV))
    close(out, np.concatenate([ins[k][2 * R:2 * R + 2] for k in range(N)]), dtype, f"all_to_all_single {dtype}")
# uneven splits: rank r sends k + 1 rows to rank k
splits_in = [k + 1 for k in range(N)]
seed[0] += 1
ins = [data(k, (sum(splits_in), 2), "float64", seed[0]) for k in range(N)]
out = tl.zeros((N * (R + 1), 2), dtype=tl.float64, device=DEV)
dist.all_to_all_single(out, tl.tensor(ins[R], device=DEV), output_split_sizes=[R + 1] * N,
                       input_split_sizes=splits_in)
offs = np.cumsum([0] + splits_in)
close(out, np.concatenate([ins[k][offs[R]:offs[R + 1]] for k in range(N)]), "float64", "all_to_all_single uneven")

# -- point to point ---------------------------------------------------------------------------------------------------
right, left = (R + 1) % N, (R - 1) % N
for dtype in DTYPES:
    t, arrays = inputs((3, 2), dtype)
    got = tensor(np.zeros((3, 2)), dtype, DEV)
    ws = [dist.isend(t, dst=right, tag=7), dist.irecv(got, src=left, tag=7)]
    for w in ws:
        assert w.wait() is True
    close(got, arrays[left], dtype, f"isend/irecv ring {dtype}")
    assert ws[1].source_rank() == left
if R == 0:
    senders = set()
    for _ in range(N - 1):
        buf = tl.zeros(2, device=DEV)
        s = dist.recv(buf)  # any source
        senders.add(s)
        assert host(buf).tolist() == [float(s), float(s) * 2], (s, host(buf))
    assert senders == set(range(1, N))
else:
    dist.send(tl.tensor([float(R), float(R) * 2], device=DEV), dst=0)
# a message of the wrong size: RuntimeError on the receiver, its tensor untouched
if R == 0:
    dist.send(tl.ones(3, device=DEV), dst=1, tag=3)
elif R == 1:
    buf = tl.full((4,), 5.0, device=DEV)
    try:
        dist.recv(buf, src=0, tag=3)
    except RuntimeError as e:
        assert "12 bytes" in str(e) and "16" in str(e), e
        assert host(buf).tolist() == [5.0] * 4
    else:
        raise AssertionError("a short message did not raise")
for bad, kind in ((R, "destination"),):
    try:
        dist.send(tl.ones(1, device=DEV), dst=bad)
    except ValueError as e:
        assert f"Invalid {kind} rank" in str(e), e
    else:
        raise AssertionError("send to self did not raise")

# -- async work handles --------------------------------------------------------------------------------------------------
t, arrays = inputs((64,), "float32")
w = dist.all_reduce(t, async_op=True)
assert isinstance(w, dist.Work)
while not w.is_completed():
    pass
assert w.is_success() and w.exception() is None and w.wait() is True
close(t, reference("SUM", arrays, "float32"), "float32", "async all_reduce")
assert w.result()[0] is not t and w.result()[0].data_ptr() == t.data_ptr()
t2, arrays2 = inputs((2,), "int64")
works = [dist.broadcast(t2, src=0, async_op=True), dist.barrier(async_op=True)]
for w in works:
    w.wait()
close(t2, arrays2[0], "int64", "async broadcast")
# the atomic-metadata rule: the collective works on the layout pinned at the call; a resize_ before
# wait() changes nothing it does (shrinking keeps the storage: the first element gets the result)
t, arrays = inputs((6,), "float64")
w = dist.all_reduce(t, async_op=True)
t.resize_(2)
w.wait()
assert t.shape == (2,)
close(t, reference("SUM", arrays, "float64")[:2], "float64", "all_reduce across a concurrent resize_")

# -- groups ------------------------------------------------------------------------------------------------------------
odd = [k for k in range(N) if k % 2 == 1]
g = dist.new_group(odd)
if R in odd:
    assert dist.get_rank(g) == odd.index(R) and dist.get_world_size(g) == len(odd)
    assert dist.get_process_group_ranks(g) == odd and dist.get_global_rank(g, 0) == odd[0]
    t, arrays = inputs((3,), "float32")
    dist.all_reduce(t, group=g)
    close(t, reference("SUM", [arrays[k] for k in odd], "float32"), "float32", "all_reduce on a subgroup")
    t, arrays = inputs((2,), "int64")
    dist.broadcast(t, src=odd[-1], group=g)
    close(t, arrays[odd[-1]], "int64", "broadcast on a subgroup (global src)")
    try:
        dist.broadcast(t, src=0, group=g)
    except ValueError as e:
        assert "is not part of group" in str(e), e
    else:
        raise AssertionError("a src outside the group did not raise")
else:
    assert g == dist.GroupMember.NON_GROUP_MEMBER
    assert dist.get_rank(g) == -1 and dist.get_world_size(g) == -1
    t = tl.ones(2, device=DEV)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert dist.all_reduce(t, group=g) is None
    assert any("does not belong to the given group" in str(c.message) for c in caught)
    assert host(t).tolist() == [1.0, 1.0]
first = [0, N - 1]
g2 = dist.new_group(first, use_local_synchronization=True) if R in first else None
if R in first:
    t = tl.tensor([float(R)], device=DEV)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=g2)
    assert host(t).tolist() == [float(N - 1)]
    dist.destroy_process_group(g2)
dist.barrier()

# -- objects, the list forms, monitored_barrier ------------------------------------------------------------------------
seed[0] = 1000  # the group section drew inputs on some ranks only: line the seeds up again
objs = [None] * N
dist.all_gather_object(objs, {"rank": R, "data": list(range(R + 1))})
assert objs == [{"rank": k, "data": list(range(k + 1))} for k in range(N)], objs
blist = [("from", R), None, 3.5] if R == N - 1 else [None, None, None]
dist.broadcast_object_list(blist, src=N - 1)
assert blist == [("from", N - 1), None, 3.5], blist
gathered = [None] * N if R == 0 else None
dist.gather_object("x" * (R + 1), gathered, dst=0)
if R == 0:
    assert gathered == ["x" * (k + 1) for k in range(N)], gathered
got_obj = [None]
dist.scatter_object_list(got_obj, [{"to": k} for k in range(N)] if R == 0 else None, src=0)
assert got_obj == [{"to": R}], got_obj
if R == 0:
    dist.send_object_list([1, "two", {3: 4}], dst=1)
elif R == 1:
    recv_list = [None, None, None]
    assert dist.recv_object_list(recv_list, src=0) == 0
    assert recv_list == [1, "two", {3: 4}], recv_list
t_list, arrays_list = zip(*[inputs((2, 2), "int64") for _ in range(N)])
out = tl.zeros((2, 2), dtype=tl.int64, device=DEV)
dist.reduce_scatter(out, list(t_list))
close(out, reference("SUM", [arrays_list[R][k] for k in range(N)], "int64"), "int64", "reduce_scatter (list)")
# all_to_all: rank r sends r + k + 1 elements to rank k
a2a_in = [tl.full((R + k + 1,), float(10 * R + k), device=DEV) for k in range(N)]
a2a_out = [tl.zeros(k + R + 1, device=DEV) for k in range(N)]
w = dist.all_to_all(a2a_out, a2a_in, async_op=True)
w.wait()
for k in range(N):
    assert host(a2a_out[k]).tolist() == [float(10 * k + R)] * (k + R + 1), (k, host(a2a_out[k]))
dist.monitored_barrier(wait_all_ranks=True)

# -- errors ------------------------------------------------------------------------------------------------------------
for call, exc, text in (
        (lambda: dist.all_reduce(np.ones(2)), TypeError, "Expected parameter `tensor` of type torch.Tensor"),
        (lambda: dist.all_reduce(tl.ones(2, device=DEV), group=object()), ValueError, "is not registered"),
        (lambda: dist.broadcast(tl.ones(2, device=DEV), src=N), ValueError, "out of range"),
        (lambda: dist.broadcast(tl.ones(2, device=DEV)), ValueError, "Must specify global_rank or group_rank"),
        (lambda: dist.all_gather_into_tensor(tl.ones(3, device=DEV), tl.ones(2, device=DEV)), ValueError,
         "world_size times input tensor size"),
        (lambda: dist.all_gather([tl.ones(2, device=DEV)] * (N + 1), tl.ones(2, device=DEV)), ValueError,
         "one output tensor per rank"),
        (lambda: dist.all_reduce(tl.ones(2, device=DEV), op="sum"), TypeError, "ReduceOp"),
        (lambda: dist.all_reduce(tl.ones(2, device=DEV).expand(2, 2)), RuntimeError, ""),
        (lambda: dist.init_process_group("mpi"), ValueError, "twice"),
        (lambda: dist.gather(tl.ones(2, device=DEV), None, dst=R), ValueError, "must be specified on destination"),
):
    try:
        call()
    except exc as e:
        assert text in str(e), (text, str(e))
    else:
        raise AssertionError(f"no {exc.__name__} ({text})")

# -- the sync trace and the profiler hear the waits ----------------------------------------------------------------------
with tl.cuda.sync_trace() as trace:
    dist.all_reduce(tl.ones(4, device=DEV))
assert any(r.startswith("distributed all_reduce") for r in trace.reasons()), trace.reasons()
if DEV == "cuda":
    assert any("copy to host for MPI" in r for r in trace.reasons()), trace.reasons()
    # staging through the host is an implicit sync: sync debug mode "error" refuses it on every rank,
    # before anything is sent, so the group stays usable
    x = tl.ones(2, device=DEV)
    with tl.cuda.set_sync_debug_mode("error"):
        try:
            dist.all_reduce(x)
        except RuntimeError as e:
            assert "copy to host for MPI" in str(e), e
        else:
            raise AssertionError("sync debug mode 'error' let the host staging through")
    dist.all_reduce(x)
    assert host(x).tolist() == [float(N)] * 2
with tl.profiler.profile() as prof:
    dist.all_reduce(tl.ones(4, device=DEV))
assert "mpi:all_reduce" in prof.key_averages().table(), prof.key_averages().table()

dist.barrier()
dist.destroy_process_group()
assert not dist.is_initialized()
print("OK", R, flush=True)
