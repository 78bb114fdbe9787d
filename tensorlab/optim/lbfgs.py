"""L-BFGS (torch.optim.LBFGS's interface and defaults), written from the algorithm:

- the search direction is -H g, where H is the limited-memory inverse-Hessian estimate built from
  the last `history_size` curvature pairs (s = x_{k+1} - x_k, y = g_{k+1} - g_k) by the two-loop
  recursion (Nocedal & Wright, Numerical Optimization, 2nd ed., algorithm 7.4), seeded with the
  scaling gamma = s'y / y'y (their eq. 7.20); a pair with s'y <= 1e-10 would break positive
  definiteness and is skipped;
- the first step of a run is scaled to min(1, 1 / |g|_1) * lr, later ones start at lr;
- without a line search the step is taken as is; with line_search_fn="strong_wolfe" a bracketing
  phase then a zoom phase (N&W algorithms 3.5 and 3.6) find a step satisfying the strong Wolfe
  conditions (c1 = 1e-4, c2 = 0.9, at most 25 evaluations), each trial step chosen as the
  minimiser of the cubic interpolating the two bracket ends' values and slopes (N&W eq. 3.59),
  kept a tenth of the bracket away from its ends when progress stalls.

Scalars (step length, curvature, slopes) are kept as NumPy scalars of the parameters' dtype, so
that float32 problems round as torch's 0-dim tensors do and float64 ones are exact doubles.

The whole step is atomic: a closure or update that raises leaves the parameters and the optimizer
state as they were before step() (an undo journal, tensorlab/_journal.py)."""
from __future__ import annotations

import numpy as np

from .._journal import Journal
from ..autograd import enable_grad, no_grad
from ..ops.creation import zeros
from ..tensor import Tensor
from .optimizer import Optimizer, _optimizer_lock

_CURVATURE_FLOOR = 1e-10  # s'y at or below this: the pair is not stored


class LBFGS(Optimizer):
    """Limited-memory BFGS (torch.optim.LBFGS): one parameter group; step(closure) re-evaluates
    the closure (which must zero the gradients, compute the loss, call backward and return the
    loss) up to max_eval times and returns the loss of its first evaluation."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {"lr": lr, "max_iter": max_iter, "max_eval": max_eval, "tolerance_grad": tolerance_grad,
                    "tolerance_change": tolerance_change, "history_size": history_size,
                    "line_search_fn": line_search_fn}
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")

    # -- the flat view of all parameters -----------------------------------------------------------
    @property
    def _params(self):
        return self.param_groups[0]["params"]

    @staticmethod
    def _real(t):
        if t.is_complex():
            from ..ops.complex_ops import view_as_real
            return view_as_real(t)
        return t

    def _flat_grad(self):
        parts = []
        for p in self._params:
            if p.grad is None:
                parts.append(zeros(self._real(p).numel(), dtype=self._real(p).dtype, device=p.device))
            else:
                parts.append(self._real(p.grad.detach()).reshape(-1))
        from ..ops.shape import cat
        return cat(parts, 0)

    def _move(self, step, direction):
        """x += step * direction, parameter by parameter over the flat direction."""
        offset = 0
        for p in self._params:
            view = self._real(p.detach())
            n = view.numel()
            view.add_(direction[offset:offset + n].view(view.shape), alpha=float(step))
            offset += n

    def _snapshot(self):
        return [self._real(p.detach()).clone() for p in self._params]

    def _restore(self, saved):
        for p, x in zip(self._params, saved):
            self._real(p.detach()).copy_(x)

    def _evaluate(self, closure):
        with enable_grad():
            return closure()

    def _probe(self, closure, x0, t, d):
        """f and flat gradient at x0 + t d; the parameters are put back to x0."""
        self._move(t, d)
        f = float(self._evaluate(closure))
        g = self._flat_grad()
        self._restore(x0)
        return f, g

    # -- the step ------------------------------------------------------------------------------------
    def step(self, closure):
        """Up to max_iter L-BFGS iterations (max_eval closure evaluations); returns the first loss."""
        if closure is None:
            raise RuntimeError("LBFGS.step: a closure is required: it must zero the gradients, compute the loss, "
                               "call backward() and return the loss (L-BFGS re-evaluates it during the step)")
        # not under storage.write_lock as other optimizers' updates are: the closure runs inside the step, and
        # whatever it does (threads that resize, a DataLoader's pinning thread) must not wait on this step
        with _optimizer_lock(self), Journal() as journal:
            for p in self._params:
                journal.tensor(p)
            state = self.state[self._params[0]]
            journal.mapping(state)
            prev = state.get("prev_flat_grad")
            if isinstance(prev, Tensor):
                journal.tensor(prev)
            with no_grad():
                return self._iterate(closure, state)

    step._tl_atomic = True  # atomic on its own terms (the base's wrapper would call the closure once only)

    def _iterate(self, closure, state):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change, history = group["tolerance_grad"], group["tolerance_change"], group["history_size"]
        search = group["line_search_fn"]
        if search is not None and search != "strong_wolfe":
            raise RuntimeError(f"LBFGS: line_search_fn={search!r} is not supported; use None or 'strong_wolfe'")
        lr = float(lr.item()) if isinstance(lr, Tensor) else lr

        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        first_loss = self._evaluate(closure)
        loss = float(first_loss)
        evals = 1
        state["func_evals"] += 1
        g = self._flat_grad()
        scalar = _scalar_type(g)
        if float(g.abs().max()) <= tol_grad:
            return first_loss

        d, t = state.get("d"), state.get("t")
        ys_hist, ss_hist = list(state.get("old_dirs", [])), list(state.get("old_stps", []))
        rho_hist = list(state.get("ro", []))
        gamma = state.get("H_diag")
        g_prev, loss_prev = state.get("prev_flat_grad"), state.get("prev_loss")
        if isinstance(t, Tensor):
            t = scalar(t.item())

        it = 0
        while it < max_iter:
            it += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = g.neg()
                ys_hist, ss_hist, rho_hist = [], [], []
                gamma = 1
            else:
                y = g.sub(g_prev)
                s = d.mul(float(t))
                sy = scalar(y.dot(s).item())
                if sy > _CURVATURE_FLOOR:
                    if len(ys_hist) == history:
                        del ys_hist[0], ss_hist[0], rho_hist[0]
                    ys_hist.append(y)
                    ss_hist.append(s)
                    rho_hist.append(scalar(1.0) / sy)
                    gamma = sy / scalar(y.dot(y).item())
                alphas = [None] * history
                d = _two_loop(g, ss_hist, ys_hist, rho_hist, gamma, scalar, alphas)
                state["al"] = [None if a is None else _plain(a) for a in alphas]
            g_prev = g.clone()
            loss_prev = loss

            if state["n_iter"] == 1:
                inv = scalar(1.0) / scalar(g.abs().sum().item())
                t = (inv if inv < 1.0 else 1.0) * (scalar(lr) if inv < 1.0 else lr)
            else:
                t = lr
            slope = scalar(g.dot(d).item())
            if slope > -tol_change:  # not a descent direction (any more)
                break

            if search is None:
                self._move(t, d)
                used = 0
                if it != max_iter:
                    loss = float(self._evaluate(closure))
                    g = self._flat_grad()
                    used = 1
            else:
                x0 = self._snapshot()
                loss, g, t, used = _strong_wolfe_search(
                    lambda step: self._probe(closure, x0, step, d), t, d, loss, g, slope, scalar)
                self._move(t, d)
            converged = float(g.abs().max()) <= tol_grad
            evals += used
            state["func_evals"] += used

            if it == max_iter or evals >= max_eval or converged:
                break
            if float(d.abs().max()) * abs(float(t)) <= tol_change:  # |t d|_inf: the step stalled
                break
            if abs(loss - loss_prev) < tol_change:
                break

        state.update(d=d, t=_plain(t), old_dirs=ys_hist, old_stps=ss_hist, ro=[_plain(r) for r in rho_hist],
                     H_diag=gamma if isinstance(gamma, int) else _tensor_like(g, gamma), prev_flat_grad=g_prev,
                     prev_loss=loss_prev)
        return first_loss

    def load_state_dict(self, state_dict):
        """As Optimizer.load_state_dict; L-BFGS's history (flat vectors) is kept as saved."""
        super().load_state_dict(state_dict)


def _scalar_type(t):
    """A NumPy scalar constructor of t's (real) dtype: NumPy keeps Python floats weak, so the
    scalar arithmetic rounds as torch's 0-dim tensors of that dtype do."""
    return t._dtype.np.type


def _plain(x):
    return x.item() if isinstance(x, np.generic) else x


def _tensor_like(t, value):
    from ..ops.creation import tensor
    return tensor(_plain(value), dtype=t.dtype, device=t.device)


def _two_loop(g, ss, ys, rhos, gamma, scalar, alphas):
    """-H g by the two-loop recursion over the stored pairs (newest first, then oldest first);
    the first loop's coefficients are left in `alphas` (torch keeps them in the state as 'al')."""
    q = g.neg()
    for i in reversed(range(len(ss))):
        alphas[i] = scalar(ss[i].dot(q).item()) * rhos[i]
        q.add_(ys[i], alpha=-float(alphas[i]))
    r = q.mul(float(gamma))
    for i in range(len(ss)):
        beta = scalar(ys[i].dot(r).item()) * rhos[i]
        r.add_(ss[i], alpha=float(alphas[i] - beta))
    return r


def _cubic_min(a, fa, ga, b, fb, gb, lo=None, hi=None):
    """The minimiser of the cubic through (a, fa) and (b, fb) with slopes ga, gb, clamped to
    [lo, hi] (default: the interval between a and b); its midpoint when the cubic has no
    minimiser (negative discriminant)."""
    if lo is None:
        lo, hi = (a, b) if a <= b else (b, a)
    theta = ga + gb - 3 * (fa - fb) / (a - b)
    disc = theta ** 2 - ga * gb
    if disc < 0:
        return (lo + hi) / 2.0
    w = np.sqrt(disc) if isinstance(disc, np.generic) else disc ** 0.5
    if a <= b:
        x = b - (b - a) * ((gb + w - theta) / (gb - ga + 2 * w))
    else:
        x = a - (a - b) * ((ga + w - theta) / (ga - gb + 2 * w))
    return min(max(x, lo), hi)


def _strong_wolfe_search(phi, t, d, f0, g0, slope0, scalar, c1=1e-4, c2=0.9, tol=1e-9, budget=25):
    """A step t along d meeting f(t) <= f0 + c1 t slope0 and |f'(t)| <= c2 |slope0|. phi(t) -> (f, flat
    gradient). Returns (f, gradient, t, evaluations)."""
    d_inf = scalar(d.abs().max().item())
    f, g = phi(t)
    evals = 1
    slope = scalar(g.dot(d).item())
    # bracketing: grow the step until an interval is known to hold an acceptable point
    t_old, f_old, g_old, slope_old = 0, f0, g0.clone(), slope0
    lo_hi = None
    found = False
    tries = 0
    while tries < budget:
        if f > f0 + c1 * t * slope0 or (tries > 1 and f >= f_old):
            lo_hi = [[t_old, f_old, g_old, slope_old], [t, f, g.clone(), slope]]
            break
        if abs(slope) <= -c2 * slope0:  # both strong Wolfe conditions hold at t
            lo_hi = [[t, f, g, slope]]
            found = True
            break
        if slope >= 0:  # the slope turned: a minimiser lies between the last two steps
            lo_hi = [[t_old, f_old, g_old, slope_old], [t, f, g.clone(), slope]]
            break
        nxt = _cubic_min(t_old, f_old, slope_old, t, f, slope, lo=t + 0.01 * (t - t_old), hi=t * 10)
        t_old, f_old, g_old, slope_old = t, f, g.clone(), slope
        t = nxt
        f, g = phi(t)
        evals += 1
        slope = scalar(g.dot(d).item())
        tries += 1
    if tries == budget:
        lo_hi = [[0, f0, g0, None], [t, f, g, None]]

    if found:
        best = lo_hi[0]
        return best[1], best[2], best[0], evals
    # zoom: shrink the bracket; `low` is the end with the lower value
    low = 0 if lo_hi[0][1] <= lo_hi[-1][1] else 1
    stalled = False
    while not found and tries < budget:
        a, b = lo_hi[0][0], lo_hi[1][0]
        if abs(b - a) * d_inf < tol:
            break
        t = _cubic_min(a, lo_hi[0][1], lo_hi[0][3], b, lo_hi[1][1], lo_hi[1][3])
        left, right = min(a, b), max(a, b)
        margin = 0.1 * (right - left)
        if min(right - t, t - left) < margin:
            # too close to an end: the second time in a row (or outside), pull it a margin inside
            if stalled or t >= right or t <= left:
                t = right - margin if abs(t - right) < abs(t - left) else left + margin
                stalled = False
            else:
                stalled = True
        else:
            stalled = False
        f, g = phi(t)
        evals += 1
        slope = scalar(g.dot(d).item())
        tries += 1
        high = 1 - low
        if f > f0 + c1 * t * slope0 or f >= lo_hi[low][1]:
            lo_hi[high] = [t, f, g.clone(), slope]
            low = 0 if lo_hi[0][1] <= lo_hi[1][1] else 1
        else:
            if abs(slope) <= -c2 * slope0:
                found = True
            elif slope * (lo_hi[high][0] - lo_hi[low][0]) >= 0:
                lo_hi[high] = list(lo_hi[low])
            lo_hi[low] = [t, f, g.clone(), slope]
    best = lo_hi[low]
    return best[1], best[2], best[0], evals
