#!/usr/bin/python3
"""check-include-ranks catches an include against the ranks, and lets the right ones by.

    /usr/bin/python3 lessons/tools/check_include_ranks_test.py
"""
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

CHECK = Path(__file__).resolve().parent / "check-include-ranks"


def tree(files):
    """A throwaway repository root holding `files` ({path: text})."""
    root = Path(tempfile.mkdtemp(prefix="include-ranks-"))
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def check(root):
    return subprocess.run([sys.executable, str(CHECK), "--root", str(root)], capture_output=True,
                          text=True)


class IncludeRanks(unittest.TestCase):
    def test_includes_within_the_ranks_pass(self):
        root = tree({
            "lessons/instruments/spike/CMakeLists.txt": "lesson_rank(05)\n",
            "lessons/instruments/spike/spike.hpp": '#include "lessons/04-pool/pool.hpp"\n',
            "lessons/04-pool/pool.hpp": '#include "lessons/common/flags.hpp"\n',
            "lessons/05-wirings/main.cpp": '#include "lessons/instruments/spike/spike.hpp"\n',
        })
        result = check(root)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_each_include_against_the_ranks_is_named(self):
        root = tree({
            "lessons/instruments/spike/CMakeLists.txt": "lesson_rank(05)\n",
            "lessons/instruments/nameless/CMakeLists.txt": "# no rank\n",
            "lessons/instruments/spike/spike.hpp": '#include "lessons/06-gate/gate.hpp"\n',
            "lessons/03-connector/reactor.cpp": '\n#include "lessons/instruments/spike/spike.hpp"\n',
            "lessons/common/flags.cpp": '#include "lessons/01-one-thread/serve.hpp"\n',
            "lessons/02-fibers/carrier.cpp": '#include "lessons/instruments/nameless/x.hpp"\n',
        })
        result = check(root)
        self.assertEqual(result.returncode, 1)
        for expected in [
                "lessons/instruments/spike/spike.hpp:1: (rank 05) includes lessons/06-gate/gate.hpp",
                "lessons/03-connector/reactor.cpp:2: (rank 03) includes "
                "lessons/instruments/spike/spike.hpp (rank 05)",
                "lessons/common/flags.cpp:1: (rank 00) includes lessons/01-one-thread/serve.hpp",
                "includes lessons/instruments/nameless/x.hpp (no rank)"]:
            self.assertIn(expected, result.stderr)


if __name__ == "__main__":
    unittest.main()
