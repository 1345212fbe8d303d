#!/usr/bin/python3
"""check-lines catches each kind of stale file:line, and passes the ones that hold.

    lessons/tools/check_lines_test.py
"""
import subprocess
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
CHECK = ROOT / "lessons/tools/check-lines"
SOURCE = "lessons/01-one-thread/benchmark_routes.cpp"


def line_of(text):
    """The line of SOURCE that holds `text`: the tests follow the code wherever it moves."""
    lines = (ROOT / SOURCE).read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if text in line)


class CheckLines(unittest.TestCase):
    def check(self, text):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "TEXT.md"
            path.write_text(text)
            done = subprocess.run([str(CHECK), str(path)], capture_output=True, text=True)
        return done.returncode, done.stdout

    def assert_holds(self, text):
        status, output = self.check(text)
        self.assertEqual(status, 0, output)

    def assert_stale(self, text, why):
        status, output = self.check(text)
        self.assertEqual(status, 1, output)
        self.assertIn(why, output)

    def test_a_frame_on_its_call_holds(self):
        sleep = line_of("std::this_thread::sleep_for(duration);")
        self.assert_holds(f"    #2  std::this_thread::sleep_for(...) at /usr/x.h:1\n"
                          f"    #3  sleep_thread at {SOURCE}:{sleep}\n")

    def test_a_missing_file_or_line(self):
        self.assert_stale("see lessons/no_such_file.cpp:3\n", "no such file")
        self.assert_stale(f"see {SOURCE}:100000\n", "the file has")

    def test_a_line_that_is_no_code(self):
        brace = line_of("}")
        self.assert_stale(f"see {SOURCE}:{brace}\n", "not code")

    def test_a_frame_outside_its_function(self):
        sleep = line_of("std::this_thread::sleep_for(duration);")
        self.assert_stale(f"    #3  serve at {SOURCE}:{sleep}\n", "not inside serve")
        self.assert_stale(f"    #3  operator() at {SOURCE}:{sleep}\n", "in no lambda")

    def test_a_frame_that_does_not_call_the_one_below(self):
        sleep = line_of("std::this_thread::sleep_for(duration);")
        self.assert_stale(f"    #2  boost::this_fiber::yield() at /usr/x.h:1\n"
                          f"    #3  sleep_thread at {SOURCE}:{sleep}\n", "does not call yield")

    def test_a_code_span_beside_a_reference(self):
        sleep = line_of("std::this_thread::sleep_for(duration);")
        self.assert_holds(f"the wait (`sleep_for(duration)` at {SOURCE}:{sleep})\n")
        self.assert_stale(f"the wait ({SOURCE}:{sleep} (`sleep_until(t)`))\n",
                          "does not hold `sleep_until(t)`")

    def test_a_failed_check(self):
        sleep = line_of("std::this_thread::sleep_for(duration);")
        self.assert_stale(f"{SOURCE}:{sleep}: FAILED:\n  CHECK( total < 2400 )\n",
                          "does not hold CHECK( total < 2400 )")


if __name__ == "__main__":
    unittest.main()
