"""numpy baselines for `parity compare` (docs/performance.md, issue 15).

    python numpy_compare.py make DIR [ELEMS]   # DIR/actual.npy, DIR/expected.npy
    python numpy_compare.py max ACTUAL EXPECTED
    python numpy_compare.py metrics ACTUAL EXPECTED [CHUNK]

`make` writes an f32 pair like `parity bench`'s: an oracle uniform in
[-1, 1) and an actual 0 to 3 ULPs above it (seeded, so the files are the
same on every run); default 64M elements, 256 MiB a side.

`max` is the simplest one-pass read of both files: numpy's max over the two
memory maps (one SIMD pass each). `metrics` computes what `parity compare`
reports, in f64 over chunks of CHUNK elements (default 4M): count, max_abs,
mean_abs, rms, rel_l2, cosine, the f32 ULP histogram (exact to 64, log2
buckets above) and max_ulp, allclose violations and the first one (PyTorch's
f32 atol 1e-5, rtol 1.3e-6), the top 8 |a - e|, bitwise mismatches.

Each prints the seconds spent after numpy's import (`in-process s`), then a
summary of the values. tools/bench/compare_vs_numpy.sh times the whole
processes against `parity compare`.
"""

import sys
import time

import numpy as np

ATOL, RTOL, TOP_K, EXACT_MAX = 1e-5, 1.3e-6, 8, 64


def make(out_dir, elems):
    rng = np.random.default_rng(15)
    expected = rng.uniform(-1.0, 1.0, elems).astype(np.float32)
    ulps = rng.integers(0, 4, elems, dtype=np.uint32)
    actual = (expected.view(np.uint32) + ulps).view(np.float32)
    np.save(f"{out_dir}/actual.npy", actual)
    np.save(f"{out_dir}/expected.npy", expected)


def one_pass_max(a_path, e_path):
    t = time.perf_counter()
    a = np.load(a_path, mmap_mode="r")
    e = np.load(e_path, mmap_mode="r")
    m = max(a.max(), e.max())
    print(f"in-process s {time.perf_counter() - t:.4f}")
    print(f"max {m}")


def ulp_keys(x):
    bits = x.view(np.int32).astype(np.int64)
    mag = bits & 0x7FFFFFFF
    return np.where(bits < 0, -mag, mag)


def metrics(a_path, e_path, chunk):
    t = time.perf_counter()
    a_all = np.load(a_path, mmap_mode="r")
    e_all = np.load(e_path, mmap_mode="r")
    n = a_all.size
    a_flat, e_flat = a_all.reshape(-1), e_all.reshape(-1)
    sums = dict(abs=0.0, sq=0.0, aa=0.0, ee=0.0, ae=0.0)
    max_abs, max_ulp, violations, bitwise = 0.0, 0, 0, 0
    first = None
    exact = np.zeros(EXACT_MAX + 1, np.int64)
    log2 = np.zeros(65, np.int64)
    worst = []  # (|d|, index)
    for start in range(0, n, chunk):
        a32 = np.asarray(a_flat[start : start + chunk])
        e32 = np.asarray(e_flat[start : start + chunk])
        a, e = a32.astype(np.float64), e32.astype(np.float64)
        d = a - e
        ad = np.abs(d)
        sums["abs"] += ad.sum()
        sums["sq"] += (d * d).sum()
        sums["aa"] += (a * a).sum()
        sums["ee"] += (e * e).sum()
        sums["ae"] += (a * e).sum()
        max_abs = max(max_abs, ad.max())
        bad = ad > ATOL + RTOL * np.abs(e)
        nbad = int(bad.sum())
        violations += nbad
        if first is None and nbad:
            first = start + int(np.argmax(bad))
        bitwise += int((a32.view(np.uint32) != e32.view(np.uint32)).sum())
        dist = np.abs(ulp_keys(a32) - ulp_keys(e32))
        max_ulp = max(max_ulp, int(dist.max()))
        small = dist <= EXACT_MAX
        exact += np.bincount(dist[small], minlength=EXACT_MAX + 1)
        big = dist[~small]
        if big.size:
            log2 += np.bincount(np.ceil(np.log2(big)).astype(np.int64), minlength=65)
        k = min(TOP_K, ad.size)
        idx = np.argpartition(ad, -k)[-k:]
        worst.extend((ad[i], start + int(i)) for i in idx)
        worst = sorted(worst, key=lambda w: (-w[0], w[1]))[:TOP_K]
    rms = np.sqrt(sums["sq"] / n)
    rel_l2 = np.sqrt(sums["sq"]) / np.sqrt(sums["ee"])
    cosine = sums["ae"] / (np.sqrt(sums["aa"]) * np.sqrt(sums["ee"]))
    print(f"in-process s {time.perf_counter() - t:.3f}")
    print(f"count {n} max_abs {max_abs:.6e} mean_abs {sums['abs'] / n:.6e} rms {rms:.6e}")
    print(f"rel_l2 {rel_l2:.6e} cosine {cosine:.9f} max_ulp {max_ulp}")
    print(f"allclose violations {violations} first {first} bitwise mismatches {bitwise}")
    print(f"ulp histogram 0..4 {exact[:5].tolist()} worst {[w[1] for w in worst]}")


def main(argv):
    if len(argv) >= 2 and argv[0] == "make":
        make(argv[1], int(argv[2]) if len(argv) > 2 else 64 << 20)
    elif len(argv) == 3 and argv[0] == "max":
        one_pass_max(argv[1], argv[2])
    elif len(argv) in (3, 4) and argv[0] == "metrics":
        metrics(argv[1], argv[2], int(argv[3]) if len(argv) > 3 else 4 << 20)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
