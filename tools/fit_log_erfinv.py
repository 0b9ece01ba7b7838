"""Fits the f64 polynomials of src/codegen/cg_math.c's log_pos_f64 and cg_math_erfinvf and
prints their coefficients (highest degree first, as horner64 takes them) with the largest
relative error found on a dense grid against mpmath.

Needs mpmath (pip install mpmath); not part of the build or the tests. Least squares on
Chebyshev nodes, weighted for relative error:
  log:    log1p(f) / f for f = m - 1, m in [sqrt(1/2), sqrt(2)), degree 12;
  erfinv: erfinv(y) / y as a function of w = -log(1 - y^2), in w - 2.5 for w in [0, 5) and
          in sqrt(w) - 3 for w in [5, 17], degree 12 each.

    python tools/fit_log_erfinv.py
"""

import mpmath as mp
import numpy as np

mp.mp.dps = 30


def fit(fn, lo, hi, var, deg, npts=600, check=3000):
    """Coefficients of the polynomial in t = var(x) nearest fn(x) in relative terms on [lo, hi],
    and its largest relative error on `check` evenly spaced points."""
    k = np.arange(npts)
    xs = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / npts)
    ts = np.array([var(x) for x in xs])
    fs = np.array([fn(x) for x in xs])
    c, *_ = np.linalg.lstsq(np.vander(ts, deg + 1) / fs[:, None], np.ones_like(fs), rcond=None)
    worst = 0.0
    for x in np.linspace(lo, hi, check):
        worst = max(worst, abs(np.polyval(c, var(x)) / fn(x) - 1))
    return c, worst


def log1p_over_f(f):
    return float(mp.log1p(mp.mpf(f)) / f) if f != 0 else 1.0


def erfinv_over_y(w):
    y = mp.sqrt(1 - mp.exp(-mp.mpf(w)))
    return float(mp.erfinv(y) / y)


def show(name, c, worst):
    print(f"{name}: largest relative error {worst:.3g}")
    print("  " + ", ".join(repr(float(x)) for x in c))


def main():
    show("log", *fit(log1p_over_f, np.sqrt(0.5) - 1, np.sqrt(2) - 1, lambda f: f, 12, 800, 4001))
    show("erfinv w < 5", *fit(erfinv_over_y, 1e-9, 5.0, lambda w: w - 2.5, 12))
    show("erfinv w >= 5", *fit(erfinv_over_y, 5.0, 17.0, lambda w: np.sqrt(w) - 3.0, 12))


if __name__ == "__main__":
    main()
