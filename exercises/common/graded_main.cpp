// main() for the graded test programs: Catch2's, strict about tests that check nothing, plus a
// time limit per test case.
//
// A stub can hang: a wait without a deadline, a carrier that never gets its thread back. CTest
// stops a test at its TIMEOUT with SIGKILL, which would lose Catch2's account of the steps the
// test had reached. So the program stops itself first: GRADED_TEST_SECONDS after it started
// (CTest sets the variable, a grace period under TIMEOUT; exercises/CMakeLists.txt), it writes
// the line below and raises SIGTERM, which Catch2 reports as a failure, with the test's steps,
// before the program dies. Run by hand, without the variable, a test has no limit.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace {

// exercises/grade looks for this line to tell a hang from a crash.
constexpr char time_limit_line[] =
    "\n[graded test] no verdict within GRADED_TEST_SECONDS: stopped\n";

extern "C" void on_time_limit(int) {
    // Only async-signal-safe calls in a signal handler: write(2) and raise(3).
    (void)!write(STDOUT_FILENO, time_limit_line, sizeof time_limit_line - 1);
    std::raise(SIGTERM);
}

} // namespace

int main(int argc, char* argv[]) {
    if (const char* text = std::getenv("GRADED_TEST_SECONDS")) {
        char* end = nullptr;
        const long seconds = std::strtol(text, &end, 10);
        // alarm() takes an unsigned int; a day is far beyond any test and far below its range.
        constexpr long most_seconds = 24 * 60 * 60;
        if (end == text || *end != '\0' || seconds < 1 || seconds > most_seconds) {
            std::fprintf(stderr, "GRADED_TEST_SECONDS must be 1 to %ld seconds, not '%s'\n",
                         most_seconds, text);
            return 2;
        }
        std::signal(SIGALRM, on_time_limit);
        alarm(static_cast<unsigned>(seconds));
    }
    Catch::Session session;
    if (const int error = session.applyCommandLine(argc, argv)) {
        return error;
    }
    // A test that checks nothing fails instead of passing vacuously, and so does a test name
    // that matches no test (a name mangled on its way through CTest). Both are Catch2 warnings,
    // set here because its --warn option takes only one of them on a command line.
    auto& config = session.configData();
    config.warnings = static_cast<Catch::WarnAbout::What>(
        config.warnings | Catch::WarnAbout::NoAssertions | Catch::WarnAbout::NoTests);
    return session.run();
}
