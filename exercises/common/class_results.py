"""One table across a class's results (exercises/grade --summary): no grading, only the
--json files of `exercises/grade`, one per student, named after the student.
"""
import csv
import json
from pathlib import Path


class NotResults(Exception):
    """A file that is not a result of exercises/grade --json, or two files for one student."""


def median(values):
    ordered = sorted(values)
    if not ordered:
        return None
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def load_results(paths):
    """{student: report} from --json files; a student is named by the file's name."""
    students = {}
    for path in paths:
        try:
            report = json.loads(Path(path).read_text())
            report["exercises"][0]["tests"]  # the shape --json writes
        except (OSError, ValueError, KeyError, IndexError, TypeError) as error:
            raise NotResults(f"{path} is not a result of exercises/grade --json ({error})")
        name = Path(path).stem
        if name in students:
            raise NotResults(f"two result files for '{name}': name them after the students")
        students[name] = report
    return students


def class_rows(students):
    """One row per exercise and per task: its points out of its total, for each student who
    handed it in, the median of them and who did not get all of them."""
    rows = {}
    for student, report in students.items():
        for exercise in report["exercises"]:
            tasks = {}
            for test in exercise["tests"]:
                task = tasks.setdefault(test["task"], [0, 0])
                task[1] += test["points"]
                task[0] += test["points"] if test["verdict"] == "pass" else 0
            keys = [(exercise["name"], None, exercise["points"], exercise["total"])]
            keys += [(exercise["name"], task, got, total)
                     for task, (got, total) in sorted(tasks.items(), key=lambda i: i[0] or 0)]
            for name, task, got, total in keys:
                row = rows.setdefault((name, task), {"total": total, "points": {}})
                row["points"][student] = got
    return rows


def summary(paths, csv_path, shown=str):
    students = load_results(paths)
    rows = class_rows(students)
    names = list(students)
    print(f"{len(names)} student{'s' if len(names) != 1 else ''}: {', '.join(names)}\n")
    width = max(len("exercise / task"), *(len(e) + 2 for e, _ in rows))
    print(f"{'exercise / task':<{width}}  {'median':>6}  {'total':>5}  {'full marks':>10}  "
          f"{'failed by':>9}")
    failing = []
    for (exercise, task), row in rows.items():
        points = row["points"]
        short = [s for s, got in points.items() if got < row["total"]]
        label = exercise if task is None else f"  task {task}"
        print(f"{label:<{width}}  {median(points.values()):>6g}  {row['total']:>5}  "
              f"{len(points) - len(short):>6}/{len(points):<3}  "
              f"{len(short):>5}/{len(points)}")
        if task is not None and short:
            failing.append((len(short) / len(points), f"{exercise[:2]} task {task}", short,
                            len(points)))
    scores = [sum(e["points"] for e in r["exercises"]) for r in students.values()]
    totals = {sum(e["total"] for e in r["exercises"]) for r in students.values()}
    print(f"\nMedian score: {median(scores):g}/{'/'.join(str(t) for t in sorted(totals))}")
    failing.sort(key=lambda f: (-f[0], f[1]))
    if failing:
        print("Tasks most students fail:")
        for _, task, short, handed_in in failing[:5]:
            print(f"  {task}: {len(short)} of {handed_in} ({', '.join(short)})")
    if csv_path:
        write_csv(csv_path, names, rows, students)
        print(f"table: {shown(csv_path)}")
    return 0


def write_csv(path, names, rows, students):
    """A gradebook: a row per student, a column per exercise and per task, then the medians."""
    columns = [f"{e}" if t is None else f"{e} task {t}" for e, t in rows]
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["student", "score", "total", *columns])
        writer.writerow(["(out of)", "", "", *(row["total"] for row in rows.values())])
        for student in names:
            report = students[student]
            writer.writerow([student, sum(e["points"] for e in report["exercises"]),
                             sum(e["total"] for e in report["exercises"]),
                             *(row["points"].get(student, "") for row in rows.values())])
        writer.writerow(["(median)", "", "",
                         *(f"{median(row['points'].values()):g}" for row in rows.values())])
