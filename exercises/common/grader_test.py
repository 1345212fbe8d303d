#!/usr/bin/python3
"""The exercises' quality gate, run by CTest (label `exercises`) in the build folder $BUILD.

    /usr/bin/python3 exercises/common/grader_test.py GraderTest.test_every_stub_test_fails

- every solution gets full marks from exercises/grade;
- every graded test case fails against its untouched stub (so none passes vacuously);
- the stubs compile without warnings (-Wall -Wextra -Wpedantic -Werror);
- every exercise folder is complete: README tasks, hints, TODOs, tags, solution files, fences;
- the grader survives stubs that crash, hang or do not compile, grading the rest.

Standard library only.
"""
import csv
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GRADE = REPO / "exercises" / "grade"
ROOT = REPO / "exercises"
SOLUTIONS = REPO / "solutions"
BUILD = Path(os.environ.get("BUILD") or REPO / "build").resolve()

EXERCISES = sorted(p for p in ROOT.iterdir()
                   if p.is_dir() and re.match(r"^\d\d-", p.name) and (p / "CMakeLists.txt").exists())
NOT_STUDENT_FILES = {"README.md", "HINTS.md", "CMakeLists.txt"}


def grade(*args, build=BUILD, timeout=900):
    """Runs exercises/grade; returns (exit status, its output, the JSON results)."""
    with tempfile.TemporaryDirectory() as scratch:
        results = Path(scratch) / "results.json"
        done = subprocess.run([str(GRADE), *args, "--json", str(results)],
                              env={**os.environ, "BUILD": str(build)}, cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout)
        report = json.loads(results.read_text()) if results.exists() else None
    return done.returncode, done.stdout, report


def student_files(folder):
    return sorted(p.name for p in folder.iterdir() if p.is_file() and p.name not in NOT_STUDENT_FILES)


def fenced(path):
    """The lines inside `// ---- do not change` ... `// ---- end of do not change` fences."""
    kept, inside = [], False
    for line in path.read_text().splitlines():
        if line.strip().startswith("// ---- end of do not change"):
            inside = False
        elif line.strip().startswith("// ---- do not change"):
            inside = True
        elif inside:
            kept.append(line)
    return kept


def load_grader():
    """The grader as a module, for its test-plan reader."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("grade", str(GRADE))
    spec = importlib.util.spec_from_loader("grade", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class GraderTest(unittest.TestCase):
    maxDiff = None

    def test_solutions_get_full_marks(self):
        code, output, report = grade("--solutions")
        self.assertEqual(code, 0, output)
        self.assertTrue(report["full_marks"], output)
        self.assertEqual({e["name"] for e in report["exercises"]}, {e.name for e in EXERCISES})
        for exercise in report["exercises"]:
            for test in exercise["tests"]:
                self.assertEqual(test["verdict"], "pass", f"{exercise['name']}: {test['name']}")
        self.assertRegex(output, r"Score: (\d+)/\1\n")

    def test_every_stub_test_fails(self):
        code, output, report = grade()
        self.assertEqual(code, 1, output)
        self.assertEqual(report["score"], 0, output)
        for exercise in report["exercises"]:
            name = exercise["name"]
            self.assertTrue(exercise["built"], f"{name}: the untouched stub must compile\n{output}")
            self.assertGreater(len(exercise["tests"]), 0, name)
            for test in exercise["tests"]:
                # A clean failure: a crash or a hang would be a poor first sight for a student.
                self.assertEqual(test["verdict"], "fail",
                                 f"{name}: '{test['name']}' must fail against the stub, cleanly")
            # The student is told where to start.
            self.assertIn(f"next: task 1 in exercises/{name}/README.md", output)

    def test_stubs_compile_without_warnings(self):
        # The stub programs are not part of `all`: the grader builds them. Compile every source
        # of every exercise-* program once more, as the build does, with warnings as errors.
        database = json.loads((BUILD / "compile_commands.json").read_text())
        checked = set()
        for exercise in EXERCISES:
            marker = f"/exercise-{exercise.name}.dir/"
            entries = [e for e in database if marker in e.get("output", e["command"])]
            self.assertTrue(entries, f"no compile commands for exercise-{exercise.name}")
            for entry in entries:
                if "catch_main" in entry["file"]:
                    continue
                command = shlex.split(entry["command"]) + ["-fsyntax-only", "-Werror"]
                done = subprocess.run(command, cwd=entry["directory"], text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                self.assertEqual(done.returncode, 0, f"{entry['file']}:\n{done.stdout}")
                checked.add(entry["file"])
        self.assertTrue(any(f.endswith("_test.cpp") for f in checked))

    def test_exercise_folders_are_complete(self):
        grader = load_grader()
        self.assertGreaterEqual(len(EXERCISES), 6)
        for exercise in EXERCISES:
            with self.subTest(exercise=exercise.name):
                self.check_exercise(exercise, grader)
        self.assertEqual({p.name for p in SOLUTIONS.iterdir() if p.is_dir()},
                         {e.name for e in EXERCISES}, "one solution folder per exercise")

    def check_exercise(self, exercise, grader):
        name = exercise.name
        number = int(name[:2])
        readme = (exercise / "README.md").read_text()
        hints = (exercise / "HINTS.md").read_text()
        plan = grader.test_plan(exercise)
        self.assertTrue(plan, f"{name}: no graded tests")

        # Tags: [exN][task_K] on every test; names a Catch2 test spec can match exactly.
        for test in plan:
            self.assertIn(f"[ex{number}]", test["tags"], test["name"])
            self.assertIsNotNone(test["task"], f"{name}: '{test['name']}' has no [task_K] tag")
            self.assertNotRegex(test["name"], r'["*~\\]|^#', test["name"])
        self.assertEqual(len({t["name"] for t in plan}), len(plan), f"{name}: duplicate names")

        # Numbered tasks in the README, each graded, each with hints; the totals it quotes.
        tasks = {int(n) for n in re.findall(r"^(\d+)\. \*\*", readme, re.M)}
        self.assertEqual(tasks, set(range(1, len(tasks) + 1)), f"{name}: tasks 1..N")
        self.assertEqual(tasks, {t["task"] for t in plan}, f"{name}: README tasks vs test tags")
        for task in tasks:
            self.assertRegex(hints, rf"(?m)^## Task {task}\b", f"{name}: hints for task {task}")
        self.assertIn("Still stuck? Read on.", hints)
        total = sum(t["points"] for t in plan)
        self.assertIn(f"`0/{total}`", readme, f"{name}: README must quote the real total")
        self.assertIn(f"`Score: {total}/{total}`", readme, f"{name}: README must quote the total")
        self.assertIn(f"exercises/grade {name[:2]}", readme)

        # The stub: TODOs in the student's files. The solution holds the files it changes, under
        # the same names, none with a TODO, with the same fenced declarations; a file it leaves
        # as it is stays the stub's alone (a header without a TODO, not a copy).
        files = student_files(exercise)
        self.assertTrue(files, name)
        self.assertTrue(any(f"TODO(ex{number})" in (exercise / f).read_text() for f in files),
                        f"{name}: the stub must say TODO(ex{number}) where the work is")
        solution = SOLUTIONS / name
        self.assertLessEqual(set(student_files(solution)), set(files), f"{name}: solution files")
        for f in files:
            if not (solution / f).exists():
                self.assertTrue(f.endswith(".hpp") and "TODO(ex" not in (exercise / f).read_text(),
                                f"solutions/{name} needs its own {f}")
                continue
            self.assertFalse((solution / f).read_bytes() == (exercise / f).read_bytes(),
                             f"solutions/{name}/{f} is the stub's: delete it (the build uses "
                             f"the stub's file when the solution has none)")
            self.assertNotIn("TODO(ex", (solution / f).read_text(), f"solutions/{name}/{f}")
            self.assertEqual(fenced(solution / f), fenced(exercise / f),
                             f"{name}/{f}: the fenced part differs between stub and solution")

        # The plan read from the source is what the program holds.
        binary = BUILD / "bin" / f"solution-{name}"
        # (Catch2 exits with the number of tests it listed.)
        listed = subprocess.run([str(binary), "--list-test-names-only"], text=True,
                                stdout=subprocess.PIPE).stdout.split("\n")
        self.assertEqual(sorted(t for t in listed if t), sorted(t["name"] for t in plan))

    def test_classroom_workflow_is_current(self):
        """.github/workflows/classroom.yml grades every exercise, for its points."""
        workflow = REPO / ".github" / "workflows" / "classroom.yml"
        done = subprocess.run([str(GRADE), "--workflow"], stdout=subprocess.PIPE, text=True)
        self.assertEqual(done.returncode, 0)
        self.assertEqual(workflow.read_text(), done.stdout,
                         "regenerate it: exercises/grade --workflow > .github/workflows/classroom.yml")
        # Read back on its own, not through the generator: a step per exercise, in order.
        grader = load_grader()
        steps = re.findall(r"(?m)^    - name: (\S+)\n      id: (\S+)\n"
                           r"      uses: classroom-resources/autograding-command-grader@v1\n"
                           r"      with:\n        test-name: \S+\n"
                           r"        setup-command: (.+)\n        command: (.+)\n"
                           r"        timeout: (\d+)\n        max-score: (\d+)\n", done.stdout)
        self.assertEqual([s[0] for s in steps], [e.name for e in EXERCISES])
        runners = re.search(r"(?m)^        runners: (.+)$", done.stdout).group(1).split(",")
        self.assertEqual(runners, [s[1] for s in steps])
        self.assertIn("classroom-resources/autograding-grading-reporter@v1", done.stdout)
        for (name, runner, setup, command, _, points), exercise in zip(steps, EXERCISES):
            self.assertEqual(int(points), sum(t["points"] for t in grader.test_plan(exercise)))
            self.assertEqual(setup, "lessons/tools/setup --no-build")
            self.assertTrue((REPO / setup.split()[0]).exists())
            program, argument = command.split()
            self.assertEqual(program, "exercises/grade")
            self.assertEqual(grader.select(EXERCISES, argument), [exercise], command)
            self.assertIn(f'{runner.upper()}_RESULTS: "${{{{steps.{runner}.outputs.result}}}}"',
                          done.stdout)

    def test_summary_of_a_class(self):
        """--summary reads --json results (made up here: three students of known scores)."""
        grader = load_grader()
        plans = {e.name: grader.test_plan(e) for e in EXERCISES}

        def results(passes):
            exercises = []
            for name, plan in plans.items():
                tests = [{**t, "verdict": "pass" if passes(t) else "fail"} for t in plan]
                got = sum(t["points"] for t in tests if t["verdict"] == "pass")
                exercises.append({"name": name, "built": True, "tests": tests, "points": got,
                                  "total": sum(t["points"] for t in plan)})
            return {"score": sum(e["points"] for e in exercises), "exercises": exercises}

        first = EXERCISES[0].name
        task1 = sum(t["points"] for t in plans[first] if t["task"] == 1)
        total = sum(t["points"] for t in plans[first])
        with tempfile.TemporaryDirectory() as scratch:
            students = {"alice": results(lambda t: True), "bob": results(lambda t: False),
                        "carol": results(lambda t: t["task"] == 1)}
            paths = []
            for name, report in students.items():
                paths.append(Path(scratch) / f"{name}.json")
                paths[-1].write_text(json.dumps(report))
            table = Path(scratch) / "class.csv"
            done = subprocess.run([str(GRADE), "--summary", *map(str, paths), "--csv", str(table)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.assertEqual(done.returncode, 0, done.stdout)
            self.assertIn("3 students: alice, bob, carol", done.stdout)
            # The median of (total, 0, task 1's points) is task 1's points: carol's.
            self.assertRegex(done.stdout, rf"(?m)^{first}\s+{task1}\s+{total}\s+1/3\s+2/3")
            self.assertRegex(done.stdout, rf"(?m)^  task 1\s+{task1}\s+{task1}\s+2/3\s+1/3")
            # Every task but task 1 is failed by bob and carol: those lead the list.
            self.assertRegex(done.stdout, r"Tasks most students fail:\n  \d\d task [2-9]: 2 of 3 "
                                          r"\(bob, carol\)")
            rows = list(csv.reader(table.read_text().splitlines()))
            self.assertEqual(rows[0][:4], ["student", "score", "total", first])
            self.assertEqual([r[0] for r in rows], ["student", "(out of)", "alice", "bob", "carol",
                                                    "(median)"])
            self.assertEqual(rows[2][3], str(total))
            self.assertEqual(rows[4][4], str(task1))  # carol, the first exercise's task 1

            # A file that is not a result is one line and exit status 2.
            paths[0].write_text("{}")
            done = subprocess.run([str(GRADE), "--summary", *map(str, paths)], text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            self.assertEqual(done.returncode, 2)
            self.assertRegex(done.stdout, r"^exercises/grade: .*alice.json is not a result")

    def test_grader_survives_broken_stubs(self):
        """Copies of exercise 04 whose stubs crash, hang, do not compile, fail a CHECK or fail a
        REQUIRE before any step, one solved copy, and a copy of exercise 05 solved with a
        std::mutex and a std::condition_variable_any (it blocks its carrier under BLOCK).

        They live in $BUILD/grader-selftest with a build folder of their own, kept between runs
        so that only the first run pays for compiling the test framework."""
        base = BUILD / "grader-selftest"
        fixture_root = base / "exercises"
        original = ROOT / "04-spike-report"
        crash = ('#include "spike_report.hpp"\n#include <csignal>\n'
                 '// A stub that crashes: the grader must report it and go on.\n'
                 'std::vector<SpikeRow> read_spike_csv(std::istream&) { std::raise(SIGSEGV); return {}; }\n'
                 'SpikeReport summarize(const std::vector<SpikeRow>&, double) { std::raise(SIGSEGV); return {}; }\n'
                 'std::string status_name(int) { std::raise(SIGSEGV); return {}; }\n')
        hang = ('#include "spike_report.hpp"\n#include <thread>\n'
                '// A stub that never returns: the grader must time it out and go on.\n'
                '[[noreturn]] static void forever() { for (;;) std::this_thread::sleep_for(std::chrono::seconds(1)); }\n'
                'std::vector<SpikeRow> read_spike_csv(std::istream&) { forever(); }\n'
                'SpikeReport summarize(const std::vector<SpikeRow>&, double) { forever(); }\n'
                'std::string status_name(int) { forever(); }\n')
        stub = (original / "spike_report.cpp").read_text()
        solved = (SOLUTIONS / original.name / "spike_report.cpp").read_text()
        variants = {
            "91-crashes": crash,
            "92-does-not-compile": stub + "\nint broken = ;\n",
            "93-hangs": hang,
            "94-solved": solved,
            "95-untouched": stub,
            "96-no-fixture": solved,  # its tests/spike_small.csv is missing: a REQUIRE fails
        }
        for variant, source in variants.items():
            folder = fixture_root / variant
            copy_if_changed(original, folder, but={"spike_report.cpp"},
                            remove={"spike_small.csv"} if variant == "96-no-fixture" else ())
            write_if_changed(folder / "spike_report.cpp", source)
        # The likeliest mistake in exercise 05: std:: primitives on a fiber.
        gate = fixture_root / "97-gate-std-mutex"
        copy_if_changed(ROOT / "05-gate", gate, but={"concurrency_gate.hpp", "concurrency_gate.cpp"})
        for name in ("concurrency_gate.hpp", "concurrency_gate.cpp"):
            text = (SOLUTIONS / "05-gate" / name).read_text()
            text = (text.replace("boost::fibers::condition_variable", "std::condition_variable_any")
                    .replace("boost::fibers::mutex", "std::mutex"))
            if name.endswith(".hpp"):
                text = text.replace("#include <atomic>\n",
                                    "#include <atomic>\n#include <condition_variable>\n#include <mutex>\n")
            write_if_changed(gate / name, text)

        code, output, report = grade("--root", str(fixture_root), "--timeout", "4",
                                     build=base / "build")
        self.assertEqual(code, 1, output)
        by_name = {e["name"]: e for e in report["exercises"]}
        self.assertEqual(list(by_name), [*variants, gate.name], "every exercise graded, in order")
        total = by_name["94-solved"]["total"]

        crashed = by_name["91-crashes"]
        self.assertTrue(crashed["built"])
        self.assertEqual(crashed["points"], 0)
        for test in crashed["tests"]:
            self.assertEqual((test["verdict"], test["kind"]), ("crash", "crash"), test["name"])
            self.assertIn("SIGSEGV", test["detail"])
            self.assertTrue(test["story"][0].startswith("CRASH: the test died"), test["story"])
            self.assertTrue(Path(test["transcript"]).exists())
        self.assertIn("crashed: SIGSEGV", output)

        broken = by_name["92-does-not-compile"]
        self.assertFalse(broken["built"])
        self.assertEqual((broken["points"], broken["total"]), (0, total))
        self.assertTrue(any("spike_report.cpp" in line and "error" in line
                            for line in broken["errors"]), broken["errors"])
        self.assertIn("DOES NOT COMPILE", output)
        self.assertIn("expected primary-expression", output)

        # A hang: SIGTERM first, so Catch2 tells the steps the test had reached; then killed.
        hung = by_name["93-hangs"]
        for test in hung["tests"]:
            self.assertEqual((test["verdict"], test["kind"]), ("timeout", "hang"), test["name"])
            self.assertTrue(test["story"][0].startswith("HANG: the test never finished"))
        self.assertIn("SIGTERM", "\n".join(hung["tests"][0]["story"]))
        self.assertEqual(processes_running(base / "build" / "bin" / "exercise-93-hangs"), [])

        self.assertEqual(by_name["94-solved"]["points"], total)

        # The untouched stub fails in CHECKs, each with the steps that led there.
        untouched = {t["name"]: t for t in by_name["95-untouched"]["tests"]}
        mix = untouched["the status mix counts every attempt after the warmup, sentinels included"]
        self.assertEqual((mix["verdict"], mix["kind"]), ("fail", "check"))
        self.assertRegex(mix["story"][0], r"^FAIL in a CHECK after [1-9]\d* steps?$")
        self.assertTrue(any("step: summarized the fixture" in line for line in mix["story"]))

        # A REQUIRE that fails before the test's first step is told apart from a failed check.
        fixture_missing = {t["name"]: t for t in by_name["96-no-fixture"]["tests"]}
        rows = fixture_missing["the fixture's 37 rows are read with their three fields"]
        self.assertEqual((rows["verdict"], rows["kind"]), ("fail", "require-before-steps"))
        self.assertIn("REQUIRE( in.good() )", "\n".join(rows["story"]))
        self.assertIn("FAIL in a REQUIRE before any step", output)

        # std::mutex under BLOCK: the watchdog names the blocked carrier (within its 2 s, not
        # after the test's 10 s limit, which --timeout 4 would not even reach).
        blocked = {t["name"]: t for t in by_name[gate.name]["tests"]}
        parked = blocked["at its limit a BLOCK gate parks the caller until a permit is returned"]
        self.assertEqual((parked["verdict"], parked["kind"]), ("fail", "blocked-carrier"),
                         parked["story"])
        story = "\n".join(parked["story"])
        self.assertIn("the carrier thread 'test-carrier' has been blocked for", story)
        self.assertIn("a std:: primitive", story.lower())
        self.assertIn("step: fiber A entered a BLOCK gate", story)
        self.assertEqual(blocked["a permit is given back when the guarded call throws"]["verdict"],
                         "pass", "REJECT works with a std::mutex; only BLOCK blocks the carrier")

        score = sum(e["points"] for e in report["exercises"])
        self.assertIn(f"Score: {score}/{sum(e['total'] for e in report['exercises'])}\n", output)

        # Mistakes a user can make get one line and exit status 2.
        code, output, _ = grade("no-such-exercise", build=base / "build")
        self.assertEqual(code, 2)
        self.assertIn("no exercise named 'no-such-exercise'", output)
        code, output, _ = grade("--root", str(fixture_root), "91")  # BUILD is for exercises/
        self.assertEqual(code, 2)
        self.assertIn("use another build folder", output)


def write_if_changed(path, text):
    # Unchanged files keep their time stamps, so the fixture's build stays incremental.
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def copy_if_changed(source, target, but, remove=()):
    """Copies the files under `source` whose names are not in `but`; those in `remove` are
    removed from the copy."""
    for item in source.rglob("*"):
        if item.is_file() and item.name in remove:
            (target / item.relative_to(source)).unlink(missing_ok=True)
        elif item.is_file() and item.name not in but:
            destination = target / item.relative_to(source)
            destination.parent.mkdir(parents=True, exist_ok=True)
            if not destination.exists() or destination.read_bytes() != item.read_bytes():
                shutil.copy2(item, destination)


def processes_running(binary):
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if str(binary) in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(proc.name))
            except OSError:
                pass
    return found


if __name__ == "__main__":
    unittest.main(verbosity=2)
