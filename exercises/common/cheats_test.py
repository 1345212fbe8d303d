#!/usr/bin/python3
"""Every cheat scores no more than the untouched stub: run by CTest (label `exercises`) as
exercises_cheats_do_not_pay.

    /usr/bin/python3 exercises/common/cheats_test.py           every exercise's cheats
    /usr/bin/python3 exercises/common/cheats_test.py 04        only these exercises'

A cheat is a way to a score without the work, or to the answer: solutions/NN-name/cheats/
<slug>.patch, whose first line says what it does and which `patch -p1` applies at the top of a
hand-in (a copy of the repository as students get it: no solutions/, no .git). Each is graded as
a student's push would be, twice: by exercises/grade (--root the hand-in's exercises) and by
Classroom 50's autograder.py (in the hand-in, with a bundle that holds the course). It fails,
naming the cheat, when
- either scores it above the untouched stub (graded the same ways first), also when read again
  a few seconds after grading (a process left behind could rewrite the results);
- a process of the hand-in's tests is still alive after the grader exits;
- a line of the reference solution shows in the grader's output or results;
- the hand-in's own scripts ran (it leaves cheat-setup-ran when they do).
Hands in at $BUILD/cheats; the grader builds in $BUILD/grading, the tree every grading test
shares (CTest gives them turns: RESOURCE_LOCK exercises_build). Standard library and GNU patch
only.
"""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("BUILD") or REPO / "build").resolve()
HERE = BUILD / "cheats"
GRADING = BUILD / "grading"  # where exercises/grade builds and runs the tests
HANDIN = HERE / "handin"  # one path for every hand-in: the build folders are reused
NOT_HANDED_OUT = {".git", "solutions", "build"}
CLASSROOM50_ENV = {
    "CLASSROOM": "fibers-fall", "ASSIGNMENT": "{number}-cheat",
    "SUBMISSION_TAG": "submit/2026-12-05T10-00-00Z-c4ea7ed",
    "COMMIT_URL": "https://github.com/org/fibers-fall-mallory/commit/c4ea7ed",
    "RELEASE_URL": "https://github.com/org/fibers-fall-mallory/releases/tag/submit%2F1",
}


def hand_in(patch=None):
    """A fresh hand-in at HANDIN, with `patch` applied. Files whose content is the same are left
    alone, so the builds stay incremental."""
    wanted = set()
    for top in REPO.iterdir():
        if top.name in NOT_HANDED_OUT or top.resolve() == BUILD or BUILD.is_relative_to(top):
            continue
        for source in [top] if top.is_file() else top.rglob("*"):
            if source.is_file() and "__pycache__" not in source.parts:
                target = HANDIN / source.relative_to(REPO)
                wanted.add(target)
                if not target.exists() or target.read_bytes() != source.read_bytes():
                    # A new time stamp: a file put back must look changed to the build.
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(source, target)
                    shutil.copymode(source, target)
    for stale in [p for p in HANDIN.rglob("*") if p.is_file() and p not in wanted]:
        stale.unlink()
    if patch:
        done = subprocess.run(["patch", "-s", "-p1", "-i", str(patch)], cwd=HANDIN,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode:
            raise SystemExit(f"cheats_test: {patch} does not apply:\n{done.stdout}")


def graded(number):
    """(score by exercises/grade, score by autograder.py, their output, their results' text)."""
    report = HERE / "grade-results.json"
    report.unlink(missing_ok=True)
    env = {**os.environ, "BUILD": str(BUILD)}
    by_grade = subprocess.run([str(REPO / "exercises" / "grade"), number, "--root",
                               str(HANDIN / "exercises"), "--json", str(report)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    bundle = HERE / "bundle"
    bundle.mkdir(parents=True, exist_ok=True)
    if not (bundle / "course").is_symlink():
        (bundle / "course").symlink_to(REPO)
    env = {**os.environ, **{k: v.format(number=number) for k, v in CLASSROOM50_ENV.items()},
           "CLASSROOM50_BUNDLE_DIR": str(bundle), "BUILD": str(BUILD)}
    by_autograder = subprocess.run(["/usr/bin/python3", str(REPO / "exercises" / "classroom50" /
                                                             "autograder.py")],
                                   cwd=HANDIN, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
    time.sleep(5)  # a process left behind has had time to rewrite the results
    result = HANDIN / "result.json"
    texts = [p.read_text() if p.exists() else "{}" for p in (report, result)]
    scores = [json.loads(texts[0]).get("score"), json.loads(texts[1]).get("score")]
    return scores, by_grade.stdout + by_autograder.stdout, "\n".join(texts)


def survivors():
    """Processes whose program is in the grading tree or whose command line is in the hand-in:
    a graded test's leftovers."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            exe = os.readlink(proc / "exe") if proc.name.isdigit() else ""
            line = (proc / "cmdline").read_bytes().decode(errors="replace") if exe else ""
        except OSError:
            continue
        if str(GRADING) in exe or str(HERE) in exe or (str(HANDIN) in line and "exercises/grade" not in line):
            found.append(f"{proc.name}: {exe}")
    return found


def solution_lines(exercise):
    solution = REPO / "solutions" / exercise.name
    return {line.strip() for f in solution.glob("*.?pp") for line in f.read_text().splitlines()
            if len(line.strip()) >= 30}


def main():
    selected = sys.argv[1:]
    problems = []
    for exercise in sorted((REPO / "solutions").glob("[0-9][0-9]-*")):
        cheats = sorted((exercise / "cheats").glob("*.patch"))
        number = exercise.name[:2]
        if not cheats or (selected and not any(number.startswith(s) for s in selected)):
            continue
        hand_in()
        stub, _, _ = graded(number)
        print(f"{exercise.name}: the stub scores {stub[0]} (exercises/grade), "
              f"{stub[1]} (autograder.py)", flush=True)
        answer = solution_lines(exercise)
        for cheat in cheats:
            what = cheat.read_text().splitlines()[0]
            hand_in(cheat)
            scores, output, results = graded(number)
            print(f"  {cheat.stem}: {scores[0]} (exercises/grade), {scores[1]} (autograder.py)"
                  f"  {what}", flush=True)
            if None in scores or any(s > base for s, base in zip(scores, stub)):
                problems.append(f"{cheat.stem} scores {scores}, the stub {stub}\n{output}")
            left = survivors()
            if left:
                problems.append(f"{cheat.stem}: alive after grading: {', '.join(left)}")
            leaked = [line for line in answer if line in output or json.dumps(line)[1:-1] in results]
            if leaked:
                problems.append(f"{cheat.stem}: the solution shows in the feedback: {leaked[0]}")
            if (HANDIN / "cheat-setup-ran").exists():
                problems.append(f"{cheat.stem}: {(HANDIN / 'cheat-setup-ran').read_text()}")
    for problem in problems:
        print(f"FAIL {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
