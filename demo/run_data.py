"""A demo results folder, read: its settings (run.env, written by demo/run), its runs' CSVs read
through the spike's `summarize` (lessons/instruments/spike/summarize, whose definitions of goodput,
steady state and percentiles are the demo's too), and the shape the queueing math predicts.
"""
import importlib.machinery
import importlib.util
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
RUNS = ["platform", "vt", "vt-gated", "vt-ceiling"]
PROFILES = ["platform", "vt", "vt-gated"]


def load_script(path, name):
    """A Python script of the lessons (a file without .py) as a module."""
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    return module


summarize = load_script(ROOT / "lessons" / "instruments" / "spike" / "summarize", "summarize")


def fail(message):
    print(f"{pathlib.Path(sys.argv[0]).name}: {message}", file=sys.stderr)
    sys.exit(1)


class Settings:
    """DIR/run.env: key=value lines; numbers become floats, `mode` and `runs` stay words."""

    def __init__(self, out):
        self.out = pathlib.Path(out)
        path = self.out / "run.env"
        try:
            lines = path.read_text().splitlines()
        except OSError as e:
            fail(f"cannot read {path}: {e.strerror} (demo/run writes it)")
        values = {}
        for line in lines:
            key, _, value = line.partition("=")
            values[key] = value if key in ("mode", "runs") else float(value)
        self.__dict__.update(values)

    def workers_of(self, run):
        return self.ceiling_workers if run == "vt-ceiling" else self.workers

    def max_connections_of(self, run):
        return self.max_connections if run == "vt-ceiling" else self.default_max_connections

    @property
    def end_s(self):
        """ramp + hold: no attempt starts after it."""
        return self.ramp_s + self.hold_s

    @property
    def throughput(self):
        """The pool's ceiling: every request holds one of pool_size connections for query_s."""
        return self.pool_size / self.query_s

    @property
    def depth(self):
        """The deepest pool queue in which nobody times out: throughput x pool timeout."""
        return self.throughput * self.pool_timeout_s

    def csv(self, run):
        return self.out / f"{run}.csv"

    def probe_csv(self, run):
        return self.out / f"{run}-probe.csv"


def attempts(settings, run):
    """The run's rows as (ts_s, status, latency_ms) tuples."""
    return [(ts / 1000, int(status), latency) for ts, status, latency in
            summarize.read_csv(str(settings.csv(run)), ["ts", "status", "latency_ms"])]


def probe_samples(settings, run):
    """The run's probe samples as (ts_s, inflight, connections, pool_pending); -1 = no sample."""
    return [(ts / 1000, inflight, connections, pending) for ts, inflight, connections, pending in
            summarize.read_csv(str(settings.probe_csv(run)),
                               ["ts", "inflight", "connections", "pool_pending"])]


def observed(settings, run):
    """summarize's figures for the run's steady state, plus what the demo adds: the 500s'
    latency over the whole run, and the rows that got no answer at all (sentinels)."""
    s = summarize.summarize(str(settings.csv(run)), str(settings.probe_csv(run)),
                            settings.steady_from_s, settings.end_s)
    rows = attempts(settings, run)
    errors = sorted(latency for _, status, latency in rows if status == 500)
    s["500"] = {"count": len(errors), "p50_ms": summarize.percentile(errors, 50),
                "min_ms": errors[0] if errors else None, "max_ms": errors[-1] if errors else None}
    s["5xx"] = sum(1 for _, status, _ in rows if status >= 500)
    s["no_answer"] = sum(1 for _, status, _ in rows if status < 0)
    return s


def predicted(settings, run):
    """The shape the queueing math predicts for a run: a dict of (value, why) pairs."""
    x = settings.throughput
    workers = settings.workers_of(run)
    inside = min(workers, settings.max_connections_of(run))  # the connector's bound
    p = {"goodput": (x, f"the pool's ceiling, {settings.pool_size:g} / {settings.query_s:g} s")}
    if run == "platform":
        threads = min(settings.threads_max, inside)
        p["inflight"] = (threads, "threads-max")
        p["connections"] = (inside, "every worker, queued ones included")
        p["pool_pending"] = (threads - settings.pool_size, "in flight - pool size")
        wait = (threads - settings.pool_size) / x
        p["errors"] = (0, f"none: {threads - settings.pool_size:g} waiters take {wait:.2g} s "
                          f"< the {settings.pool_timeout_s:g} s pool timeout")
        p["latency_200_s"] = (workers / x, f"{workers:g} workers / {x:g} per s, the whole crowd "
                                           "ahead (Little's law)")
    elif run in ("vt", "vt-ceiling"):
        p["inflight"] = (inside, "every open connection: threads-max is inert")
        p["connections"] = (inside, "every worker" if inside == workers else
                            f"max-connections; {workers - inside - settings.accept_count:g} "
                            f"workers find no room even in the accept queue until others "
                            f"back off")
        p["pool_pending"] = (inside - settings.pool_size, "in flight - pool size")
        overflow = inside > settings.depth
        p["errors"] = (
            1 if overflow else 0,
            f"500s at the {settings.pool_timeout_s:g} s line: {inside:g} waiters > the "
            f"{settings.depth:g} that {x:g}/s x {settings.pool_timeout_s:g} s sustains"
            if overflow else f"none: {inside:g} waiters fit in {settings.depth:g}")
        p["latency_200_s"] = (min(inside, settings.depth) / x,
                              "the pool's queue ahead, at most the pool timeout")
    else:
        p["inflight"] = (settings.gate_limit, "the gate's limit (a sample may catch a "
                                              "rejection in progress too)")
        p["connections"] = (inside, "every worker")
        p["pool_pending"] = (0, "the gate admits no more than the pool size")
        p["errors"] = (0, "the excess is rejected at the gate: 503s, no 500s")
        p["latency_200_s"] = (settings.query_s, "the query and nothing else")
    return p


# What the figures and the page call each status (the spike's sentinels are negative).
STATUS_NAMES = {200: "200", 500: "500 (pool timeout)", 503: "503 (gate rejected)",
                -1: "-1 response timeout", -2: "-2 transport error", -3: "-3 connect timeout",
                -4: "-4 interrupted"}

# SUMMARY.txt's fields, as `report summary` writes them (and the reference run's older wording):
# name -> a pattern whose groups are the numbers, as written.
SUMMARY_FIELDS = {
    "rows": r"^\S+: (\d+) rows",
    "goodput": r"goodput ([\d.]+)/s",
    "p50_200": r"200s p50 ([\d.]+) ms", "p95_200": r"200s p50 [\d.]+ ms, p95 ([\d.]+) ms",
    "p50_503": r"503s p50 ([\d.]+) ms", "p95_503": r"503s p50 [\d.]+ ms, p95 ([\d.]+) ms",
    "p50_500": r"500s p50 ([\d.]+) ms", "count_500": r"\(all (\d+):",
    "min_500": r"\(all \d+: ([\d.]+) ms to", "max_500": r"\(all \d+: [\d.]+ ms to ([\d.]+) ms",
    "inflight": r"in flight (\d+|no sample)", "connections": r"connections (\d+|no sample)",
    "pool_pending": r"pool pending (\d+|no sample)",
    "pinned": r"pinned events: (\d+)", "pinned_pindemo": r"PQexec reproducer: (\d+)",
}


def summary_numbers(path):
    """DIR/SUMMARY.txt read back: {"pgbench": text, "runs": {run: {field: text}}}, every number
    as the summary wrote it, and each run's statuses {status: count} from its status mix."""
    try:
        lines = pathlib.Path(path).read_text().splitlines()
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror} (demo/run writes it)")
    numbers = {"pgbench": None, "runs": {}}
    for line in lines:
        if line.startswith("pgbench: "):
            numbers["pgbench"] = re.match(r"pgbench: ([\d.]+)", line).group(1)
            continue
        run = line.split(":", 1)[0]
        if run not in RUNS:
            fail(f"{path}: a line of no run: {line[:40]}")
        fields = {}
        for name, pattern in SUMMARY_FIELDS.items():
            match = re.search(pattern, line)
            if match:
                fields[name] = match.group(1)
        mix = re.match(r"^\S+: \d+ rows \(([^)]*)\)", line)
        fields["statuses"] = dict(part.split(": ") for part in mix.group(1).split(", ")) if mix else {}
        numbers["runs"][run] = fields
    return numbers
