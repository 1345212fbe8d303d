#!/usr/bin/python3
"""Tests of lessons/tools/check-commands: a text with one snag per rule must get exactly those
snags reported, and the same commands written correctly must pass. And of the command line of its
sibling lessons/tools/check-snippets: help, and a one-line error for a text that is not there.

    lessons/tools/check_commands_test.py BUILD_DIR
"""
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

TOOL = Path(__file__).resolve().parent / "check-commands"
SNIPPETS = TOOL.parent / "check-snippets"
BUILD = sys.argv.pop(1) if len(sys.argv) > 1 else str(TOOL.parent.parent.parent / "build")


def check(markdown):
    """check-commands on `markdown` (in a temporary file): exit status and output."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "README.md"
        path.write_text(textwrap.dedent(markdown))
        (Path(folder) / "present.md").write_text("")
        run = subprocess.run([str(TOOL), "--build", BUILD, str(path)], capture_output=True,
                             text=True, timeout=300)
        return run.returncode, run.stdout + run.stderr


class Snags(unittest.TestCase):
    def assert_snag(self, markdown, message):
        status, output = check(markdown)
        self.assertEqual(status, 1, f"expected a snag ({message}); got:\n{output}")
        self.assertIn(message, output)

    def assert_clean(self, markdown):
        status, output = check(markdown)
        self.assertEqual(status, 0, output)

    def test_a_variable_set_nowhere_before(self):
        self.assert_snag("""
            ```console
            $ pgbench -n -T 1 "$PG_CONNINFO"
            ```
            """, "$PG_CONNINFO is not set by an earlier command in this text")

    def test_a_variable_set_by_an_earlier_command(self):
        self.assert_clean("""
            ```console
            $ pid=$(pgrep -o init)
            $ kill -0 "$pid"
            ```
            """)

    def test_a_program_that_moved(self):
        self.assert_snag("Run `lessons/05-wirings/no-such-tool --x 1` to see.\n",
                         "lessons/05-wirings/no-such-tool: no such program")

    def test_a_file_argument_that_moved(self):
        self.assert_snag("```sh\npgbench -f lessons/04-pool/no-such.sql\n```\n",
                         "lessons/04-pool/no-such.sql does not exist")

    def test_one_of_ours_without_its_path(self):
        self.assert_snag("Start `lesson01 --port 8080` first.\n",
                         "lesson01 is not on PATH")

    def test_a_flag_the_program_does_not_have(self):
        self.assert_snag("```sh\nbuild/bin/lesson01 --no-such-flag\n```\n",
                         "build/bin/lesson01 --help does not list --no-such-flag")

    def test_a_value_the_program_does_not_parse(self):
        self.assert_snag("```sh\nbuild/bin/lesson01 --port eighty\n```\n",
                         "build/bin/lesson01 --port eighty --help exited 2")

    def test_a_flag_a_script_passes_on_to_its_program(self):
        self.assert_clean("```sh\nlessons/01-one-thread/checkpoint --keep-alive\n```\n")
        self.assert_snag("```sh\nlessons/01-one-thread/checkpoint --keep-alive-please\n```\n",
                         "build/bin/lesson01 (via lessons/01-one-thread/checkpoint) --help does "
                         "not list --keep-alive-please")
        self.assert_snag("```sh\nlessons/04-pool/checkpoint --pool-timeout soon\n```\n",
                         "exited 2: lesson04: --pool-timeout: 'soon' is not a duration")

    def test_a_checkpoint_takes_predict_first_itself(self):
        self.assert_clean("```sh\nlessons/01-one-thread/checkpoint --predict --keep-alive\n```\n")
        self.assert_snag("```sh\nlessons/01-one-thread/checkpoint --keep-alive --predict\n```\n",
                         "--help does not list --predict")

    def test_a_script_flag_its_help_does_not_list(self):
        self.assert_snag("```sh\nlessons/tools/pg-cluster start /tmp/x --portt 1\n```\n",
                         "lessons/tools/pg-cluster --help does not list --portt")

    def test_an_environment_variable_the_script_does_not_know(self):
        self.assert_snag("```sh\nPORTT=9090 lessons/01-one-thread/checkpoint\n```\n",
                         "does not name the variable PORTT")

    def test_an_abbreviated_command(self):
        self.assert_snag("Then `hey -n 100 …/benchmark`.\n", "not written in full")

    def test_a_command_bash_cannot_parse(self):
        self.assert_snag("```sh\ncurl -s 'localhost:8080\n```\n", "bash cannot parse it")

    def test_a_link_to_nothing(self):
        self.assert_snag("See [the notes](absent.md).\n", "absent.md does not exist")
        self.assert_clean("See [the notes](present.md) and [a site](https://example.org).\n")

    def test_a_target_or_label_the_build_does_not_have(self):
        self.assert_snag("```sh\ncmake --build build --target check99\n```\n",
                         "the build has no target check99")
        self.assert_snag("```sh\nctest --test-dir build -L lesson99\n```\n",
                         "no test is labelled lesson99")

    def test_a_command_that_writes_a_tracked_file(self):
        # Lesson 02's figure commands once overwrote the committed figures when pasted.
        self.assert_snag("```sh\nlessons/instruments/trace/timeline build/logs/t.json --out "
                         "lessons/02-fibers/timeline-pinned.png\n```\n",
                         "it writes lessons/02-fibers/timeline-pinned.png, which the repository "
                         "tracks")
        self.assert_snag("```sh\necho hi > lessons/GLOSSARY.md\n```\n", "which the repository tracks")
        self.assert_snag("Run `demo/run --out demo/reference` to see.\n",
                         "it writes demo/reference, which the repository tracks")
        self.assert_clean("```sh\nlessons/instruments/trace/timeline build/logs/t.json --out "
                          "build/logs/t.png\necho hi > /tmp/x.txt\n```\n")

    def test_a_command_that_says_it_remakes_committed_files(self):
        self.assert_clean("```sh\n# Redraws the committed figure: overwrites it on purpose.\n"
                          "lessons/instruments/trace/timeline build/logs/t.json --out "
                          "lessons/02-fibers/timeline-pinned.png\n```\n")

    def test_a_block_that_uses_a_server_before_it_listens(self):
        # Exercise 12's block once started hey before lesson05 listened: 4,507 refused.
        started = "```sh\nbuild/bin/lesson01 --port 8080 &\n"
        self.assert_snag(started + "hey -n 1 http://127.0.0.1:8080/hello\nkill %1\n```\n",
                         "build/bin/lesson01 was started in the background above and nothing "
                         "waits for it to listen")
        self.assert_clean(started + "curl -s --retry 50 --retry-delay 0 --retry-connrefused "
                          "http://127.0.0.1:8080/hello\nhey -n 1 http://127.0.0.1:8080/hello\n"
                          "kill %1\n```\n")

    def test_a_missing_text_is_one_line_not_a_traceback(self):
        run = subprocess.run([str(TOOL), "no-such-README.md"], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual((run.returncode, run.stderr),
                         (2, "check-commands: no-such-README.md: no such file\n"))

    def test_commands_that_only_print_are_run(self):
        self.assert_clean("```console\n$ build/bin/lesson01 --help\nusage: ...\n```\n")

    def test_output_lines_and_synopses_are_not_commands(self):
        self.assert_clean("""
            ```console
            $ echo hi
            lesson01 --no-such-flag
            ```
            Usage: `demo/run [--quick|--full]`, `build/bin/lesson01 ["test name"]`; the word
            `spike` alone; `// ---- do not change ...`; `... request timed out after 30000ms`.
            """)


class SnippetsCommandLine(unittest.TestCase):
    def run_snippets(self, *args):
        return subprocess.run([str(SNIPPETS), *args], capture_output=True, text=True, timeout=60)

    def test_help_explains_and_exits_0(self):
        run = self.run_snippets("--help")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("usage: check-snippets", run.stdout)

    def test_a_missing_text_is_one_line_not_a_traceback(self):
        run = self.run_snippets("no-such-README.md")
        self.assertEqual(run.returncode, 2)
        self.assertEqual(run.stderr, "check-snippets: no-such-README.md: no such file\n")


if __name__ == "__main__":
    unittest.main(verbosity=2)
