#!/usr/bin/python3
"""The exercises' quality gate, run by CTest (label `exercises`) in the build folder $BUILD.

    /usr/bin/python3 exercises/common/grader_test.py GraderTest.test_every_stub_test_fails

- the workflow's grade step gives every solution full marks, and so does its result.json;
- every graded test fails against its untouched stub (none passes vacuously), graded end to end
  by Classroom 50's autograder.py, whose result.json says so test by test;
- the stubs compile without warnings (-Wall -Wextra -Wpedantic -Werror);
- every exercise folder is complete: README tasks and their core/stretch marks, hints, TODOs,
  CTest labels, solution files, fences;
- --summary of a class; the grader survives stubs that crash, hang or do not compile;
- the workflows use only actions that run on Node 24, and none of GitHub Classroom's.

Standard library only.
"""
import csv
import importlib.machinery
import importlib.util
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
AUTOGRADER = REPO / "exercises" / "classroom50" / "autograder.py"
WORKFLOWS = REPO / ".github" / "workflows"
ROOT = REPO / "exercises"
SOLUTIONS = REPO / "solutions"
BUILD = Path(os.environ.get("BUILD") or REPO / "build").resolve()

EXERCISES = sorted(p for p in ROOT.iterdir()
                   if p.is_dir() and re.match(r"^\d\d-", p.name) and (p / "CMakeLists.txt").exists())
NOT_STUDENT_FILES = {"README.md", "HINTS.md", "CMakeLists.txt"}

# What Classroom 50's runner sets for autograder.py (made up: the runner is not run here).
CLASSROOM50_ENV = {
    "CLASSROOM": "fibers-fall", "ASSIGNMENT": "all-exercises",
    "SUBMISSION_TAG": "submit/2026-12-04T10-00-00Z-a1b2c3d",
    "COMMIT_URL": "https://github.com/org/fibers-fall-all-exercises-alice/commit/a1b2c3d",
    "RELEASE_URL": "https://github.com/org/fibers-fall-all-exercises-alice/releases/tag/submit%2F1",
}

# The first major version of each action that runs on Node 24 (from each action's release notes
# and action.yml: checkout 5.0.0, upload-artifact 6.0.0, download-artifact 7.0.0); every older
# major runs on Node 20, which GitHub's runners dropped on 2026-09-16. An action not listed
# fails the check until someone reads its action.yml and adds it.
NODE24_MAJORS = {"actions/checkout": 5, "actions/upload-artifact": 6,
                 "actions/download-artifact": 7}
# GitHub Classroom's own actions, retired with it on 2026-08-28 (and Node 20 besides).
RETIRED = ("classroom-resources/",)


def load(name, path):
    """A script as a module (the grader and the autograder have no .py name or no package)."""
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    return module


def run(command, cwd=REPO, env=None, timeout=1700):
    done = subprocess.run(command, cwd=cwd, env={**os.environ, **(env or {})}, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return done.returncode, done.stdout


def grade(*args, build=BUILD, env=None):
    """Runs exercises/grade; returns (exit status, its output, the JSON results)."""
    with tempfile.TemporaryDirectory() as scratch:
        results = Path(scratch) / "results.json"
        code, output = run([str(GRADE), *args, "--json", str(results)],
                           env={"BUILD": str(build), **(env or {})})
        report = json.loads(results.read_text()) if results.exists() else None
    return code, output, report


def checkout_in(folder, *parts):
    """A folder that looks like a checkout of this repository (cwd for the workflow's steps
    and for autograder.py): links to the parts named, so nothing is written in the sources."""
    for part in parts:
        (folder / part).symlink_to(REPO / part)
    return folder


def bundle_in(folder):
    """A Classroom 50 bundle whose course is this repository."""
    (folder / "bundle").mkdir()
    (folder / "bundle" / "course").symlink_to(REPO)
    return folder / "bundle"


def ctest_plan(tree, label, prefix):
    """One exercise's solution tests as CTest knows them: each one's name, labels, task and
    points (from the labels common/label_graded_tests.cmake gives them)."""
    code, listing = run(["ctest", "--test-dir", str(tree), "-L", f"^{label}$", "--show-only=json-v1"])
    assert code == 0, listing
    tests = []
    for test in json.loads(listing)["tests"]:
        properties = {p["name"]: p["value"] for p in test.get("properties", [])}
        labels = properties.get("LABELS", [])
        tagged = dict(re.findall(r"^(task|points)[_=](\d+)$", "\n".join(labels), re.M))
        tests.append({"name": test["name"][len(prefix):], "labels": labels,
                      "task": int(tagged.get("task", 0)) or None,
                      "points": int(tagged.get("points", 1)),
                      "part": next((p for p in ("core", "stretch") if p in labels), None)})
    return tests


def workflow_step(workflow, name):
    """The `run: |` script of the workflow's step with this name."""
    match = re.search(rf"(?m)^(\s*)- name: {re.escape(name)}\n(?:\1  (?!run:).*\n)*"
                      rf"\1  run: \|\n((?:\1    .*\n|\s*\n)+)", workflow)
    if not match:
        raise AssertionError(f"no step '{name}' with a run: | script")
    return "\n".join(line[len(match.group(1)) + 4:] for line in match.group(2).splitlines())


def classroom50_problems(result, env):
    """What Classroom 50 would refuse in a result.json, as its wiki page "Advanced Autograding"
    documents the contract and its runner.py's validate_result checks it; [] when nothing."""
    problems = []

    def count(value):
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    if result.get("schema") != "classroom50/result/v1":
        problems.append(f"schema {result.get('schema')!r}")
    for field, variable in (("classroom", "CLASSROOM"), ("assignment", "ASSIGNMENT"),
                            ("submission", "SUBMISSION_TAG"), ("commit", "COMMIT_URL"),
                            ("release", "RELEASE_URL")):
        if result.get(field) != env[variable]:
            problems.append(f"{field} {result.get(field)!r} is not ${variable}")
    if not str(result.get("submission", "")).startswith("submit/"):
        problems.append("submission is not a submit/* tag")
    for field in ("review", "datetime"):
        if not isinstance(result.get(field), str) or not result[field]:
            problems.append(f"{field} is not a non-empty string")
    if not (count(result.get("score")) and count(result.get("max-score"))
            and result["score"] <= result["max-score"]):
        problems.append(f"score {result.get('score')!r} / max-score {result.get('max-score')!r}")
    tests = result.get("tests")
    if not isinstance(tests, list):
        return problems + ["tests is not a list"]
    for i, t in enumerate(tests):
        if not (isinstance(t, dict) and isinstance(t.get("test-name"), str) and t["test-name"]
                and isinstance(t.get("passed"), bool) and count(t.get("score"))
                and count(t.get("max-score")) and t["score"] <= t["max-score"]):
            problems.append(f"tests[{i}] {t!r}")
    if len({t.get("test-name") for t in tests}) != len(tests):
        problems.append("two tests with one name")
    if problems == [] and (sum(t["score"] for t in tests) != result["score"]
                           or sum(t["max-score"] for t in tests) != result["max-score"]):
        problems.append("score and max-score are not the sums of the tests'")
    return problems


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


def stretch_tasks(readme):
    """The task numbers the README marks as stretch: in the title (`**Stretch: ...**`,
    `**name (stretch).**`) or below a line `Stretch:`."""
    stretch, below = set(), False
    for line in readme.splitlines():
        below = below or line.strip() == "Stretch:"
        task = re.match(r"^(\d+)\. \*\*(.*?)\*\*", line)
        if task and (below or "stretch" in task.group(2).lower()):
            stretch.add(int(task.group(1)))
    return stretch


class GraderTest(unittest.TestCase):
    maxDiff = None

    def test_solutions_get_full_marks(self):
        """The workflow's own grade step, run here: in a repository with solutions/ it grades
        them. Then the same results as Classroom 50's result.json."""
        workflow = (WORKFLOWS / "grade.yml").read_text()
        with tempfile.TemporaryDirectory() as scratch:
            checkout = checkout_in(Path(scratch), "exercises", "lessons", "solutions")
            summary = checkout / "step-summary.md"
            # As GitHub runs a step's script in bash (shell: bash).
            script = workflow_step(workflow, "Grade")
            code, output = run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                               cwd=checkout, env={"BUILD": str(BUILD),
                                                  "GITHUB_STEP_SUMMARY": str(summary)})
            self.assertEqual(code, 0, output)
            report = json.loads((checkout / "grade-results.json").read_text())
            table = summary.read_text()
        self.assertTrue(report["full_marks"], output)
        self.assertEqual(report["graded"], "solutions")
        self.assertEqual([e["name"] for e in report["exercises"]], [e.name for e in EXERCISES])
        for exercise in report["exercises"]:
            for test in exercise["tests"]:
                self.assertEqual(test["verdict"], "pass", f"{exercise['name']}: {test['name']}")
        total = report["total"]
        self.assertRegex(output, rf"Score: {total}/{total}\n")
        self.assertIn(f"**Score: {total}/{total}**", table)
        self.assertEqual(len(re.findall(r"(?m)^\| \d\d-\S+ \| (\d+)/\1 \|", table)),
                         len(EXERCISES), table)

        result = load("autograder", AUTOGRADER).to_result(report, CLASSROOM50_ENV)
        self.assertEqual(classroom50_problems(result, CLASSROOM50_ENV), [])
        self.assertEqual((result["score"], result["max-score"]), (total, total))
        self.assertTrue(all(t["passed"] and t["score"] == t["max-score"] > 0
                            for t in result["tests"]))

    def test_every_stub_test_fails(self):
        """The untouched stubs, graded by Classroom 50's autograder.py end to end (as its
        runner would run it, in a checkout, with its variables): every test fails, cleanly."""
        with tempfile.TemporaryDirectory() as scratch:
            checkout = checkout_in(Path(scratch), "exercises")
            code, output = run(["/usr/bin/python3", str(AUTOGRADER)], cwd=checkout,
                               env={"BUILD": str(BUILD), **CLASSROOM50_ENV,
                                    "CLASSROOM50_BUNDLE_DIR": str(bundle_in(Path(scratch)))})
            self.assertEqual(code, 0, output)
            report = json.loads((checkout / "grade-results.json").read_text())
            result = json.loads((checkout / "result.json").read_text())
        self.assertEqual(report["score"], 0, output)
        for exercise in report["exercises"]:
            name = exercise["name"]
            self.assertTrue(exercise["built"], f"{name}: the untouched stub must compile\n{output}")
            self.assertGreater(len(exercise["tests"]), 0, name)
            for test in exercise["tests"]:
                # A clean failure: a crash or a hang would be a poor first sight for a student.
                self.assertEqual(test["verdict"], "fail",
                                 f"{name}: '{test['name']}' must fail against the stub, cleanly")
                self.assertTrue(test["story"] and Path(test["transcript"]).exists(), test)
            # The student is told where to start (the path as seen from the checkout).
            self.assertRegex(output, rf"next: task 1 in \S*exercises/{name}/README.md;")
        # Each way a test tells its failure shows among the stubs' (the story of a crash, a
        # hang and a build that fails: test_grader_survives_broken_stubs), with its headline.
        failed = {t["kind"]: t for e in report["exercises"] for t in e["tests"]}
        headlines = {"check": r"FAIL in a CHECK after [1-9]\d* steps?$",
                     "require": "FAIL in a REQUIRE, which stops the test; its last step: ",
                     "require-before-steps": "FAIL in a REQUIRE before any step",
                     "exception": r"FAIL: an exception escaped \('TODO\(ex",
                     "blocked-carrier": "FAIL: a carrier thread was blocked",
                     "stuck-fiber": "FAIL: a fiber never finished"}
        for kind, headline in headlines.items():
            self.assertIn(kind, failed, f"no stub's test fails in a {kind} any more: add a broken "
                                        f"copy that does to test_grader_survives_broken_stubs")
            self.assertRegex(failed[kind]["story"][0], headline)
        self.assertTrue(any(line.strip().startswith("step: ")
                            for line in failed["check"]["story"]))
        story = "\n".join(failed["blocked-carrier"]["story"])
        self.assertIn("watchdog: the carrier thread 'test-carrier' has been blocked for", story)
        self.assertIn("A std:: primitive", story)

        self.assertEqual(classroom50_problems(result, CLASSROOM50_ENV), [])
        self.assertEqual(len(result["tests"]), sum(len(e["tests"]) for e in report["exercises"]))
        self.assertEqual((result["score"], result["max-score"]), (0, report["total"]))
        self.assertTrue(all(not t["passed"] and t["score"] == 0 < t["max-score"]
                            for t in result["tests"]))
        # The student's failing tests are not the project's: `ctest` in the build runs none.
        code, listing = run(["ctest", "--test-dir", str(BUILD), "-N"])
        self.assertEqual(code, 0, listing)
        self.assertNotRegex(listing, r"#\d+: exercise-")
        self.assertRegex(listing, r"#\d+: solution-")

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
                if "graded_main" in entry["file"]:
                    continue
                command = shlex.split(entry["command"]) + ["-fsyntax-only", "-Werror"]
                done = subprocess.run(command, cwd=entry["directory"], text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                self.assertEqual(done.returncode, 0, f"{entry['file']}:\n{done.stdout}")
                checked.add(entry["file"])
        self.assertTrue(any(f.endswith("_test.cpp") for f in checked))

    def test_exercise_folders_are_complete(self):
        grader = load("grade", GRADE)
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
        plan = grader.source_plan(exercise)
        self.assertTrue(plan, f"{name}: no graded tests")

        # CTest holds what the test source declares: a test per TEST_CASE, each labelled with
        # its exercise, task and points, core or stretch as the README says.
        tests = ctest_plan(BUILD, f"ex{name[:2]}", f"solution-{name}:")
        self.assertEqual([t["name"] for t in tests], [t["name"] for t in plan],
                         f"{name}: CTest's tests (labelled ex{name[:2]}) vs tests/*_test.cpp")
        stretch = stretch_tasks(readme)
        for test, declared in zip(tests, plan):
            self.assertEqual(declared["tags"], f"[ex{number}][task_{declared['task']}]"
                                               f"[points={declared['points']}]", test["name"])
            self.assertEqual((test["task"], test["points"]), (declared["task"], declared["points"]))
            self.assertEqual(test["part"], "stretch" if test["task"] in stretch else "core",
                             f"{name}: '{test['name']}': the README and STRETCH in CMakeLists.txt")
            self.assertTrue({"exercises", "unit"} <= set(test["labels"]), test["labels"])
            self.assertNotRegex(test["name"], r'[";\\]|^#', test["name"])
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

    def test_summary_of_a_class(self):
        """--summary reads --json results (made up here: three students of known scores)."""
        grader = load("grade", GRADE)
        plans = {e.name: grader.source_plan(e) for e in EXERCISES}

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
            code, output = run([str(GRADE), "--summary", *map(str, paths), "--csv", str(table)])
            self.assertEqual(code, 0, output)
            self.assertIn("3 students: alice, bob, carol", output)
            # The median of (total, 0, task 1's points) is task 1's points: carol's.
            self.assertRegex(output, rf"(?m)^{first}\s+{task1}\s+{total}\s+1/3\s+2/3")
            self.assertRegex(output, rf"(?m)^  task 1\s+{task1}\s+{task1}\s+2/3\s+1/3")
            # Every task but task 1 is failed by bob and carol: those lead the list.
            self.assertRegex(output, r"Tasks most students fail:\n  \d\d task [2-9]: 2 of 3 "
                                     r"\(bob, carol\)")
            rows = list(csv.reader(table.read_text().splitlines()))
            self.assertEqual(rows[0][:4], ["student", "score", "total", first])
            self.assertEqual([r[0] for r in rows], ["student", "(out of)", "alice", "bob", "carol",
                                                    "(median)"])
            self.assertEqual(rows[2][3], str(total))
            self.assertEqual(rows[4][4], str(task1))  # carol, the first exercise's task 1

            # A file that is not a result is one line and exit status 2.
            paths[0].write_text("{}")
            code, output = run([str(GRADE), "--summary", *map(str, paths)])
            self.assertEqual(code, 2)
            self.assertRegex(output, r"^exercises/grade: .*alice.json is not a result")

    def test_grader_survives_broken_stubs(self):
        """Hand-ins of exercise 04 whose stubs crash, do not compile and hang, and one solved:
        each costs its own points only, and each is told for what it is.

        The hand-ins are in $BUILD/grader-selftest; they are built in $BUILD/grading, the tree
        every grading test shares, so the test framework is compiled once for all of them."""
        base = BUILD / "grader-selftest"
        original = ROOT / "04-spike-report"
        functions = ('std::vector<SpikeRow> read_spike_csv(std::istream&) {{ {0} }}\n'
                     'SpikeReport summarize(const std::vector<SpikeRow>&, double) {{ {0} }}\n'
                     'std::string status_name(int) {{ {0} }}\n')
        variants = {
            "crashes": '#include "spike_report.hpp"\n#include <csignal>\n'
                       + functions.format("std::raise(SIGSEGV); return {};"),
            "does-not-compile": (original / "spike_report.cpp").read_text() + "int broken = ;\n",
            "hangs": '#include "spike_report.hpp"\n#include <thread>\n'
                     '[[noreturn]] static void forever() { for (;;) std::this_thread::sleep_for('
                     'std::chrono::seconds(1)); }\n' + functions.format("forever();"),
            "solved": (SOLUTIONS / original.name / "spike_report.cpp").read_text(),
        }
        by_name, output = {}, {}
        for variant, source in variants.items():
            handin = base / variant / original.name
            copy_if_changed(original, handin, but={"spike_report.cpp"})
            write_if_changed(handin / "spike_report.cpp", source)
            # A short time limit per test, so the hung ones cost seconds, not minutes.
            code, output[variant], report = grade("--root", str(base / variant),
                                                  env={"GRADED_TEST_SECONDS": "3"})
            self.assertEqual(code, 0 if variant == "solved" else 1, output[variant])
            by_name[variant] = report["exercises"][0]
        total = by_name["solved"]["total"]
        self.assertEqual(by_name["solved"]["points"], total)

        for test in by_name["crashes"]["tests"]:
            self.assertEqual((test["verdict"], test["kind"], test["detail"]),
                             ("crash", "crash", "crashed: SIGSEGV"), test["name"])
            self.assertTrue(test["story"][0].startswith("CRASH: SIGSEGV"), test["story"])
            self.assertTrue(Path(test["transcript"]).exists())

        broken = by_name["does-not-compile"]
        self.assertFalse(broken["built"])
        self.assertEqual((broken["points"], broken["total"]), (0, total))
        self.assertEqual({t["verdict"] for t in broken["tests"]}, {"not built"})
        self.assertTrue(any("spike_report.cpp" in line and "expected primary-expression" in line
                            for line in broken["errors"]), broken["errors"])
        self.assertIn("DOES NOT COMPILE", output["does-not-compile"])

        # A hang: the program stops itself with SIGTERM at its limit, so Catch2 tells the steps
        # the test had reached; nothing of it is left running.
        hung = by_name["hangs"]["tests"]
        for test in hung:
            self.assertEqual((test["verdict"], test["kind"], test["detail"]),
                             ("timeout", "hang", "no verdict within 3 s: stopped (a wait that "
                                                 "never ends?)"), test["name"])
            self.assertTrue(test["story"][0].startswith("HANG: the test never finished"))
            self.assertIn("SIGTERM", "\n".join(test["story"]))
        self.assertTrue(any("its last step: " in t["story"][0] for t in hung))
        self.assertEqual(processes_running(BUILD / "grading" / "build" / "bin"), [])

        # Mistakes a user can make get one line and exit status 2.
        code, output, _ = grade("no-such-exercise")
        self.assertEqual(code, 2)
        self.assertIn("no exercise named 'no-such-exercise'", output)

    def test_a_closed_build_runs_the_tests_as_the_caller(self):
        """A checkout under /root is closed to the unprivileged test user: as root, the grader
        says so and runs the tests as the caller rather than stopping (CI may clone anywhere)."""
        grader = load("grade_script", REPO / "exercises" / "grade")
        closed = Path(tempfile.mkdtemp(prefix="grader-closed-"))
        try:
            program = closed / "bin" / "exercise-01"
            program.parent.mkdir()
            program.write_text("")
            closed.chmod(0o700)
            user = grader.test_user_for(program)
            if os.geteuid() == 0:
                self.assertIsNone(user)
                self.assertEqual(grader.WARNED_CLOSED, [closed])
                closed.chmod(0o755)
                self.assertEqual(grader.test_user_for(program), grader.TEST_USER)
            else:
                self.assertIsNone(user)  # a user's tests run as that user, closed or not
        finally:
            shutil.rmtree(closed)

    def test_workflows_run_on_node_24(self):
        """Every workflow uses only actions that run on Node 24, none of GitHub Classroom's;
        grade.yml grades on Debian 12 and keeps its results even when the grade step fails."""
        workflows = sorted(WORKFLOWS.glob("*.y*ml"))
        self.assertIn(WORKFLOWS / "grade.yml", workflows)
        self.assertNotIn(WORKFLOWS / "classroom.yml", workflows, "GitHub Classroom is retired")
        for workflow in workflows:
            for action in re.findall(r"(?m)^\s*(?:- )?uses:\s*(\S+)", workflow.read_text()):
                with self.subTest(workflow=workflow.name, action=action):
                    self.assertFalse(action.startswith(RETIRED), "GitHub Classroom's, retired")
                    name, _, version = action.partition("@")
                    major = re.fullmatch(r"v(\d+)(?:\.\d+)*", version)
                    self.assertIn(name, NODE24_MAJORS, "not known to run on Node 24")
                    self.assertTrue(major and int(major.group(1)) >= NODE24_MAJORS[name],
                                    f"{name} runs on Node 24 from v{NODE24_MAJORS[name]} on")
        grade_yml = (WORKFLOWS / "grade.yml").read_text()
        self.assertRegex(grade_yml, r"(?m)^    container: debian:12$")
        self.assertIn("exercises/grade", workflow_step(grade_yml, "Grade"))
        self.assertRegex(grade_yml, r"- name: Keep the results\n\s+if: always\(\)\n"
                                    r"\s+uses: actions/upload-artifact@\S+\n\s+with:\n"
                                    r"\s+name: grade-results\n\s+path: grade-results.json\n")
        self.assertTrue((REPO / "lessons" / "tools" / "setup").exists())

        # autograder.py: its exercise per assignment, per-test partial credit, and one line and
        # exit status 1 when it cannot grade.
        autograder = load("autograder", AUTOGRADER)
        self.assertEqual([autograder.exercise_of(s) for s in
                          ("07", "07-reactor", "11-bound-the-downstream", "fibers", "2026-labs")],
                         ["07", "07", "11", None, None])
        with tempfile.TemporaryDirectory() as scratch:
            code, output = run(["/usr/bin/python3", str(AUTOGRADER)], cwd=scratch,
                               env={**{k: "" for k in CLASSROOM50_ENV}, "CLASSROOM": "c"})
            self.assertEqual(code, 1)
            self.assertRegex(output, r"^::error::autograder.py: ASSIGNMENT, SUBMISSION_TAG, "
                                     r"COMMIT_URL, RELEASE_URL not set")
            # Without a course in its bundle it grades nothing, and never with the checkout's.
            (Path(scratch) / "exercises").mkdir()
            (Path(scratch) / "exercises" / "grade").write_text("#!/bin/sh\ntouch ran\n")
            (Path(scratch) / "exercises" / "grade").chmod(0o755)
            code, output = run(["/usr/bin/python3", str(AUTOGRADER)], cwd=scratch,
                               env={**CLASSROOM50_ENV, "CLASSROOM50_BUNDLE_DIR": scratch})
            self.assertEqual(code, 1)
            self.assertRegex(output, r"^::error::autograder.py: no course/exercises/grade in the "
                                     r"bundle .*the checkout's own grader is never run")
            self.assertFalse((Path(scratch) / "ran").exists())
        half = {"graded": "exercises", "exercises": [{"name": "04-spike-report", "tests": [
            {"name": "a", "points": 2, "verdict": "pass"},
            {"name": "b", "points": 1, "verdict": "crash"}]}]}
        result = autograder.to_result(half, CLASSROOM50_ENV)
        self.assertEqual(classroom50_problems(result, CLASSROOM50_ENV), [])
        self.assertEqual((result["score"], result["max-score"]), (2, 3))
        self.assertEqual([(t["test-name"], t["passed"], t["score"], t["max-score"])
                          for t in result["tests"]],
                         [("04-spike-report: a", True, 2, 2), ("04-spike-report: b", False, 0, 1)])
        # The check itself: it refuses what Classroom 50 refuses.
        for broken in ({**result, "schema": "v1"}, {**result, "score": 3},
                       {**result, "tests": [{**result["tests"][0], "passed": 1}]}):
            self.assertNotEqual(classroom50_problems(broken, CLASSROOM50_ENV), [])


def write_if_changed(path, text):
    # Unchanged files keep their time stamps, so the fixture's build stays incremental.
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def copy_if_changed(source, target, but):
    """Copies the files under `source` whose names are not in `but`."""
    for item in source.rglob("*"):
        if item.is_file() and item.name not in but:
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
