"""How a graded test failed, told from Catch2's report of it (exercises/grade prints it).

Each failure gets a kind (part of the --json contract, exercises/README.md) and a story: a
headline that says how the test failed, then Catch2's account of the first failed check with
the test's STEP lines up to it. The exercise programs print lines up to 200 characters wide
(exercises/CMakeLists.txt), so each message of a report is one line.
"""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Failure stories longer than this are cut in the report; the transcript keeps all of it.
STORY_LINES = 30


def trimmed(line):
    """A line with the repository's own path left out: the paths it names read as relative."""
    return line.replace(str(REPO) + "/", "")


def failed_blocks(lines):
    """Catch2's reports of failed assertions: (first line, last line + 1) of each."""
    starts = [i for i, line in enumerate(lines) if line.endswith("FAILED:")]
    return [(start, next((i for i in range(start + 1, len(lines)) if not lines[i].strip()),
                         len(lines))) for start in starts]


def messages_in(block):
    """The messages of a failure report: (steps, other). The steps are the test's STEP lines;
    the others an unexpected exception's text or a fatal signal's name."""
    steps, other, inside = [], [], False
    for line in block[1:]:
        if not line.startswith("  "):
            # "because no exception was thrown ...": a CHECK_THROWS that did not throw.
            inside = line.startswith(("with message", "due to", "because no exception"))
            continue
        text = line.strip()
        if inside and text.startswith("step: "):
            steps.append(text[len("step: "):])
        elif inside:
            other.append(text)
    return steps, other


def headline(verdict, block):
    """(kind, one line) saying how the test failed: in a CHECK, in a REQUIRE (before any step
    or after some), by an exception, in a crash, in a hang. `block` is Catch2's report of the
    first failure. The kinds are part of the --json contract (exercises/README.md)."""
    steps, other = messages_in(block)
    assertion = block[1].strip() if len(block) > 1 else ""
    last = f"; its last step: {steps[-1]}" if steps else ", before its first step"
    said = " ".join(other)
    if verdict == "timeout":
        return "hang", f"HANG: the test never finished{last}"
    if verdict == "crash":
        return "crash", f"CRASH: the test died{last}"
    if not block:
        return "no-verdict", "FAIL: the test ended without a verdict (it printed no failed check)"
    if any(line.startswith("due to unexpected exception") for line in block):
        return "exception", f"FAIL: an exception escaped ('{said}'){last}"
    if any(line.startswith("due to a fatal error condition") for line in block):
        return "crash", f"CRASH: {said}{last}"
    # exercise_support's watchdog explains a wait that ended early: it comes before the rest.
    if said.startswith("watchdog: the carrier thread"):
        return ("blocked-carrier",
                f"FAIL: a carrier thread was blocked (the watchdog's words below){last}")
    if said.startswith("watchdog: a fiber"):
        return "stuck-fiber", f"FAIL: a fiber never finished (the watchdog's words below){last}"
    if assertion.startswith("REQUIRE") and not steps:
        return ("require-before-steps",
                "FAIL in a REQUIRE before any step: the test could not set up what it checks "
                "(the line below says which precondition failed)")
    if assertion.startswith("REQUIRE"):
        return "require", f"FAIL in a REQUIRE, which stops the test{last}"
    return "check", f"FAIL in a CHECK after {len(steps)} step{'s' if len(steps) != 1 else ''}"


def failure_story(output, verdict):
    """(kind, story): the kind of failure, and its story: the headline, then Catch2's account of
    the first failed check (the check, its values and the test's steps up to it). Later
    failures are counted, and left in the transcript."""
    lines = output.splitlines()
    blocks = failed_blocks(lines)
    if not blocks:
        # No check failed and Catch2 could not report: a crash it did not catch, or a hang
        # that ignored SIGTERM. Show the output's end.
        tail = [line for line in lines if line.strip()][-STORY_LINES // 3:]
        kind, head = headline(verdict, [])
        return kind, [head] + [trimmed(line) for line in tail]
    start, end = blocks[0]
    story = [trimmed(line) for line in lines[start:end]]
    if len(story) > STORY_LINES:
        story = story[:STORY_LINES] + ["..."]
    if len(blocks) > 1:
        story.append(f"(and {len(blocks) - 1} more failed check"
                     f"{'s' if len(blocks) > 2 else ''})")
    kind, head = headline(verdict, lines[start:end])
    return kind, [head] + story
