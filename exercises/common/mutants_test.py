#!/usr/bin/python3
"""Every mutant loses points: run by CTest (label `exercises`) as exercises_mutants_lose_points.

    /usr/bin/python3 exercises/common/mutants_test.py           every exercise's mutants
    /usr/bin/python3 exercises/common/mutants_test.py 07 11     only these exercises'

A mutant is a known-wrong variant of a reference solution, one a student could plausibly write:
exercises/NN-name/mutants/<slug>.patch. Its first line says what is wrong ('# notify() does
nothing'); the rest is a unified diff against the files of solutions/NN-name/, named a/<file>
and b/<file>, which `patch -p1` applies in a copy of that folder (patch skips the lines before
the first '---'). An exercise whose tests give a mutant full marks does not test what its README
asks for.

For each exercise this builds, in $BUILD/mutants/, a copy of the exercise folder with the
solution's files in place of the stub's, grades it once as it is (it must get full marks: the
control), then once per mutant with the mutant's patch applied, each with
`exercises/grade --root $BUILD/mutants/exercises NN --json FILE`. It fails, naming the mutant,
when a mutant gets full marks, when a patch has no description line or no longer applies
cleanly, when a mutant does not compile (it would lose its points for nothing), and when an
exercise has fewer than MIN_MUTANTS mutants. The build folder is kept between runs, so only the
files a mutant changes are compiled again.

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
GRADE = REPO / "exercises" / "grade"
EXERCISES = REPO / "exercises"
SOLUTIONS = REPO / "solutions"
BUILD = Path(os.environ.get("BUILD") or REPO / "build").resolve()
HERE = BUILD / "mutants"  # its own build folder: the grader refuses one made for other exercises

# Two at least: one mutant that loses points could be a lucky shot; two show the tests look at
# more than one thing. Below it the test fails and names the exercise.
MIN_MUTANTS = 2

# What a patch starts with: one line that says what is wrong.
DESCRIPTION = re.compile(r"^# \S.*$")

# The exercise folder's parts that are no student's files.
NOT_COPIED = {"mutants"}


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


def prepare(exercise):
    """The exercise folder copied to HERE/exercises, its student files the solution's. Returns
    (the copy, {student file name: the solution's bytes})."""
    copy = HERE / "exercises" / exercise.name
    for item in exercise.rglob("*"):
        relative = item.relative_to(exercise)
        if item.is_file() and relative.parts[0] not in NOT_COPIED:
            write_if_changed(copy / relative, item.read_bytes())
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
    """Grades the copy; returns (its --json report of this exercise or None, seconds)."""
    results = log.with_suffix(".json")
    results.unlink(missing_ok=True)
    began = time.monotonic()
    with open(log, "w") as out:
        subprocess.run([str(GRADE), "--root", str(copy.parent), copy.name, "--json", str(results)],
                       env={**os.environ, "BUILD": str(HERE / "build")}, cwd=REPO,
                       stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - began
    if not results.exists():
        return None, seconds
    report = json.loads(results.read_text())
    return report["exercises"][0], seconds


def lost(report):
    """The tests a graded exercise did not pass, as 'name (verdict)'."""
    return [f"{t['name']} ({t['verdict']})" for t in report["tests"] if t["verdict"] != "pass"]


def prepare_all(everyone):
    """Copies every exercise, graded or not, so that the build folder always knows them all: it
    is configured for the exercises that are there on its first run, and one added later would
    be unknown to it. When the set changes, the build folder starts afresh."""
    names = HERE / "exercises.txt"
    listed = "".join(f"{e.name}\n" for e in everyone)
    if names.exists() and names.read_text() != listed:
        shutil.rmtree(HERE / "build", ignore_errors=True)
        shutil.rmtree(HERE / "exercises", ignore_errors=True)
    copies = {e.name: prepare(e) for e in everyone}
    names.write_text(listed)
    return copies


def main():
    if shutil.which("patch") is None:
        fail_now("GNU patch is not installed; lessons/tools/setup --no-build installs it")
    problems = []
    began = time.monotonic()
    (HERE / "logs").mkdir(parents=True, exist_ok=True)
    copies = prepare_all(exercises([]))
    for exercise in exercises(sys.argv[1:]):
        patches = sorted((exercise / "mutants").glob("*.patch"))
        if len(patches) < MIN_MUTANTS:
            problems.append(f"{exercise.name}: {len(patches)} mutant(s) in mutants/, "
                            f"at least {MIN_MUTANTS} wanted")
        copy, files = copies[exercise.name]

        # The control: the copy as it is must get full marks, or a mutant's lost points would
        # say nothing about its patch.
        log = HERE / "logs" / f"{exercise.name}.log"
        report, seconds = grade(copy, log)
        if report is None or not report["built"] or report["points"] != report["total"]:
            got = "no result" if report is None else f"{report['points']}/{report['total']}"
            problems.append(f"{exercise.name}: the unpatched solution got {got} (log: {log}); "
                            f"its mutants are not graded")
            print(f"{exercise.name}: the solution itself got {got}, see {log}", flush=True)
            continue
        print(f"{exercise.name}: the solution {report['points']}/{report['total']} "
              f"({seconds:.1f} s)", flush=True)

        for patch in patches:
            name = f"{exercise.name}/mutants/{patch.name}"
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
            report, seconds = grade(copy, log)
            if report is None or not report["built"]:
                problems.append(f"{name} does not compile, so it loses its points for nothing "
                                f"(log: {log})")
                continue
            score = f"{report['points']}/{report['total']}"
            print(f"  {score:>5}  {patch.stem}: {what} ({seconds:.1f} s)", flush=True)
            for test in lost(report):
                print(f"         lost: {test}")
            if report["points"] == report["total"]:
                problems.append(f"{name} ({what}) got full marks, {score}: the tests do not "
                                f"catch it (log: {log})")
        for file, data in files.items():
            write_if_changed(copy / file, data)

    print(f"\n{time.monotonic() - began:.0f} s in all")
    if problems:
        print("\nFAILED:\n" + "\n".join(f"  {p}" for p in problems))
        return 1
    print("every mutant lost points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
