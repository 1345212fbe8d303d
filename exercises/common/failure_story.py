"""How a graded test failed, told from Catch2's XML report of it (exercises/grade prints it).

Each failure gets a kind (part of the --json contract, exercises/README.md) and a story: a
headline that says how the test failed, then Catch2's account of the first failed check with
the test's STEP lines up to it. Text the student's code controls (an exception's message, a
value) is cut to one line of QUOTED characters.
"""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

QUOTED = 600
# Lines of the program's own output shown when Catch2 reported no failure (a crash it could not
# catch, a hang that ignored SIGTERM); the transcript keeps all of it.
TAIL_LINES = 10


def trimmed(line):
    """A line with the repository's own path, or the grading tree's copy of it, left out: the
    paths it names read as relative."""
    return re.sub(r"(?<![^\s(])\S*/grading/src/", "", line.replace(str(REPO) + "/", ""))


def one_line(text):
    text = " ".join((text or "").split())
    return text if len(text) <= QUOTED else text[:QUOTED] + " [cut]"


def failures(case):
    """The failures in a <TestCase>, in order: (element, the messages reported with it)."""
    found, messages, told_already = [], [], set()
    for element in case.iter() if case is not None else []:
        if element.tag == "Info":
            messages.append(one_line(element.text))
        elif element.tag == "Expression" and element.get("success") == "false":
            # An exception or a signal during a check is reported inside the check's element.
            inner = next((e for e in element if e.tag in ("Exception", "FatalErrorCondition")),
                         None)
            told_already.add(id(inner))
            found.append((element if inner is None else inner, messages))
            messages = []
        elif element.tag in ("Exception", "FatalErrorCondition") and id(element) not in told_already:
            found.append((element, messages))
            messages = []
    return found


def told(element, messages):
    """One failure as Catch2's console reporter tells it."""
    lines = [f"{element.get('filename')}:{element.get('line')}: FAILED:"]
    if element.tag == "Expression":
        lines += [f"  {element.get('type')}( {one_line(element.findtext('Original'))} )",
                  "with expansion:", "  " + one_line(element.findtext("Expanded"))]
    lines += ["with messages:"] + [f"  {m}" for m in messages] if messages else []
    if element.tag == "Exception":
        lines += ["due to unexpected exception with message:", "  " + one_line(element.text)]
    if element.tag == "FatalErrorCondition":
        lines += ["due to a fatal error condition:", "  " + one_line(element.text)]
    return [trimmed(line) for line in lines]


def headline(verdict, element, messages):
    """(kind, one line) saying how the test failed: in a CHECK, in a REQUIRE (before any step
    or after some), by an exception, in a crash, in a hang. The kinds are part of the --json
    contract (exercises/README.md)."""
    steps = [m[len("step: "):] for m in messages if m.startswith("step: ")]
    said = " ".join([m for m in messages if not m.startswith("step: ")] +
                    ([one_line(element.text)] if element is not None and element.tag != "Expression"
                     else []))
    last = f"; its last step: {steps[-1]}" if steps else ", before its first step"
    if verdict == "timeout":
        return "hang", f"HANG: the test never finished{last}"
    if element is None:
        if verdict == "crash":
            return "crash", f"CRASH: the test died{last}"
        return "no-verdict", "FAIL: the test ended without a verdict (it printed no failed check)"
    if element.tag == "Exception":
        return "exception", f"FAIL: an exception escaped ('{said}'){last}"
    if element.tag == "FatalErrorCondition" or verdict == "crash":
        return "crash", f"CRASH: {said}{last}"
    # exercise_support's watchdog explains a wait that ended early: it comes before the rest.
    if said.startswith("watchdog: the carrier thread"):
        return ("blocked-carrier",
                f"FAIL: a carrier thread was blocked (the watchdog's words below){last}")
    if said.startswith("watchdog: a fiber"):
        return "stuck-fiber", f"FAIL: a fiber never finished (the watchdog's words below){last}"
    if element.get("type", "").startswith("REQUIRE") and not steps:
        return ("require-before-steps",
                "FAIL in a REQUIRE before any step: the test could not set up what it checks "
                "(the line below says which precondition failed)")
    if element.get("type", "").startswith("REQUIRE"):
        return "require", f"FAIL in a REQUIRE, which stops the test{last}"
    return "check", f"FAIL in a CHECK after {len(steps)} step{'s' if len(steps) != 1 else ''}"


def failure_story(case, verdict, output):
    """(kind, story) of a test that did not pass: the headline, then Catch2's account of the
    first failure (the check, its values and the test's steps up to it); later failures are
    counted. `case` is the test's <TestCase> element (None when Catch2 reported none); `output`
    what the program printed, whose end is shown when Catch2 reported no failure."""
    found = failures(case)
    if not found:
        tail = [trimmed(one_line(line)) for line in output.splitlines() if line.strip()]
        return headline(verdict, None, [])[0], [headline(verdict, None, [])[1]] + tail[-TAIL_LINES:]
    element, messages = found[0]
    story = told(element, messages)
    if len(found) > 1:
        story.append(f"(and {len(found) - 1} more failed check{'s' if len(found) > 2 else ''})")
    kind, head = headline(verdict, element, messages)
    return kind, [head] + story
