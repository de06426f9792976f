#!/usr/bin/env python3
"""campaign.py: a fault-injection campaign against real Veil sessions (issue 18), rerunnable.

Each run starts a session of examples/lenet_fmnist processes by hand (veil-keygen, veil-config,
one directory per process, as README's multi-host walk-through does), with 2 or 3 parties and the
dealer, and injects one fault:
  kill      kill -9 of a random process at a random moment of inference or training
  stop      SIGSTOP of a random process at a random moment (SIGKILLed once the others ended)
  ckpt      secure training (resumed from a common 2-step start) killed (VEIL_TEST_CRASH) in one
            process at each phase of writing checkpoint 3, then --resume: the trained weights
            must equal those of the same training without a crash byte for byte
  proxy     party 0 reaches party 1 through a TCP proxy that cuts, flips, replays, injects or
            truncates bytes once, after a random amount of traffic: of the CURVE connection
            carrying the data (VEIL_NET_DATA_CHANNEL=curve), or of the sealed data channel
            (party 0 then names party 1 at 127.0.0.2, where one proxy forwards the CURVE
            connection untouched and another sits on party 1's data port, VEIL_NET_DATA_PORT)
  plaintext raw TCP clients send garbage (and a ZMTP greeting) to every process: the session
            must still succeed
  flood     hundreds of connections open, write junk and close during the session: it must still
            succeed
  liar      an extra process holds party 1's CURVE key but says in its hello that it is party 0
A run is clean when every process ended (none left: no orphan) and no temporary file is left in
any process's directory, and (kill, stop) each survivor exited non-zero within the session
timeout + 1 s of the fault (what README promises; + SLACK s given with --slack, 0 by default; +
STARTUP s when the victim died before the handshake, whose bound runs from each survivor's own
open), its first error line naming the victim first (the process that failed first; a connect
timeout lists every peer not heard from, so there the victim need only be among them); (proxy)
every process exited within timeout + 1 s of the proxy's act, at least one non-zero, each
failure's first error line naming party 0 or party 1 (the link's ends) and caught by the dropped
connection, not by the silence timeout; (liar) party 0 refused the liar with exactly REFUSAL and
every process, the liar included, exited non-zero. Prints tried / clean per category.

usage: campaign.py [--build DIR] [--runs N] [--seed S] [--only CAT,...] [--timeout S] [--slack S]
                   [--keep]
exit: 0 all clean, 1 a run not clean, 77 the Fashion-MNIST data or the build is missing.
"""
import argparse
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import free_ports as free_ports_lib  # noqa: E402  (tests/free_ports.py)

DATA = "/usr/share/datasets/fashion-mnist"
STARTUP = 10.0  # s: a survivor's start-up (StarPU) that may still run when its victim died
# party 0's refusal of the liar (holds party 1's key, its frames say they come from party 0)
REFUSAL = ("net: bad frame from party 1: hello frame on the connection of peer 1: sender field "
           "says 0 (spoofed or misrouted)")
NAMED = re.compile(r"party \d+|dealer \(id \d+\)")
CATEGORIES = ["kill", "stop", "ckpt", "proxy", "plaintext", "flood", "liar"]
PHASES = 5  # of checkpoint writing: graph/secure/checkpoint_files.c


STARTED = []  # every process started, so that an interrupted campaign leaves none behind


WORK = []  # the campaign's directory, removed when a signal ends it (unless --keep)


def on_signal(signum, frame):
    for p in STARTED:
        if p.poll() is None:
            p.kill()
    for d in WORK:
        shutil.rmtree(d, ignore_errors=True)
    sys.exit(128 + signum)


def name_of(i, nparties):
    return "dealer" if i == nparties else "p%d" % i


def said_name(i, nparties):
    """How the library names process i in its messages."""
    return "dealer (id %d)" % i if i == nparties else "party %d" % i


def write_weights(path):
    """A LeNet-5 weights file (safetensors layout), small values: enough for inference."""
    import json
    shapes = [("conv1.weight", [6, 1, 5, 5]), ("conv1.bias", [6]), ("conv2.weight", [16, 6, 5, 5]),
              ("conv2.bias", [16]), ("fc1.weight", [400, 120]), ("fc1.bias", [120]),
              ("fc2.weight", [120, 84]), ("fc2.bias", [84]), ("fc3.weight", [84, 10]),
              ("fc3.bias", [10])]
    rng = random.Random(5)
    hdr, data = {"__metadata__": {"model": "lenet5-fmnist"}}, b""
    for name, shape in shapes:
        n = 1
        for s in shape:
            n *= s
        hdr[name] = {"dtype": "F64", "shape": shape,
                     "data_offsets": [len(data), len(data) + 8 * n]}
        data += struct.pack("<%dd" % n, *[rng.uniform(-0.1, 0.1) for _ in range(n)])
    h = json.dumps(hdr).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


class Session:
    """The files of one session: keys, configurations, a directory per process."""

    def __init__(self, camp, nparties, tag, session_hex=None):
        self.camp, self.n = camp, nparties
        self.nprocs = nparties + 1
        self.root = tempfile.mkdtemp(prefix="veil-faults-%s-" % tag, dir=camp.work)
        self.ports = free_ports_lib.free_ports(self.nprocs)
        self.names = [name_of(i, nparties) for i in range(self.nprocs)]
        admin = os.path.join(self.root, "admin")
        os.makedirs(admin)
        lines = []
        for i, who in enumerate(self.names):
            d = self.dir(i)
            os.makedirs(d)
            subprocess.run([camp.tool("veil-keygen"), who], cwd=d, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            shutil.copy(os.path.join(d, who + ".pub"), admin)
            kind = "dealer  " if i == nparties else "party %d" % i
            lines.append("%s tcp://127.0.0.1:%d %s.pub\n" % (kind, self.ports[i], who))
        with open(os.path.join(admin, "hosts.txt"), "w") as f:
            f.writelines(lines)
        args = [camp.tool("veil-config"), os.path.join(admin, "hosts.txt"), "-o", admin,
                "--timeout", str(camp.timeout)]
        if session_hex:
            args += ["--session", session_hex]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for i, who in enumerate(self.names):
            shutil.copy(os.path.join(admin, who + ".conf"), self.dir(i))
        write_weights(os.path.join(self.dir(0), "lenet5-fmnist.safetensors"))

    def dir(self, i):
        return os.path.join(self.root, self.names[i])

    def conf(self, i):
        return os.path.join(self.dir(i), self.names[i] + ".conf")

    def redirect(self, i, j, port, host="127.0.0.1"):
        """Process i reaches process j at host:port (a proxy) instead."""
        path = self.conf(i)
        with open(path) as f:
            text = f.read()
        text = text.replace("tcp://127.0.0.1:%d" % self.ports[j], "tcp://%s:%d" % (host, port))
        with open(path, "w") as f:
            f.write(text)

    def start(self, i, args, env_extra=None, quiet=True):
        env = dict(os.environ, STARPU_HOME=self.dir(i), STARPU_NCPU="1",
                   STARPU_WORKERS_NOBIND="1", STARPU_SILENT="1")
        env.pop("VEIL_TEST_CRASH", None)
        env.update(env_extra or {})
        log = open(os.path.join(self.root, self.names[i] + ".log"), "w")
        p = subprocess.Popen([self.camp.example] + args + ["--config", self.conf(i)]
                             + (["--quiet"] if quiet else []),
                             cwd=self.dir(i), env=env, stdout=log, stderr=subprocess.STDOUT)
        p.log_path, p.log = log.name, log
        STARTED.append(p)
        return p

    def start_all(self, mode_args, env_for=None):
        return [self.start(i, mode_args(i), env_for(i) if env_for else None)
                for i in range(self.nprocs)]

    def leftovers(self):
        found = []
        for dp, _, files in os.walk(self.root):
            found += [os.path.join(dp, f) for f in files if ".tmp." in f]
        return found

    def output(self, i):
        with open(os.path.join(self.root, self.names[i] + ".log"), errors="replace") as f:
            return f.read()

    def cleanup(self):
        if not self.camp.keep:
            shutil.rmtree(self.root, ignore_errors=True)


def first_error(out):
    """The first error line that names a process, and the processes it names in order."""
    for line in out.splitlines():
        if " error: " in line:
            text = line.split(" error: ", 1)[1]
            names = NAMED.findall(text)
            if names:
                return text, names
    return None, []


def wait_all(procs, deadline, noticed=None):
    """Waits for every process until deadline; returns (exit codes, exit times); kills the rest.
    noticed (a list, optional) receives when each process first logged an error."""
    codes, times = [None] * len(procs), [None] * len(procs)
    if noticed is not None:
        noticed[:] = [None] * len(procs)
    while time.time() < deadline and None in codes:
        for k, p in enumerate(procs):
            if noticed is not None and noticed[k] is None:
                with open(p.log_path, errors="replace") as f:
                    if " error: " in f.read():
                        noticed[k] = time.time()
            if codes[k] is None and p.poll() is not None:
                codes[k], times[k] = p.returncode, time.time()
        time.sleep(0.02)
    for k, p in enumerate(procs):
        if codes[k] is None:
            p.kill()
            p.wait()
        p.log.close()
    return codes, times


def infer_args(s, i):
    a = ["infer", "--images", "100", "--batch", "20", "--data", DATA]
    return a + (["--predictions", "preds.txt"] if i == 1 else [])


def train_args(s, i, extra=()):
    return ["train", "--secure", "--limit", "128", "--batch", "32", "--epochs", "1", "--images",
            "32", "--data", DATA, "--weights", "trained.safetensors"] + list(extra)


class Campaign:
    def __init__(self, opts):
        self.opts, self.rng = opts, random.Random(opts.seed)
        self.build, self.timeout, self.keep = opts.build, opts.timeout, opts.keep
        self.example = os.path.join(self.build, "examples", "lenet_fmnist")
        self.work = tempfile.mkdtemp(prefix="veil-faults-")
        if not self.keep:
            WORK.append(self.work)
        self.tried, self.clean, self.notes = {}, {}, []

    def tool(self, name):
        return os.path.join(self.build, "tools", name)

    def record(self, cat, ok, what):
        self.tried[cat] = self.tried.get(cat, 0) + 1
        self.clean[cat] = self.clean.get(cat, 0) + (1 if ok else 0)
        if not ok or self.opts.verbose:
            self.notes.append("%s %s: %s" % (cat, "clean" if ok else "NOT CLEAN", what))
            print("  %s %s: %s" % (cat, "clean" if ok else "NOT CLEAN", what), flush=True)

    def bound(self):
        return self.timeout + 1.0 + self.opts.slack

    # ---- kill and stop --------------------------------------------------------------------
    def signal_run(self, cat):
        n = self.rng.choice([2, 3])
        train = self.rng.random() < 0.5
        s = Session(self, n, cat)
        victim = self.rng.randrange(s.nprocs)
        delay = self.rng.uniform(0.3, 12.0 if train else 4.0)
        mode = (lambda i: train_args(s, i)) if train else (lambda i: infer_args(s, i))
        procs = s.start_all(mode)
        time.sleep(delay)
        t_fault = time.time()
        already = procs[victim].poll() is not None
        if not already:
            try:
                os.kill(procs[victim].pid, signal.SIGKILL if cat == "kill" else signal.SIGSTOP)
            except ProcessLookupError:  # it ended (and was reaped) between the two calls
                already = True
        noticed = []
        codes, times = wait_all([p for k, p in enumerate(procs) if k != victim],
                                t_fault + self.bound() + 60, noticed)
        procs[victim].kill()
        procs[victim].wait()
        procs[victim].log.close()
        survivors = [k for k in range(s.nprocs) if k != victim]
        what = "%s of %s %.1f s into %s, %d parties" % (
            cat, s.names[victim], delay, "training" if train else "inference", n)
        ok, why = True, []
        finished_first = already or all(c == 0 for c in codes)
        for k, c, t, tn in zip(survivors, codes, times, noticed):
            out = s.output(k)
            # a victim gone before its hello is caught by the handshake's bound, which runs from
            # each survivor's own open (its StarPU start-up may come after the fault)
            bound = self.bound() + (STARTUP if "no handshake with" in out else 0.0)
            if c is None:
                ok = False
                why.append("%s hung" % s.names[k])
            elif finished_first:
                continue  # the session had ended (or its victim's part) before the fault
            elif c == 0:
                ok = False
                why.append("%s exited 0" % s.names[k])
            elif tn is None or t - t_fault > bound:
                ok = False
                why.append("%s noticed after %s s, exited after %.1f s (bound %.1f s)" % (
                    s.names[k], "%.1f" % (tn - t_fault) if tn else "?", t - t_fault, bound))
            else:
                line, names = first_error(out)
                want = said_name(victim, n)
                if not names or (names[0] != want and not (
                        "no handshake with" in line and want in names)):
                    ok = False
                    why.append("%s named %s first, not %s: %s" % (
                        s.names[k], names[0] if names else "nobody", want, line))
            if c is not None and tn is not None and not finished_first:
                self.latency = max(getattr(self, "latency", 0.0), tn - t_fault)
                self.exit_latency = max(getattr(self, "exit_latency", 0.0), t - t_fault)
        if s.leftovers():
            ok = False
            why.append("left %s" % ", ".join(s.leftovers()))
        self.record(cat, ok, what + (" (finished before the fault)" if finished_first else "")
                    + ("" if ok else ": " + "; ".join(why) + " [" + s.root + "]"))
        if ok:
            s.cleanup()

    # ---- checkpoints ------------------------------------------------------------------------
    def ckpt_runs(self, phases):
        n = 2
        sid = "%032x" % self.rng.getrandbits(128)
        hooks = {"VEIL_INSECURE_TEST_HOOKS": "1", "VEIL_MATERIAL_SEED": "00112233445566778899aabbccddeeff"}
        base = Session(self, n, "ckpt-base", sid)
        ck = ["--checkpoint", "ck-%d", "--checkpoint-every", "1"]
        # the common start: 2 steps (64 images) with checkpoints; every later run resumes from
        # it with 128 images (4 steps), so the reference and the crashed runs share their state
        procs = base.start_all(lambda i: train_args(base, i, ck + ["--limit", "64"]),
                               lambda i: hooks)
        codes, _ = wait_all(procs, time.time() + 300)
        if codes != [0] * base.nprocs:
            self.record("ckpt", False, "the base run failed: %s [%s]" % (codes, base.root))
            return

        def copy_of(tag):
            """A copy of the base run's directories (keys, configurations, checkpoints)."""
            s = Session.__new__(Session)
            s.camp, s.n, s.nprocs, s.names, s.ports = self, n, base.nprocs, base.names, base.ports
            s.root = tempfile.mkdtemp(prefix="veil-faults-%s-" % tag, dir=self.work)
            for i in range(s.nprocs):
                shutil.copytree(base.dir(i), s.dir(i))
            return s

        def resume(s, env_for):
            p = s.start_all(lambda i: train_args(s, i, ck + ["--resume"]), env_for)
            return wait_all(p, time.time() + 300)[0]

        ref = copy_of("ckpt-ref")
        codes = resume(ref, lambda i: hooks)
        ref_w = os.path.join(ref.dir(0), "trained.safetensors")
        if codes != [0] * ref.nprocs or not os.path.exists(ref_w):
            self.record("ckpt", False, "the reference resume failed: %s [%s]" % (codes, ref.root))
            return
        with open(ref_w, "rb") as f:
            want = f.read()
        for ph in phases:
            victim = self.rng.randrange(n + 1)
            s = copy_of("ckpt-%d" % ph)
            crash = dict(hooks, VEIL_TEST_CRASH="checkpoint:3:%d" % ph)
            codes = resume(s, lambda i: crash if i == victim else hooks)
            what = "kill of %s at phase %d of checkpoint 3" % (s.names[victim], ph)
            if codes[victim] != -signal.SIGKILL or None in codes:
                self.record("ckpt", False, what + ": the crash run ended %s [%s]" % (codes, s.root))
                continue
            codes = resume(s, lambda i: hooks)
            got_w = os.path.join(s.dir(0), "trained.safetensors")
            got = open(got_w, "rb").read() if os.path.exists(got_w) else b""
            ok = codes == [0] * s.nprocs and got == want and not s.leftovers()
            self.record("ckpt", ok, what + ("" if ok else ": resume %s, weights %s, left %s [%s]"
                                             % (codes, "equal" if got == want else "DIFFER",
                                                s.leftovers(), s.root)))
            if ok:
                s.cleanup()
        ref.cleanup()
        base.cleanup()

    # ---- the proxy --------------------------------------------------------------------------
    def proxy_run(self):
        n = self.rng.choice([2, 3])
        s = Session(self, n, "proxy")
        act = self.rng.choice(["cut", "flip", "replay", "inject", "truncate"])
        after = self.rng.randrange(1, 2 << 20)
        channel = self.rng.choice(["curve", "data channel"])
        state = {"acted": None, "forwarded": 0}
        socks = []
        if channel == "curve":
            lsock = socket.socket()
            lsock.bind(("127.0.0.1", 0))
            s.redirect(0, 1, lsock.getsockname()[1])
            proxies = [(lsock, s.ports[1], act)]
            env_for = lambda i: {"VEIL_NET_DATA_CHANNEL": "curve"}
        else:
            dport, dsock = free_port_pair()
            lsock = socket.socket()
            lsock.bind(("127.0.0.2", 0))
            s.redirect(0, 1, lsock.getsockname()[1], "127.0.0.2")
            proxies = [(lsock, s.ports[1], None), (dsock, dport, act)]
            env_for = lambda i: {"VEIL_NET_DATA_PORT": str(dport)} if i == 1 else {}
        for sock, upstream, what in proxies:
            sock.listen(8)
            socks.append(sock)
            threading.Thread(target=proxy_serve, args=(sock, upstream, what, after, state,
                                                       self.rng), daemon=True).start()
        procs = s.start_all(lambda i: infer_args(s, i), env_for)
        noticed = []
        codes, times = wait_all(procs, time.time() + 240, noticed)
        for sock in socks:
            sock.close()
        t_act = state["acted"]
        what = "%s after %d bytes of party 0's stream to party 1 (%s), %d parties" % (
            act, after, channel, n)
        if t_act is None:
            ok = None not in codes and codes == [0] * s.nprocs
            what += " (the stream was shorter: no fault)"
        else:
            late = ["%s %.1f s" % (s.names[k], t - t_act) for k, t in enumerate(times)
                    if t is not None and t - t_act > self.bound()]
            wrong = []
            for k, c in enumerate(codes):
                line, names = first_error(s.output(k))
                if c not in (None, 0) and (not names or names[0] not in ("party 0", "party 1")
                                           or "silent for" in line):
                    wrong.append("%s: %s" % (s.names[k], line))
            ok = None not in codes and not late and not wrong and any(c != 0 for c in codes)
            if None not in codes:
                what += " (exits %s, the last %.1f s after the act)" % (
                    codes, max(t - t_act for t in times))
            if not ok:
                what += ": exits %s, late %s, messages %s" % (codes, late, wrong)
        if s.leftovers():
            ok = False
        self.record("proxy", ok, what + ("" if ok else " [%s]" % s.root))
        if ok:
            s.cleanup()

    # ---- hostile clients --------------------------------------------------------------------
    def hostile_run(self, cat):
        n = self.rng.choice([2, 3])
        s = Session(self, n, cat)
        stop = threading.Event()
        target = hostile_plain if cat == "plaintext" else hostile_flood
        threads = [threading.Thread(target=target, args=(s.ports[i], stop, self.rng.random()),
                                    daemon=True) for i in range(s.nprocs)]
        procs = s.start_all(lambda i: infer_args(s, i))
        for t in threads:
            t.start()
        codes, _ = wait_all(procs, time.time() + 240)
        stop.set()
        ok = codes == [0] * s.nprocs and not s.leftovers()
        self.record(cat, ok, "%s clients against %d processes%s" % (
            cat, s.nprocs, "" if ok else ": exits %s [%s]" % (codes, s.root)))
        if ok:
            s.cleanup()

    def liar_run(self):
        n = 2
        s = Session(self, n, "liar")
        # the liar: party 1's key pair, a configuration whose party 0 entry (its own) lists party
        # 1's key and a port of its own, whose party 1 entry is party 0's real endpoint and key,
        # and whose dealer entry is a port nobody listens on. So it reaches party 0 alone,
        # authenticated as party 1 (its key) while its frames say party 0 (its 'self' line): the
        # refusal is deterministic (no race with the real party 1's or party 0's connections).
        d = os.path.join(s.root, "liar")
        os.makedirs(d)
        for f in ("p1.key", "p1.pub"):
            shutil.copy(os.path.join(s.dir(1), f), d)
        pub1 = open(os.path.join(s.dir(1), "p1.pub")).read().split()[-1]
        pub0 = open(os.path.join(s.dir(0), "p0.pub")).read().split()[-1]
        lport, dead = free_ports_lib.free_ports(2)
        lines = []
        for line in open(s.conf(0)).read().splitlines(True):
            w = line.split()
            if w[:2] == ["party", "0"]:
                line = line.replace(pub0, pub1).replace(
                    "tcp://127.0.0.1:%d" % s.ports[0], "tcp://127.0.0.1:%d" % lport)
            elif w[:2] == ["party", "1"]:
                line = line.replace(pub1, pub0).replace(
                    "tcp://127.0.0.1:%d" % s.ports[1], "tcp://127.0.0.1:%d" % s.ports[0])
            elif w[:1] == ["dealer"]:
                line = line.replace("tcp://127.0.0.1:%d" % s.ports[n],
                                    "tcp://127.0.0.1:%d" % dead)
            lines.append(line.replace("p0.key", "p1.key"))
        with open(os.path.join(d, "liar.conf"), "w") as f:
            f.writelines(lines)
        env = dict(os.environ, STARPU_HOME=d, STARPU_NCPU="1", STARPU_SILENT="1")
        log = open(os.path.join(s.root, "liar.log"), "w")
        liar = subprocess.Popen([self.example, "infer", "--images", "40", "--batch", "20",
                                 "--config", os.path.join(d, "liar.conf")], cwd=d,
                                env=env, stdout=log, stderr=subprocess.STDOUT)
        liar.log, liar.log_path = log, log.name
        STARTED.append(liar)
        procs = s.start_all(lambda i: infer_args(s, i))
        codes, _ = wait_all(procs + [liar], time.time() + 240)
        refused = any(line.endswith(" error: " + REFUSAL) for line in s.output(0).splitlines())
        ok = None not in codes and all(c != 0 for c in codes) and refused and not s.leftovers()
        self.record("liar", ok, "a process with party 1's key claiming party 0%s" % (
            "" if ok else ": exits %s (all must be non-zero), party 0 %s [%s]" % (
                codes, "refused it exactly" if refused else "did not log '%s'" % REFUSAL,
                s.root)))
        if ok:
            s.cleanup()

    def run(self, cats, runs):
        for cat in cats:
            print("%s:" % cat, flush=True)
            if cat == "ckpt":
                phases = list(range(1, PHASES + 1))
                if runs < PHASES:
                    phases = self.rng.sample(phases, max(1, runs))
                self.ckpt_runs(phases)
                continue
            for _ in range(runs):
                if cat in ("kill", "stop"):
                    self.signal_run(cat)
                elif cat == "proxy":
                    self.proxy_run()
                elif cat == "liar":
                    self.liar_run()
                else:
                    self.hostile_run(cat)
        print("\ncategory   tried  clean")
        for cat in cats:
            print("%-10s %5d  %5d" % (cat, self.tried.get(cat, 0), self.clean.get(cat, 0)))
        if hasattr(self, "latency"):
            print("after a kill or stop, the slowest survivor logged its error after %.2f s and "
                  "exited after %.2f s (timeout %g s)" % (self.latency, self.exit_latency,
                                                          self.timeout))
        if not self.keep:
            shutil.rmtree(self.work, ignore_errors=True)
        return all(self.tried[c] == self.clean[c] for c in self.tried)


def free_port_pair():
    """A port free on 127.0.0.1 (checked) and a socket bound to the same port on 127.0.0.2, below
    the ephemeral range."""
    for _ in range(50):
        alt = socket.socket()
        port = free_ports_lib.candidate()
        probe = socket.socket()
        try:
            alt.bind(("127.0.0.2", port))
            probe.bind(("127.0.0.1", port))
            return port, alt
        except OSError:
            alt.close()
        finally:
            probe.close()
    raise RuntimeError("no port free on both 127.0.0.1 and 127.0.0.2")


def proxy_serve(lsock, upstream, act, after, state, rng):
    """Forwards each connection to 127.0.0.1:upstream; acts once after `after` bytes of
    downstream data (act None: never)."""
    import select
    while True:
        try:
            c, _ = lsock.accept()
        except OSError:
            return
        try:
            u = socket.create_connection(("127.0.0.1", upstream))
        except OSError:
            c.close()
            continue
        stop = False
        while not stop:
            r, _, _ = select.select([c, u], [], [], 1.0)
            for sk in r:
                try:
                    b = sk.recv(65536)
                except OSError:
                    b = b""
                if not b:
                    stop = True
                    break
                other = u if sk is c else c
                if sk is c and act and state["acted"] is None and \
                        state["forwarded"] + len(b) > after:
                    state["acted"] = time.time()
                    if act == "cut":
                        stop = True
                        break
                    if act == "flip":
                        i = rng.randrange(len(b))
                        b = b[:i] + bytes([b[i] ^ 0x10]) + b[i + 1:]
                    elif act == "replay":
                        b = b + b
                    elif act == "inject":
                        b = bytes(rng.getrandbits(8) for _ in range(4096)) + b
                    else:  # truncate
                        other.sendall(b[:len(b) // 2])
                        stop = True
                        break
                if sk is c and act:
                    state["forwarded"] += len(b)
                try:
                    other.sendall(b)
                except OSError:
                    stop = True
                    break
        c.close()
        u.close()


def hostile_plain(port, stop, x):
    """Raw TCP clients: random bytes, then a ZMTP 3 greeting (NULL) followed by garbage."""
    rng = random.Random(x)
    greeting = b"\xff" + b"\0" * 8 + b"\x7f\x03\x00" + b"NULL".ljust(20, b"\0") + b"\0" * 31
    while not stop.is_set():
        for payload in (bytes(rng.getrandbits(8) for _ in range(512)),
                        greeting + bytes(rng.getrandbits(8) for _ in range(256))):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as k:
                    k.sendall(payload)
                    time.sleep(0.05)
            except OSError:
                pass
        time.sleep(0.2)


def hostile_flood(port, stop, x):
    """Hundreds of short connections writing junk, as fast as they go."""
    rng = random.Random(x)
    count = 0
    while not stop.is_set() and count < 2000:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as k:
                k.sendall(bytes(rng.getrandbits(8) for _ in range(64)))
        except OSError:
            time.sleep(0.01)
        count += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("VEIL_BUILD", "build"))
    ap.add_argument("--runs", type=int, default=10, help="runs per category (ckpt: phases)")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--only", default=",".join(CATEGORIES))
    ap.add_argument("--timeout", type=float, default=5.0, help="the sessions' silence timeout")
    ap.add_argument("--slack", type=float, default=0.0,
                    help="seconds allowed beyond timeout + 1 s on a loaded machine (0: the "
                    "promise)")
    ap.add_argument("--keep", action="store_true", help="keep every run's directory")
    ap.add_argument("--verbose", action="store_true")
    opts = ap.parse_args()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    opts.build = os.path.abspath(opts.build)
    ex = os.path.join(opts.build, "examples", "lenet_fmnist")
    if not os.path.exists(os.path.join(DATA, "t10k-images-idx3-ubyte.gz")) or not os.access(ex, os.X_OK):
        print("SKIP: %s or %s missing" % (DATA, ex))
        return 77
    cats = [c for c in opts.only.split(",") if c]
    bad = [c for c in cats if c not in CATEGORIES]
    if bad:
        print("campaign.py: unknown categories %s (known: %s)" % (bad, ", ".join(CATEGORIES)))
        return 2
    print("fault campaign: seed %d, %d runs per category, timeout %g s, slack %g s" % (
        opts.seed, opts.runs, opts.timeout, opts.slack), flush=True)
    return 0 if Campaign(opts).run(cats, opts.runs) else 1


if __name__ == "__main__":
    sys.exit(main())
