#!/usr/bin/env python3
"""Checks hostref's exact sum (exact_ref.c) against Python on fresh random cases.

  exact_cases.py PROGRAM [SEED]

Draws cases (printing the seed), computes each case's correctly rounded sum in Python and
pipes them to PROGRAM (test_exact_ref --stdin), which compares hostref's answer for all
four float types. Python's answers come from two places that must agree with each other:
math.fsum (correctly rounded for float64) and a Fraction-based rounding written here for
every type (exact arithmetic, round() on Fraction is half-to-even). A case is one line:
the four expected bit patterns (float64, float32, float16, bfloat16), then n, then the n
elements as float64 bit patterns, all in hex.
"""
import math
import os
import random
import struct
import subprocess
import sys
from fractions import Fraction

FORMATS = {  # name: (digits, emin, emax)
    "f64": (53, -1022, 1023),
    "f32": (24, -126, 127),
    "f16": (11, -14, 15),
    "bf16": (8, -126, 127),
}


def bits_of(name, value):
    """Bits of a value exactly representable in the format (or +-inf, NaN)."""
    if name == "f64":
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    if name == "f16":
        return struct.unpack("<H", struct.pack("<e", value))[0]
    f32 = struct.unpack("<I", struct.pack("<f", value))[0]
    return f32 if name == "f32" else f32 >> 16


def nan_bits(name):
    return {"f64": 0x7FF8000000000000, "f32": 0x7FC00000, "f16": 0x7E00, "bf16": 0x7FC0}[name]


def round_fraction(v, name):
    """v rounded to nearest even in the format, as a float (inf beyond the range)."""
    p, emin, emax = FORMATS[name]
    if v == 0:
        return 0.0
    a = abs(v)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    q = max(e, emin) - p + 1
    r = round(a / Fraction(2) ** q) * Fraction(2) ** q
    largest = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    out = math.inf if r > largest else float(r)
    return -out if v < 0 else out


def expected(xs):
    """The four expected bit patterns of one case, and whether fsum agreed."""
    nan = any(math.isnan(x) for x in xs)
    pinf = any(x == math.inf for x in xs)
    ninf = any(x == -math.inf for x in xs)
    out = []
    for name in FORMATS:
        if nan or (pinf and ninf):
            out.append(nan_bits(name))
        elif pinf or ninf:
            out.append(bits_of(name, math.inf if pinf else -math.inf))
        else:
            v = sum((Fraction(x) for x in xs), Fraction(0))
            if v == 0:
                negzero = len(xs) > 0 and all(math.copysign(1, x) < 0 for x in xs)
                out.append(bits_of(name, -0.0 if negzero else 0.0))
            else:
                out.append(bits_of(name, round_fraction(v, name)))
    if not (nan or pinf or ninf) and xs:
        try:
            f = math.fsum(xs)
        except OverflowError:
            f = None  # fsum's intermediate overflow: the Fraction answer stands alone
        if f is not None and f != 0 and bits_of("f64", f) != out[0]:
            raise SystemExit(f"python disagrees with itself: fsum {f!r} vs Fraction rounding for {xs!r}")
    return out


def rand_double(rng, lo=-1074, hi=1023):
    e = rng.randint(lo, hi)
    m = rng.getrandbits(53) | (1 << 52)
    x = math.ldexp(m, e - 52)
    return -x if rng.random() < 0.5 else x


def case(rng):
    kind = rng.choice(["wide", "cancel", "tie", "f32", "f16", "big", "special", "tiny", "near"])
    n = rng.choice([0, 1, 2, 3, 5, 8, 17, 40, 200])
    if kind == "wide":
        return [rand_double(rng) for _ in range(n)]
    if kind == "cancel":  # big values and their negatives around a few small ones
        big = [rand_double(rng, 0, 1000) for _ in range(n)]
        small = [rand_double(rng, -1074, 0) for _ in range(rng.randint(0, 3))]
        xs = big + [-x for x in big] + small
        rng.shuffle(xs)
        return xs
    if kind in ("tie", "near"):  # t + half an ulp of t in some format, +- the tiniest bit
        name = rng.choice(list(FORMATS))
        p, emin, emax = FORMATS[name]
        e = rng.randint(emin - p + 2, emax - 1)
        t = Fraction(rng.getrandbits(p - 1) | (1 << (p - 1))) * Fraction(2) ** (e - p + 1)
        half = Fraction(2) ** (e - p)
        xs = [float(t), float(half)]
        if kind == "near":
            xs.append(rng.choice([1, -1]) * 5e-324)
        if rng.random() < 0.5:
            xs = [-x for x in xs]
        return xs
    if kind == "f32":  # float32 values, mixed magnitudes
        return [struct.unpack("<f", struct.pack("<f", rand_double(rng, -149, 127)))[0] for _ in range(n)]
    if kind == "f16":
        return [struct.unpack("<e", struct.pack("<e", rng.uniform(-65504, 65504) * 2.0 ** -rng.randint(0, 30)))[0]
                for _ in range(n)]
    if kind == "big":  # near the float64 limit: overflow, or cancellation back into range
        xs = [rng.choice([1, -1]) * rand_double(rng, 1015, 1023) for _ in range(n)]
        return xs
    if kind == "tiny":
        return [rand_double(rng, -1074, -1000) for _ in range(n)]
    xs = [rand_double(rng, -20, 20) for _ in range(n)]
    for _ in range(rng.randint(1, 3)):
        xs.append(rng.choice([math.inf, -math.inf, math.nan, -0.0, 0.0]))
    rng.shuffle(xs)
    return xs


def main():
    prog = sys.argv[1]
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else int.from_bytes(os.urandom(8), "little")
    print(f"exact_cases.py: seed {seed}")
    rng = random.Random(seed)
    lines = []
    fixed = [[-0.0], [-0.0, -0.0], [0.0, -0.0], [], [1e30, 1.0, -1e30], [math.inf, -math.inf], [5e-324] * 3]
    for xs in fixed + [case(rng) for _ in range(4000)]:
        want = expected(xs)
        words = [f"{w:x}" for w in want] + [str(len(xs))] + [f"{bits_of('f64', x):x}" for x in xs]
        lines.append(" ".join(words))
    r = subprocess.run([prog, "--stdin"], input="\n".join(lines) + "\n", text=True)
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
