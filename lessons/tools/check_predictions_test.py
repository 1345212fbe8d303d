#!/usr/bin/python3
"""Every lesson asks before it tells (issue 41): each lesson README 01-08 has a block that begins
`> **Predict`, placed before the first code block that runs its checkpoint, and each checkpoint's
`--predict` prints that question without building or starting anything when stdin is not a
terminal (lib.sh's predict_if_asked, sourced with $0 set to the checkpoint, as the checkpoint does).

    lessons/tools/check_predictions_test.py
"""
import re
import subprocess
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
LIB = ROOT / "lessons" / "tools" / "lib.sh"
LESSONS = sorted(p for p in (ROOT / "lessons").glob("0[1-8]-*") if p.is_dir())


def first_line(lines, pattern, inside_code):
    """The 1-based number of the first line matching `pattern` (inside code blocks only, or
    outside them only), or None."""
    fenced = False
    for number, line in enumerate(lines, start=1):
        if line.strip().startswith("```"):
            fenced = not fenced
            continue
        if fenced == inside_code and re.search(pattern, line):
            return number
    return None


class Predictions(unittest.TestCase):
    def test_there_are_eight_lessons(self):
        self.assertEqual(len(LESSONS), 8, [p.name for p in LESSONS])

    def test_each_readme_asks_before_its_checkpoint_runs(self):
        for lesson in LESSONS:
            with self.subTest(lesson=lesson.name):
                readme = lesson / "README.md"
                lines = readme.read_text().splitlines()
                ask = first_line(lines, r"^> \*\*Predict", inside_code=False)
                self.assertIsNotNone(ask, f"{readme}: no block that begins '> **Predict'")
                run = first_line(lines, rf"^\s*(\$ )?(\S+=\S+ )*lessons/{lesson.name}/checkpoint\b",
                                 inside_code=True)
                self.assertIsNotNone(run, f"{readme}: no code block runs its checkpoint")
                self.assertLess(ask, run, f"{readme}:{ask}: the question comes after the "
                                          f"checkpoint's command at line {run}")

    def test_each_checkpoint_takes_predict_before_it_builds_or_starts_anything(self):
        for lesson in LESSONS:
            with self.subTest(lesson=lesson.name):
                script = (lesson / "checkpoint").read_text()
                asked = script.find('predict_if_asked "$@" && shift')
                self.assertGreater(asked, 0, f"{lesson.name}/checkpoint never calls "
                                             "predict_if_asked")
                for later in ("need_build", "start_server", "exec "):
                    at = script.find(later)
                    if at >= 0:
                        self.assertLess(asked, at, f"{lesson.name}/checkpoint: {later} comes "
                                                   "before predict_if_asked")

    def test_predict_prints_the_question_and_does_not_wait_without_a_terminal(self):
        for lesson in LESSONS:
            with self.subTest(lesson=lesson.name):
                run = subprocess.run(
                    ["bash", "-c", f'source "{LIB}"; predict_if_asked --predict && echo asked',
                     str(lesson / "checkpoint")],
                    stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
                self.assertEqual((run.returncode, run.stdout), (0, "asked\n"), run.stderr)
                self.assertIn("Predict.", run.stderr)

    def test_a_readme_without_a_question_is_one_line_and_a_failure(self):
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "README.md").write_text("# A lesson\n\n> A quote, not a question.\n")
            run = subprocess.run(["bash", "-c", f'source "{LIB}"; predict_if_asked --predict',
                                  str(Path(folder) / "checkpoint")],
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 timeout=60)
        self.assertNotEqual(run.returncode, 0)
        self.assertEqual(len(run.stderr.strip().splitlines()), 1, run.stderr)
        self.assertIn("asks no question", run.stderr)

if __name__ == "__main__":
    unittest.main(verbosity=2)
