"""The ceiling ladder's and lesson 07's pages are written by the one module (lessons/tools/page.py
with page.html), from their runs' own numbers.

    pages_test.py

Each tool writes its page into a scratch copy of a real run's files, kept in demo/reference/:
ladder-quick/ (`ceiling-ladder --quick`'s CSVs; ceiling_ladder_table draws the figure again) and
lesson07-quick/ (the checkpoint's orders.csv and scaling.csv; orders_table --page). Both runs:
2026-12-05 about 10:02 and 10:04 UTC, 2 cores, load average 18 and 39 as they began. Lesson 07's
part 2 stopped at 50 connections there (pgbench finished no transaction in its 3 s at that load),
so its scaling.csv is scaling_table's from the points measured, 1 to 10 connections. Checked:
  1. the page is page.html filled in: the template's head, word for word, then an h1;
  2. every number of the run's table (ladder.csv; orders.csv and scaling.csv) is on the page as
     a <data> element with that value, to the digits the page shows;
  3. the machine's table names the cores and the load before (as passed) and after;
  4. the tool prints the page's path last.
No browser and no clock: the verdict is the same on a busy machine.
"""
import csv
import html.parser
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "lessons" / "tools" / "page.html"
LOAD = "1.25 2.50 3.75"  # a load before that no machine reports by chance at the same moment


def fail(message):
    print(f"pages_test: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def step(message):
    print(f"pages_test: {message}", flush=True)


class Numbers(html.parser.HTMLParser):
    """data-key -> value of every <data> on a page."""

    def __init__(self):
        super().__init__()
        self.values = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "data" and "data-key" in a:
            self.values[a["data-key"]] = a["value"]


def run(command, folder):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{' '.join(map(str, command))} exited {done.returncode}: {done.stderr.strip()}")
    page = folder / "index.html"
    if done.stdout.strip().splitlines()[-1:] != [str(page)]:
        fail(f"{command[1]} did not print its page's path last: {done.stdout[-200:]!r}")
    return page.read_text()


def check_page(name, text, expected):
    head = TEMPLATE.read_text().split("$title")[0]
    if not text.startswith(head):
        fail(f"{name}'s page does not begin with page.html's head: not written by the module")
    if "<h1>" not in text or "$title" in text or "$body" in text:
        fail(f"{name}'s page has no h1, or a template field left unfilled")
    found = Numbers()
    found.feed(text)
    for key, value in expected.items():
        shown = found.values.get(key)
        if shown is None:
            fail(f"{name}'s page does not show {key} (the run's {value})")
        digits = len(shown.split(".")[1]) if "." in shown else 0
        if abs(float(shown) - float(value)) > 0.5 * 10 ** -digits + 1e-9:
            fail(f"{name}'s page shows {key} = {shown}; the run's file says {value}")
    if f"{LOAD} (1, 5 and 15 minute averages)" not in text or "load after the run" not in text \
            or "cores of an" not in text:
        fail(f"{name}'s page lacks the machine: cores, load before ({LOAD}) and after")
    step(f"{name}: page.html filled in, {len(expected)} of the run's numbers equal, the machine "
         "and its load")


def ladder(scratch):
    folder = scratch / "ladder"
    shutil.copytree(ROOT / "demo" / "reference" / "ladder-quick", folder)
    text = run(["/usr/bin/python3", ROOT / "lessons" / "instruments" / "bench" /
                "ceiling_ladder_table", "--out", folder, "--hz", "100", "--sleepers", "1000",
                "--title", "test", "--load-before", LOAD], folder)
    expected = {}
    with open(folder / "ladder.csv", newline="") as f:
        for r in csv.DictReader(f):
            for field, value in r.items():
                if field != "rung" and value:
                    expected[f"{r['rung']}.{r['connections']}.{field}"] = value
    check_page("the ceiling ladder", text, expected)
    if '<img src="ladder.png" alt="' not in text:
        fail("the ladder's page does not show ladder.png with alt text")


def lesson07(scratch):
    folder = scratch / "lesson07"
    shutil.copytree(ROOT / "demo" / "reference" / "lesson07-quick", folder)
    text = run(["/usr/bin/python3", ROOT / "lessons" / "07-when-fibers-win" / "orders_table",
                "--page", "--out", folder, "--workers", "2000", "--threads", "200",
                "--load-before", LOAD], folder)
    expected = {}
    with open(folder / "orders.csv", newline="") as f:
        for r in csv.DictReader(f):
            for field in ("requests", "requests_per_s", "p50_ms", "p99_ms", "error_rate"):
                expected[f"orders.{r['wiring']}.{field}"] = r[field]
    with open(folder / "scaling.csv", newline="") as f:
        for r in csv.DictReader(f):
            for field, value in r.items():
                if field not in ("wiring", "connections", "threads") and value:
                    expected[f"scaling.{r['wiring']}.{r['connections']}.{field}"] = value
    check_page("lesson 07", text, expected)


def main():
    with tempfile.TemporaryDirectory(prefix="pages-test.") as scratch:
        ladder(pathlib.Path(scratch))
        lesson07(pathlib.Path(scratch))
    step("passed")


if __name__ == "__main__":
    main()
