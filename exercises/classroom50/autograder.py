#!/usr/bin/env python3
"""Classroom 50's autograder for these exercises: grades a student's push with the course's
exercises/grade and writes ./result.json (schema classroom50/result/v1), one row per graded test
with its points.

Install it once for a classroom (exercises/README.md, "Classroom 50"): the assignment's bundle
(CLASSROOM/autograders/ASSIGNMENT/ in the classroom50 repository, or the classroom's default)
holds this file and course/, a copy of the course's repository without solutions/:

    git archive HEAD | tar -x -C course && rm -rf course/solutions

An assignment whose slug starts with an exercise's number (07, 07-reactor, 07-build-the-reactor)
grades that exercise; any other slug grades all of them.

Classroom 50's runner runs it with the student's checkout as the working directory and sets
CLASSROOM, ASSIGNMENT, SUBMISSION_TAG, COMMIT_URL and RELEASE_URL (REVIEW_URL when it has one,
and CLASSROOM50_BUNDLE_DIR, the folder this file came in). The grader, the setup script and the
tests are the bundle's: nothing of the checkout runs but the student's own files of an exercise,
compiled into its tests and run as an unprivileged user (exercises/grade). It exits 0 when
grading ran, whatever the score, and 1 when it could not (a missing variable, no course in the
bundle, packages that would not install, a grader that could not run): the runner then records
the submission as an error.

Beside result.json it leaves grade-results.json, the grader's own --json results (each failed
test's story), which the assignment's release_assets can attach to the submission's Release.
Uses Python's standard library only.
"""
import datetime
import json
import os
import re
import subprocess
import sys
from pathlib import Path

SCHEMA = "classroom50/result/v1"
REQUIRED = ("CLASSROOM", "ASSIGNMENT", "SUBMISSION_TAG", "COMMIT_URL", "RELEASE_URL")
GRADE_RESULTS = "grade-results.json"


def error(message):
    """An infrastructure error: one line in the log (an Actions annotation) and exit status 1."""
    print(f"::error::autograder.py: {message}", file=sys.stderr)
    sys.exit(1)


def exercise_of(slug):
    """The exercise an assignment grades: its number when the slug starts with one, else None
    (all of them)."""
    match = re.match(r"(\d\d)(?:-|$)", slug)
    return match.group(1) if match else None


def to_result(report, env):
    """result.json from exercises/grade's --json report: a row per graded test, its points
    when it passed (partial credit per test), the sums at the top."""
    tests = [{"test-name": f"{exercise['name']}: {test['name']}",
              "passed": test["verdict"] == "pass",
              "score": test["points"] if test["verdict"] == "pass" else 0,
              "max-score": test["points"]}
             for exercise in report["exercises"] for test in exercise["tests"]]
    return {
        "schema": SCHEMA,
        "classroom": env["CLASSROOM"],
        "assignment": env["ASSIGNMENT"],
        "submission": env["SUBMISSION_TAG"],
        "commit": env["COMMIT_URL"],
        "release": env["RELEASE_URL"],
        "review": env.get("REVIEW_URL") or env["COMMIT_URL"],
        # The runner replaces it with the graded commit's date; this is when grading ran.
        "datetime": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "score": sum(t["score"] for t in tests),
        "max-score": sum(t["max-score"] for t in tests),
        "tests": tests,
    }


def main():
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    if missing:
        error(f"{', '.join(missing)} not set: run by Classroom 50's runner, which sets them")
    checkout = Path.cwd()
    bundle = Path(os.environ.get("CLASSROOM50_BUNDLE_DIR") or Path(__file__).resolve().parent)
    course = bundle / "course"
    grader = course / "exercises" / "grade"
    if not grader.is_file():
        error(f"no course/exercises/grade in the bundle {bundle}: copy the course there "
              f"(exercises/README.md, \"Classroom 50\"); the checkout's own grader is never run")
    if not (checkout / "exercises").is_dir():
        error(f"no exercises/ in {checkout}: is this a checkout of the exercises?")
    # The image may lack some of the Debian packages; the course's setup installs them (as
    # root) or does nothing.
    if subprocess.run([str(course / "lessons" / "tools" / "setup"), "--no-build"]).returncode:
        error("lessons/tools/setup could not install the Debian packages the exercises need")

    results = checkout / GRADE_RESULTS
    results.unlink(missing_ok=True)
    number = exercise_of(os.environ["ASSIGNMENT"])
    command = [str(grader), *([number] if number else []), "--root", str(checkout / "exercises"),
               "--json", str(results)]
    print("autograder.py: " + " ".join(command), flush=True)
    status = subprocess.run(command).returncode
    if status not in (0, 1) or not results.exists():
        error(f"exercises/grade could not grade (exit status {status}; its message is above)")
    result = to_result(json.loads(results.read_text()), os.environ)
    (checkout / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"autograder.py: result.json: {result['score']}/{result['max-score']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
