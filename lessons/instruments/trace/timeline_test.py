#!/usr/bin/python3
"""The timeline script on small hand-made traces (CTest: timeline_test, labels lesson02, docs).

    /usr/bin/python3 lessons/instruments/trace/timeline_test.py

It draws a PNG from a trace in the format --trace writes (carriers and platform threads, turns,
waits one by one and overlapping, counters), draws a window of it, and refuses, with one line
and exit status 1 (2 for a bad flag), a missing file, a half-written one, and JSON that is not a
trace; no PNG is left behind by a refusal. Standard library only (the script needs matplotlib).
"""
import json
import pathlib
import struct
import subprocess
import sys
import tempfile
import unittest

TIMELINE = pathlib.Path(__file__).resolve().parent / "timeline"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def small_trace():
    """Two carriers, one platform thread: turns, 50 fibers parked side by side in pool.borrow on
    carrier-0 (a band), one socket.read on carrier-1 and one pool.borrow on the platform thread
    (drawn one by one), a pool counter. Times in µs."""
    pid, events = 7, []
    for tid, name in ((0, "carrier-0"), (1, "carrier-1"), (2, "platform-0")):
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                       "args": {"name": name}})
    for i in range(50):
        events.append({"ph": "X", "cat": "turn", "name": f"conn {i} GET /work", "ts": 10.0 * i,
                       "dur": 5.0, "pid": pid, "tid": 0, "args": {"fiber": hex(i)}})
        events.append({"ph": "b", "cat": "wait", "name": "pool.borrow", "id": i,
                       "ts": 10.0 * i + 5, "pid": pid, "tid": 0,
                       "args": {"fiber": f"conn {i}", "outcome": "ok"}})
        events.append({"ph": "e", "cat": "wait", "name": "pool.borrow", "id": i,
                       "ts": 2000.0 + i, "pid": pid, "tid": 0})
    events += [
        {"ph": "X", "cat": "turn", "name": "conn 99", "ts": 100.0, "dur": 900.0, "pid": pid,
         "tid": 1, "args": {"fiber": "0x99"}},
        {"ph": "b", "cat": "wait", "name": "socket.read", "id": 100, "ts": 1000.0, "pid": pid,
         "tid": 1, "args": {"fiber": "conn 99"}},
        {"ph": "e", "cat": "wait", "name": "socket.read", "id": 100, "ts": 1500.0, "pid": pid,
         "tid": 1},
        {"ph": "X", "cat": "turn", "name": "GET /work", "ts": 0.0, "dur": 2500.0, "pid": pid,
         "tid": 2, "args": {"fiber": "0x0"}},
        {"ph": "b", "cat": "wait", "name": "pool.borrow", "id": 101, "ts": 10.0, "pid": pid,
         "tid": 2, "args": {"fiber": "GET /work", "outcome": "ok"}},
        {"ph": "e", "cat": "wait", "name": "pool.borrow", "id": 101, "ts": 2400.0, "pid": pid,
         "tid": 2},
        {"ph": "C", "name": "pool", "ts": 0.0, "pid": pid, "tid": 0,
         "args": {"active": 10, "pending": 50}},
        {"ph": "C", "name": "pool", "ts": 2100.0, "pid": pid, "tid": 0,
         "args": {"active": 10, "pending": 0}},
    ]
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"program": "timeline_test", "window_s": 2, "dropped_events": 0}}


def many_threads_trace(threads=200):
    """A platform executor's 200 threads beside one carrier: each thread runs one request and
    waits in pool.borrow inside it, except the last two, which only name themselves (idle in the
    window, as 2 of the demo's 200 were). Times in µs."""
    pid = 7
    events = [{"ph": "M", "name": "thread_name", "pid": pid, "tid": 0,
               "args": {"name": "carrier-0"}},
              {"ph": "X", "cat": "turn", "name": "accept", "ts": 0.0, "dur": 10.0, "pid": pid,
               "tid": 0}]
    for i in range(threads):
        tid = 100 + i
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                       "args": {"name": f"platform-{i}"}})
        if i >= threads - 2:
            continue
        events.append({"ph": "X", "cat": "turn", "name": "GET /work", "ts": 5.0 * i,
                       "dur": 2000.0, "pid": pid, "tid": tid})
        events.append({"ph": "b", "cat": "wait", "name": "pool.borrow", "id": i, "ts": 5.0 * i,
                       "pid": pid, "tid": tid, "args": {"outcome": "ok"}})
        events.append({"ph": "e", "cat": "wait", "name": "pool.borrow", "id": i,
                       "ts": 5.0 * i + 1000, "pid": pid, "tid": tid})
    return {"traceEvents": events, "otherData": {"program": "timeline_test", "window_s": 3}}


def png_size(path):
    """(width, height) in pixels, from the PNG's IHDR chunk."""
    return struct.unpack(">II", path.read_bytes()[16:24])


class TimelineTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="timeline_test.")
        self.path = pathlib.Path(self.dir.name)
        self.trace = self.path / "trace.json"
        self.trace.write_text(json.dumps(small_trace()))

    def tearDown(self):
        self.dir.cleanup()

    def timeline(self, *args):
        return subprocess.run([sys.executable, str(TIMELINE), *map(str, args)],
                              capture_output=True, text=True, timeout=120)

    def assert_png(self, path):
        self.assertTrue(path.exists(), f"{path} was not written")
        self.assertEqual(path.read_bytes()[:8], PNG_SIGNATURE, f"{path} is not a PNG")

    def assert_refused(self, result, status, words):
        self.assertEqual(result.returncode, status, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, f"want one line, got: {result.stderr}")
        self.assertTrue(lines[0].startswith("timeline: "), lines[0])
        self.assertIn(words, lines[0])
        self.assertEqual(list(self.path.glob("*.png*")), [], "a refusal left a picture behind")

    def test_draws_a_png_beside_the_trace(self):
        result = self.timeline(self.trace)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assert_png(self.path / "trace.png")

    def test_draws_a_window_where_asked(self):
        out = self.path / "window.png"
        result = self.timeline(self.trace, "--from", "0.0001", "--to", "0.0012", "--out", out,
                               "--title", "a window")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assert_png(out)
        self.assertEqual(list(self.path.glob("*.tmp")), [])

    def test_draws_a_hostile_target_as_text(self):
        # Any client can send this target; a carrier's long turn is labelled with it. Parsed as
        # matplotlib mathtext it raised ValueError ("Expected \\sqrt{value}") and no PNG was written.
        trace = small_trace()
        trace["traceEvents"].append(
            {"ph": "X", "cat": "turn", "name": "conn 7 GET /cpu?ms=900&x=$\\sqrt$", "ts": 0.0,
             "dur": 2500.0, "pid": 7, "tid": 1, "args": {"fiber": "0x7"}})
        self.trace.write_text(json.dumps(trace))
        result = self.timeline(self.trace, "--title", "a $ title$")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assert_png(self.path / "trace.png")

    def test_draws_many_threads_as_a_strip_that_counts_them_all(self):
        # The demo's 200 platform threads were 198 rows a few pixels high (two were idle), unreadable
        # at a README's size, under a caption that said 200.
        self.trace.write_text(json.dumps(many_threads_trace()))
        out = self.path / "many.png"
        result = self.timeline(self.trace, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assert_png(out)
        self.assertIn("200 platform threads drawn as a strip", result.stderr)
        width, height = png_size(out)
        self.assertLess(height, 600, f"{width}x{height}: a row per thread again?")

    def test_refuses_a_missing_file(self):
        self.assert_refused(self.timeline(self.path / "absent.json"), 1, "cannot read")

    def test_refuses_a_half_written_trace(self):
        text = self.trace.read_text()
        self.trace.write_text(text[: len(text) // 2])
        self.assert_refused(self.timeline(self.trace), 1, "not a whole trace")

    def test_refuses_json_that_is_not_a_trace(self):
        self.trace.write_text('{"events": []}')
        self.assert_refused(self.timeline(self.trace), 1, "no \"traceEvents\" list")
        self.trace.write_text('{"traceEvents": [{"ph": "X", "ts": "soon", "dur": 1, "tid": 0}]}')
        self.assert_refused(self.timeline(self.trace), 1, "not a number")
        self.trace.write_text('{"traceEvents": []}')
        self.assert_refused(self.timeline(self.trace), 1, "nothing to draw")

    def test_refuses_a_bad_window(self):
        self.assert_refused(self.timeline(self.trace, "--from", "2", "--to", "1"), 2,
                            "not before --to")
        self.assert_refused(self.timeline(self.trace, "--from", "-1"), 2, "0 or more")
        self.assert_refused(self.timeline(self.trace, "--from", "5"), 1, "nothing to draw from 5 s")


if __name__ == "__main__":
    unittest.main()
