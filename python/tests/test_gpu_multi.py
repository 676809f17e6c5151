"""Exact sums across two GPUs from Python (meson test python-gpu-multi, in the gpu-full and
python-gpu suites): random data sharded over GPUs 0 and 1 in random splits, empty shards
included; each shard's gridsync.exact_accumulator on its GPU, the accumulators added as
int64 (copied to one device and added; and torch.distributed's all_reduce with the NCCL
backend, two processes), the total rounded with gridsync.exact_round: the bits must be those
of one gridsync.reduce(x, exact=True) over all the data on one GPU, for every float dtype.

Exact scans across the two processes (docs/multi-gpu.md, "Scans across GPUs"): each rank's
exact_accumulator of its shard, dist.all_gather of them, then gridsync.scan(shard, exact=True,
carry_in=the earlier ranks' accumulators): the concatenated results must be the bits of one
gridsync.scan(x, exact=True) over all the data, inclusive and exclusive, in the input's
type and the wider one; and scan(..., total=True)'s accumulator that of exact_accumulator.

Exits 77 (skipped) unless PyTorch sees at least two CUDA devices; the torch.distributed part
is skipped without NCCL, and the device rounding without gs_exact_round_device (the totals
are then rounded on the host). GRIDSYNC_TEST_SEED repeats a run's data.
"""

import ctypes
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gpu_common

import gridsync  # noqa: E402
from gridsync import _exact, _lib, _types  # noqa: E402
from gpu_common import SEED, SKIP, Base, main, np, ok, torch  # noqa: E402

TYPES = ["float16", "bfloat16", "float32", "float64"]
N = 300001


def data(seed, dt, n=N):
    """The same float64 values in every process: wide exponents, cancelling terms."""
    rng = np.random.default_rng(seed)
    lo, hi = {"float16": (-10, 10), "bfloat16": (-60, 60), "float32": (-60, 60), "float64": (-300, 300)}[dt]
    a = rng.standard_normal(n) * np.exp2(rng.uniform(lo, hi, n))
    a[: n // 3] = -a[n // 3: 2 * (n // 3)]
    rng.shuffle(a)
    return torch.from_numpy(a).to(getattr(torch, dt))


def bits(t):
    t = t.detach().cpu().reshape(-1)
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]).tolist()


def rounded(acc, dtype):
    """acc's total rounded: on its device when the library can, else on the host."""
    if getattr(_lib.load(), _exact.SYMBOL, None) is not None:
        return bits(gridsync.exact_round(acc, dtype))
    return _host_bits(acc, dtype)


def _host_bits(acc, dtype):
    # gs_exact_round into raw bytes (numpy has no bfloat16 without ml_dtypes)
    a = acc.cpu().contiguous()
    d = _types.dtype_from(dtype)
    res = (ctypes.c_uint8 * 8)()
    assert _lib.load().gs_exact_round(a.data_ptr(), d, ctypes.byref(res)) == 0
    v = int.from_bytes(bytes(res)[:d.itemsize], "little")
    return [v - (1 << (8 * d.itemsize)) if v >> (8 * d.itemsize - 1) else v]


class TestTwoGPUs(Base):
    def test_sharded_copy_and_add(self):
        for dt in TYPES:
            host = data(SEED + TYPES.index(dt), dt)
            whole = bits(gridsync.reduce(host.to("cuda:0"), exact=True))
            for trial in range(6):
                k = int(self.rng.integers(1, 9))
                cuts = sorted(self.rng.integers(0, N + 1, k).tolist())
                if trial == 0:
                    cuts = [0] + cuts          # an empty shard first
                if trial == 1:
                    cuts = cuts + [N]          # and last
                cuts = [0] + cuts + [N]
                gpus = self.rng.integers(0, 2, len(cuts) - 1).tolist()
                per_gpu = {}
                for (a, b), g in zip(zip(cuts, cuts[1:]), gpus):
                    acc = gridsync.exact_accumulator(host[a:b].to("cuda:%d" % g))
                    self.assertEqual(acc.device, torch.device("cuda", g))
                    per_gpu[g] = acc if g not in per_gpu else per_gpu[g] + acc
                total = per_gpu.get(0, torch.zeros(76, dtype=torch.int64, device="cuda:0"))
                if 1 in per_gpu:
                    total = total + per_gpu[1].to("cuda:0")
                what = "%s trial %d cuts %s on %s" % (dt, trial, cuts, gpus)
                self.assertEqual(rounded(total, host.dtype), whole, what)
                # and rounded on GPU 1 from the same total
                self.assertEqual(rounded(total.to("cuda:1"), host.dtype), whole, what + " (on GPU 1)")
                ok(2)


def _rank(rank, port, seed, splits, errors):
    """One process of the torch.distributed test: rank `rank` of 2 on GPU `rank`."""
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=2)
    try:
        for dt in TYPES:
            host = data(seed + TYPES.index(dt), dt)
            x_all = host.to("cuda")
            whole = bits(gridsync.reduce(x_all, exact=True))
            for c in splits:
                x = x_all[:c] if rank == 0 else x_all[c:]   # rank 0 [0, c), rank 1 [c, N)
                acc = gridsync.exact_accumulator(x)          # the README's recipe
                dist.all_reduce(acc)
                got = rounded(acc, x.dtype)
                if got != whole:
                    errors.put("rank %d %s split %d: %r, want %r" % (rank, dt, c, got, whole))
        dist.barrier()
    finally:
        dist.destroy_process_group()


WIDER = {"float16": "float32", "bfloat16": "float32", "float32": "float64", "float64": None}


def _as_int(t):
    """The bits of a 1-d float tensor, as integers of its width (NaN == NaN for torch.equal)."""
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def _same_acc(total, acc):
    """scan(total=True)'s accumulator against exact_accumulator's: limbs, count and sign_clear
    equal; nan, pos_inf, neg_inf (0 or 1 in a scan's total) as "> 0"."""
    t, a = total.cpu().tolist(), acc.cpu().tolist()
    return t[:69] == a[:69] and t[72] == a[72] and all((t[i] > 0) == (a[i] > 0) for i in (69, 70, 71))


def _scan_rank(rank, port, seed, splits, errors):
    """One process of the distributed scan: rank `rank` of 2 holds [0, c) or [c, N)."""
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=2)
    try:
        for dt in TYPES:
            x_all = data(seed + TYPES.index(dt), dt).to("cuda")
            kinds = [{"exclusive": e} for e in (False, True)]
            if WIDER[dt]:
                kinds += [{"exclusive": e, "out_dtype": WIDER[dt]} for e in (False, True)]
            wholes = [_as_int(gridsync.scan(x_all, exact=True, **kw)) for kw in kinds]   # one GPU
            for c in splits:
                x = x_all[:c] if rank == 0 else x_all[c:]
                lo, hi = (0, c) if rank == 0 else (c, N)
                acc = gridsync.exact_accumulator(x)                # docs/multi-gpu.md's recipe
                gathered = [torch.empty_like(acc) for _ in range(2)]
                dist.all_gather(gathered, acc)
                carry = torch.stack(gathered[:rank]) if rank else None
                for kw, whole in zip(kinds, wholes):
                    what = "rank %d %s split %d %r" % (rank, dt, c, kw)
                    got, total = gridsync.scan(x, exact=True, carry_in=carry, total=True, **kw)
                    if not torch.equal(_as_int(got), whole[lo:hi]):
                        errors.put("%s: not the one-GPU bits" % what)
                    if not _same_acc(total, acc):
                        errors.put("%s: total %r, exact_accumulator %r" % (what, total.tolist(), acc.tolist()))
        dist.barrier()
    finally:
        dist.destroy_process_group()


class TestDistributed(Base):
    def _spawn(self, fn, splits):
        import torch.distributed as dist
        import torch.multiprocessing as mp
        if not dist.is_available() or not dist.is_nccl_available():
            self.skipTest("torch.distributed without NCCL")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        ctx = mp.get_context("spawn")
        errors = ctx.SimpleQueue()
        mp.spawn(fn, args=(port, SEED, splits, errors), nprocs=2, join=True)
        found = []
        while not errors.empty():
            found.append(errors.get())
        self.assertEqual(found, [])

    def test_nccl_all_reduce(self):
        splits = [0, N, 1, N - 1] + self.rng.integers(0, N + 1, 4).tolist()
        self._spawn(_rank, splits)
        ok(2 * len(TYPES) * len(splits))

    def test_nccl_scan(self):
        splits = [0, N, 1, N - 1] + self.rng.integers(0, N + 1, 3).tolist()
        self._spawn(_scan_rank, splits)
        kinds = sum(4 if WIDER[dt] else 2 for dt in TYPES)
        ok(2 * 2 * kinds * len(splits))   # per rank and kind: the bits and the total


if __name__ == "__main__":
    if torch is not None and torch.cuda.is_available() and torch.cuda.device_count() < 2:
        print("python-gpu-multi: skipped: PyTorch sees %d CUDA device(s), this needs 2" % torch.cuda.device_count())
        sys.exit(SKIP)
    sys.exit(main([TestTwoGPUs, TestDistributed]))
