#!/usr/bin/env python3
"""crypten_side_by_side.py -- CrypTen's reciprocal, exp, softmax over rows of 10 and 2 x 2 max
pooling, timed on the inputs bench_nonlinear and bench_primitives give Veil, so that the two can
run side by side on one machine (bench/README-nonlinear.md, "CrypTen side by side").

CrypTen is not part of Veil and not in Debian's archive. What it needs is: python3-torch,
python3-scipy, python3-yaml, python3-onnx, python3-pandas, python3-sklearn, python3-omegaconf and
python3-future (Debian 12 packages, installed into Debian's own /usr/bin/python3) and a CrypTen
source tree (github.com/facebookresearch/CrypTen, tested with 0.4.0 at commit 775868a) on
PYTHONPATH:

    PYTHONPATH=/path/to/CrypTen /usr/bin/python3 bench/crypten_side_by_side.py \
        [-s MINEXP (4)] [-e MAXEXP (5)] [-r REPEATS (3)] [-o OP[,OP...]]

OP: recip (CrypTen's default reciprocal: sign test, 3 exp(1/2 - x) + 0.003, 10 Newton steps),
recip_pos (the same with reciprocal_all_pos, no sign test: Veil's reciprocal also takes positive
inputs only), exp, softmax10, maxpool. Inputs (the same formulas as Veil's benches): recip on
[2^-16, 2^15) (Veil's recipn) and on [1, 100) (where CrypTen's is right); exp on [-16, 0];
softmax10 rows of 10 on [-8, 8]; maxpool n / 100 images of 1 x 10 x 10, values on [-8, 8].

Two parties (crypten.mpc.run_multiprocess, gloo over loopback TCP, no encryption; the default
trusted-first-party provider makes the Beaver material inside party 0, so its cost is in the
timing as the dealer's is in Veil's), one torch thread per party. Each measurement: encrypt, a
barrier, then the call timed at party 0 from the barrier to its return; best of REPEATS. Rounds
and bytes are CrypTen's own counter (crypten.communicator) for party 0, and bytes SENT by party 0,
counted by this script around torch.distributed's calls (an all_reduce over 2 parties sends its
n elements once; CrypTen's counter adds them twice, sent and received). Errors: against float64
references of the same inputs, over every element.
"""
import argparse
import math
import sys
import time

try:
    import torch
    import torch.distributed as dist
    import crypten
    import crypten.communicator as comm
    import crypten.mpc
    from crypten.config import cfg
except ImportError as e:  # a clear message, not a traceback
    sys.exit(
        "crypten_side_by_side: %s; it needs Debian's python3-torch and a CrypTen source tree on "
        "PYTHONPATH (see this file's header)" % e
    )

OPS = ("recip", "recip_pos", "exp", "softmax10", "maxpool")


def inputs(op, n, domain):
    """The float64 inputs of one measurement (bench_nonlinear.c's input_value formulas)."""
    u = (torch.arange(n, dtype=torch.float64) + 0.5) / n
    if op in ("recip", "recip_pos"):
        if domain == "full":
            return torch.exp2(-16 + 31 * u * 0.999)
        return 1 + 99 * u * 0.999
    if op == "exp":
        return -16 * u
    x = -8 + 16 * torch.fmod(u * 7919.0, 1.0)
    if op == "softmax10":
        return x.reshape(n // 10, 10)
    return x.reshape(n // 100, 1, 10, 10)


def reference(op, x):
    if op in ("recip", "recip_pos"):
        return 1 / x
    if op == "exp":
        return torch.exp(x)
    if op == "softmax10":
        return torch.softmax(x, dim=1)
    return torch.nn.functional.max_pool2d(x, 2, 2)


class SentCounter:
    """Bytes party 0 puts on the wire, counted around torch.distributed's calls."""

    def __init__(self):
        self.bytes = 0
        self.orig = {}

    def install(self):
        ws = dist.get_world_size()
        me = dist.get_rank()

        def wrap(name, sent):
            f = getattr(dist, name)
            self.orig[name] = f

            def g(*a, **k):
                self.bytes += sent(*a, **k)
                return f(*a, **k)

            setattr(dist, name, g)

        size = lambda t: t.nelement() * t.element_size()
        wrap("all_reduce", lambda t, *a, **k: size(t) * 2 * (ws - 1) // ws)
        wrap("send", lambda t, *a, **k: size(t))
        wrap("isend", lambda t, *a, **k: size(t))

        def bcast(t, src, *a, **k):
            return size(t) * (ws - 1) if src == me else 0

        wrap("broadcast", bcast)

        def gather(t, *a, **k):
            dst = k.get("dst", a[1] if len(a) > 1 else 0)
            return 0 if dst == me else size(t)

        wrap("gather", gather)

        def scatter(t, scatter_list=None, src=0, *a, **k):
            if src != me or not scatter_list:
                return 0
            return sum(size(s) for i, s in enumerate(scatter_list) if i != me)

        wrap("scatter", scatter)


def call(op, x):
    if op == "recip":
        return x.reciprocal()
    if op == "recip_pos":
        with cfg.temp_override({"functions.reciprocal_all_pos": True}):
            return x.reciprocal()
    if op == "exp":
        return x.exp()
    if op == "softmax10":
        return x.softmax(1)
    return x.max_pool2d(2, stride=2)


@crypten.mpc.run_multiprocess(world_size=2)
def party(op, n, domain, repeats):
    torch.set_num_threads(1)
    cfg.communicator.verbose = True
    counter = SentCounter()
    counter.install()
    plain = inputs(op, n, domain)
    best = None
    for _ in range(repeats):
        x = crypten.cryptensor(plain.to(torch.float32), src=0)
        comm.get().barrier()
        comm.get().reset_communication_stats()
        counter.bytes = 0
        t0 = time.perf_counter()
        y = call(op, x)
        secs = time.perf_counter() - t0
        st = comm.get().get_communication_stats()
        sent = counter.bytes
        if best is None or secs < best[0]:
            best = (secs, st["rounds"], st["bytes"], sent, y)
    secs, rounds, counted, sent, y = best
    got = y.get_plain_text().to(torch.float64)
    ref = reference(op, plain)
    err = (got - ref).abs()
    rel = err / ref.abs().clamp_min(1e-300)
    if comm.get().get_rank() != 0:
        return None
    return {
        "secs": secs,
        "rounds": rounds,
        "counted": counted,
        "sent": sent,
        "abs": err.max().item(),
        "rel": rel.max().item() if op in ("recip", "recip_pos") else float("nan"),
        "bad": int((rel > 2.0**-12).sum().item()) if op in ("recip", "recip_pos") else 0,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-s", type=int, default=4, help="smallest size 10^s (4)")
    ap.add_argument("-e", type=int, default=5, help="largest size 10^e (5)")
    ap.add_argument("-r", type=int, default=3, help="repeats, best kept (3)")
    ap.add_argument("-o", default=",".join(OPS), help="ops, comma-separated: " + " ".join(OPS))
    a = ap.parse_args()
    ops = a.o.split(",")
    bad = [o for o in ops if o not in OPS]
    if bad or a.s < 2 or a.e < a.s or a.e > 7 or a.r < 1:
        ap.error("bad option: ops %s, sizes 10^%d..10^%d (2..7), repeats %d" % (bad, a.s, a.e, a.r))
    print("CrypTen %s, torch %s, 2 parties, one torch thread each, best of %d" %
          (crypten.__version__, torch.__version__, a.r))
    print("| op | domain | n | s | elements/s | rounds | B/elem sent | B/elem CrypTen counter "
          "| max abs error | max rel error | rel > 2^-12 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|")
    for op in ops:
        domains = ("full", "1-100") if op.startswith("recip") else ("-",)
        for domain in domains:
            for k in range(a.s, a.e + 1):
                n = 10**k
                r = party(op, n, domain, a.r)[0]
                name = {"full": "[2^-16, 2^15)", "1-100": "[1, 100)", "-": {
                    "exp": "[-16, 0]", "softmax10": "rows of 10 on [-8, 8]",
                    "maxpool": "1x10x10 images, [-8, 8]"}.get(op, "-")}[domain]
                print("| %s | %s | %d | %.4f | %.3g | %d | %.2f | %.2f | %.3g | %.3g | %d |" % (
                    op, name, n, r["secs"], n / r["secs"], r["rounds"], r["sent"] / n,
                    r["counted"] / n, r["abs"], r["rel"], r["bad"]), flush=True)


if __name__ == "__main__":
    main()
