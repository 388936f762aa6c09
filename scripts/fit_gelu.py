#!/usr/bin/env python3
"""scripts/fit_gelu.py — derives the polynomial behind kf::gelu_erf's float
path (agent/templates/kf_ops.cuh) and checks it; prints the C coefficients.

gelu(x) = x * Phi(x), Phi the normal CDF. With a = |x| and
h(a) = Phi(-a) = erfc(a / sqrt(2)) / 2:  Phi(x) = 1 - h(a) for x >= 0, h(a)
for x < 0. log2 h(a) is smooth on [0, A]; a degree-DEG polynomial P fitted at
Chebyshev nodes gives h = exp2(P(a)) (one ex2, DEG FMAs, no branches, no
table selects). Beyond A = 3.92 * sqrt(2), h < 2^-25: Phi rounds to 1 for
x >= 0, and h is taken as 0 for x < 0 (what x * 0.5 * (1 + erff(x/sqrt2))
gives in float there).

The check evaluates the float path as the GPU does (an FMA rounds once) on
a dense grid and compares with gelu in 40-digit arithmetic (mpmath), next
to PyTorch's float gelu on the CPU for scale. Needs numpy and mpmath
(PyTorch's pip install brings mpmath with sympy).

    python3 scripts/fit_gelu.py [--deg 10]
"""
import argparse

import mpmath as mp
import numpy as np

mp.mp.dps = 40
A = float(mp.mpf("3.92") * mp.sqrt(2))


def h(a):
    return mp.erfc(a / mp.sqrt(2)) / 2


def fit(deg, n=600):
    """coefficients (lowest first, float64) of P(a) ~ log2 h(a) on [0, A]"""
    k = np.arange(n)
    x = np.cos(np.pi * (k + 0.5) / n)
    a = (x + 1) * A / 2
    y = np.array([float(mp.log(h(mp.mpf(float(v))), 2)) for v in a])
    c = np.polynomial.chebyshev.chebfit(x, y, deg)
    p = np.polynomial.Polynomial(np.polynomial.chebyshev.cheb2poly(c))
    return p(np.polynomial.Polynomial([-1, 2 / A])).coef


def gelu_f32(xs, coef):
    """the template's float path: Horner with one rounding per FMA"""
    c = coef.astype(np.float32)
    a = np.abs(xs)
    acc = np.full_like(a, c[-1])
    for cc in c[-2::-1]:
        acc = (acc.astype(np.float64) * a + np.float64(cc)).astype(np.float32)
    hh = np.exp2(acc.astype(np.float64)).astype(np.float32)
    hh = np.where(a < np.float32(A), hh, np.float32(0))
    phi = np.where(xs >= 0, (np.float32(1) - hh).astype(np.float32), hh)
    return (xs * phi).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--deg", type=int, default=10)
    args = ap.parse_args()
    coef = fit(args.deg)
    xs = np.concatenate([np.linspace(-12, 12, 120001), np.linspace(-0.01, 0.01, 4001)]).astype(np.float32)
    want = np.array([float(v * (1 - h(v))) if v >= 0 else float(v * h(-v)) for v in xs.astype(np.float64)])
    got = gelu_f32(xs, coef).astype(np.float64)
    err = np.abs(got - want)
    big = np.abs(want) > 1e-3
    print(f"degree {args.deg} on [0, {A:.6f}]: max abs error {err.max():.3e}, "
          f"max rel error (|gelu| > 1e-3) {(err[big] / np.abs(want[big])).max():.3e}")
    try:
        import torch
        ref = torch.nn.functional.gelu(torch.from_numpy(xs)).numpy().astype(np.float64)
        e2 = np.abs(ref - want)
        print(f"PyTorch float gelu (CPU) for scale: max abs error {e2.max():.3e}, "
              f"max rel error (|gelu| > 1e-3) {(e2[big] / np.abs(want[big])).max():.3e}")
    except ImportError:
        pass
    def hexf(v):
        m, e = float(np.float32(v)).hex().split("p")
        return f"{m.rstrip('0').rstrip('.')}p{e}f"
    print(f"A = {hexf(A)}  ({float(np.float32(A))!r})")
    print("coefficients, highest degree first:")
    print(", ".join(hexf(c) for c in coef[::-1]))


if __name__ == "__main__":
    main()
