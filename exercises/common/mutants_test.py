#!/usr/bin/python3
"""Every mutant loses points: run by CTest (label `exercises`) as exercises_mutants_lose_points.

    /usr/bin/python3 exercises/common/mutants_test.py           every exercise's mutants
    /usr/bin/python3 exercises/common/mutants_test.py 07 11     only these exercises'

A mutant is a known-wrong variant of a reference solution, one a student could plausibly write:
solutions/NN-name/mutants/<slug>.patch. Its first line says what is wrong ('# notify() does
nothing'); the rest is a unified diff against the files of solutions/NN-name/, named a/<file>
and b/<file>, which `patch -p1` applies in a copy of that folder (patch skips the lines before
the first '---'). An exercise whose tests give a mutant full marks does not test what its README
asks for. The mutants live with the solutions because their diffs quote them: a handout without
solutions/ has none.

For each exercise this makes, in $BUILD/mutants/checkout/exercises/, a copy of the exercise
folder with the solution's files in place of the stub's, and grades it once per mutant with the
mutant's patch applied, through Classroom 50's autograder.py as its runner would run it (that
folder's parent as the checkout, a bundle whose course is this repository), which runs
`exercises/grade --root $BUILD/mutants/checkout/exercises NN`. The grader builds in the grading
tree every grading test shares, $BUILD/grading (CTest gives them turns: RESOURCE_LOCK
exercises_build), so the lessons' libraries are compiled once for all of them and a mutant
recompiles only the files it changes. It prints each mutant's score and the tests it failed,
and fails, naming the mutant, when
- a mutant gets full marks: the tests do not catch it (or result.json's score is not the
  grader's);
- a mutant passes no test at all: a subtle mistake keeps most of the work right, so this one
  (or the copy it was graded in) is broken, and its lost points say nothing;
- a patch has no description line, no longer applies cleanly, or does not compile;
- an exercise has fewer than MIN_MUTANTS mutants.
The unpatched copies are not graded: exercises_solutions_get_full_marks grades the same sources
with the same tests.

Standard library and GNU patch only.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
AUTOGRADER = REPO / "exercises" / "classroom50" / "autograder.py"
EXERCISES = REPO / "exercises"
SOLUTIONS = REPO / "solutions"
BUILD = Path(os.environ.get("BUILD") or REPO / "build").resolve()
HERE = BUILD / "mutants"  # the copies, the bundle and the logs; the build is $BUILD/grading

# Two at least: one mutant that loses points could be a lucky shot; two show the tests look at
# more than one thing. Below it the test fails and names the exercise.
MIN_MUTANTS = 2

# What a patch starts with: one line that says what is wrong.
DESCRIPTION = re.compile(r"^# \S.*$")

# Where an exercise's mutants are, in its solution's folder.
MUTANTS = "mutants"


def fail_now(message):
    print(f"mutants_test: {message}", file=sys.stderr)
    sys.exit(2)


def exercises(selected):
    found = sorted(p for p in EXERCISES.iterdir()
                   if p.is_dir() and re.match(r"^\d\d-", p.name) and (p / "CMakeLists.txt").exists())
    if selected:
        found = [e for e in found if any(e.name.startswith(s) for s in selected)]
        if not found:
            fail_now(f"no exercise starts with {' or '.join(selected)}")
    return found


def description(patch):
    """The patch's first line without its '# ', or None when it has no such line."""
    lines = patch.read_text().splitlines()
    if not lines or not DESCRIPTION.match(lines[0]) or not any(l.startswith("--- ") for l in lines):
        return None
    return lines[0][2:]


def write_if_changed(path, data):
    # Unchanged files keep their time stamps, so a mutant rebuilds only what it changes.
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)


def prepare(exercise, root):
    """The exercise folder copied into `root`, its student files the solution's. Returns (the
    copy, {student file name: the solution's bytes})."""
    copy = root / exercise.name
    for item in exercise.rglob("*"):
        if item.is_file():
            write_if_changed(copy / item.relative_to(exercise), item.read_bytes())
    solution = SOLUTIONS / exercise.name
    files = {p.name: p.read_bytes() for p in solution.iterdir() if p.is_file()}
    for name, data in files.items():
        write_if_changed(copy / name, data)
    return copy, files


def patched(exercise, files, patch):
    """The solution's files with `patch` applied ({name: bytes}), or a string saying why not."""
    with tempfile.TemporaryDirectory() as scratch:
        for name, data in files.items():
            (Path(scratch) / name).write_bytes(data)
        # --fuzz=0: a hunk whose context moved in the solution must be refreshed, not guessed.
        done = subprocess.run(["patch", "-p1", "--batch", "--fuzz=0", "--no-backup-if-mismatch",
                               "--reject-file=-", "--silent", "-d", scratch, "-i", str(patch)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            return f"does not apply to solutions/{exercise.name}: {done.stdout.strip()}"
        result = {p.name: p.read_bytes() for p in Path(scratch).iterdir() if p.is_file()}
    if set(result) != set(files):
        return "adds or removes files: a mutant only changes the solution's own files"
    if result == files:
        return "changes nothing"
    return result


def grade(copy, log):
    """Grades the copy through Classroom 50's autograder.py (which runs exercises/grade, the
    course's, from its bundle), in the copy's checkout folder. Returns (the grader's
    --json report of this exercise or None, result.json's score or None, seconds)."""
    checkout = copy.parent.parent
    for stale in ("grade-results.json", "result.json"):
        (checkout / stale).unlink(missing_ok=True)
    bundle = HERE / "bundle"
    bundle.mkdir(parents=True, exist_ok=True)
    if not (bundle / "course").is_symlink():
        (bundle / "course").symlink_to(REPO)
    env = {**os.environ, "BUILD": str(BUILD), "CLASSROOM50_BUNDLE_DIR": str(bundle),
           "CLASSROOM": "mutants", "ASSIGNMENT": f"{copy.name[:2]}-mutant",
           "SUBMISSION_TAG": "submit/mutant", "COMMIT_URL": "https://example.org/commit/0",
           "RELEASE_URL": "https://example.org/release/0"}
    began = time.monotonic()
    with open(log, "w") as out:
        subprocess.run(["/usr/bin/python3", str(AUTOGRADER)], env=env, cwd=checkout,
                       stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - began
    results, result = checkout / "grade-results.json", checkout / "result.json"
    if not results.exists() or not result.exists():
        return None, None, seconds
    return (json.loads(results.read_text())["exercises"][0],
            json.loads(result.read_text())["score"], seconds)


def lost(report):
    """The tests a graded exercise did not pass, as 'name (verdict)'."""
    return [f"{t['name']} ({t['verdict']})" for t in report["tests"] if t["verdict"] != "pass"]


def mutants_of(exercise, copy, files):
    """Grades each mutant of one exercise. Returns (the lines to print, the problems)."""
    lines, problems = [exercise.name], []
    folder = SOLUTIONS / exercise.name / MUTANTS
    patches = sorted(folder.glob("*.patch"))
    if len(patches) < MIN_MUTANTS:
        problems.append(f"{exercise.name}: {len(patches)} mutant(s) in solutions/{exercise.name}/"
                        f"{MUTANTS}/, at least {MIN_MUTANTS} wanted")
    for patch in patches:
        name = f"solutions/{exercise.name}/{MUTANTS}/{patch.name}"
        what = description(patch)
        if what is None:
            problems.append(f"{name}: its first line must say what is wrong ('# ...'), "
                            f"then the diff")
            continue
        variant = patched(exercise, files, patch)
        if isinstance(variant, str):
            problems.append(f"{name}: {variant}")
            continue
        for file, data in variant.items():
            write_if_changed(copy / file, data)
        log = HERE / "logs" / f"{exercise.name}--{patch.stem}.log"
        report, classroom_score, seconds = grade(copy, log)
        if report is None or not report["built"]:
            problems.append(f"{name} does not compile, so it loses its points for nothing "
                            f"(log: {log})")
            continue
        score = f"{report['points']}/{report['total']}"
        lines.append(f"  {score:>5}  {patch.stem}: {what} ({seconds:.1f} s)")
        lines += [f"         lost: {test}" for test in lost(report)]
        if report["points"] == report["total"] or classroom_score != report["points"]:
            problems.append(f"{name} ({what}) got full marks, {score}: the tests do not "
                            f"catch it (log: {log})")
        if report["passed"] == 0:
            problems.append(f"{name} passed no test at all: a broken mutant, or a broken "
                            f"copy (log: {log})")
    for file, data in files.items():
        write_if_changed(copy / file, data)
    return lines, problems


def main():
    if shutil.which("patch") is None:
        fail_now("GNU patch is not installed; lessons/tools/setup --no-build installs it")
    began = time.monotonic()
    (HERE / "logs").mkdir(parents=True, exist_ok=True)
    problems = []
    checkout = HERE / "checkout" / "exercises"
    for exercise in exercises(sys.argv[1:]):
        lines, found = mutants_of(exercise, *prepare(exercise, checkout))
        print("\n".join(lines), flush=True)
        problems.extend(found)

    print(f"\n{time.monotonic() - began:.0f} s in all")
    if problems:
        print("\nFAILED:\n" + "\n".join(f"  {p}" for p in problems))
        return 1
    print("every mutant lost points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
