#include "turn_share.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unistd.h>

namespace {

std::int64_t steady_ns() {
    return std::chrono::steady_clock::now().time_since_epoch().count();
}

// schedstat reads "<ns on a CPU> <ns waiting for one> <times put on one>\n". Its on-CPU figure
// is brought up to date only at scheduler ticks and switches, so it is stale for a thread that
// is running: the CPU clock is read instead.
bool read_schedstat(int fd, ThreadTimes& times) {
    if (fd < 0) return false;
    char text[128];
    const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
    if (n <= 0) return false;
    text[n] = '\0';
    unsigned long long on_cpu = 0, waiting = 0, arrivals = 0;
    if (std::sscanf(text, "%llu %llu %llu", &on_cpu, &waiting, &arrivals) != 3) return false;
    times.runqueue_ns = static_cast<std::int64_t>(waiting);
    times.arrivals = arrivals;
    // A running thread has been put on a CPU at least once: zero means the kernel keeps no such
    // count, and an arrival count that never moves would pass every turn for steal.
    return arrivals > 0;
}

bool read_cpu_clock(clockid_t clock, ThreadTimes& times) {
    timespec cpu{};
    if (::clock_gettime(clock, &cpu) != 0) return false;
    times.cpu_ns = static_cast<std::int64_t>(cpu.tv_sec) * 1000000000 + cpu.tv_nsec;
    return true;
}

} // namespace

// Steal over a stretch is (wall time) - (CPU time) between a reading `during` and one `at_end`,
// provided the arrival count did not move. The order of the reads keeps any delay between them
// from adding to it:
//  * during: arrivals, CPU clock, wall clock. A switch after the arrivals were read makes the
//    counts differ (no steal at all); CPU time the carrier runs after its clock was read adds
//    to the CPU time of the stretch but not to its wall time.
//  * at_end: wall clock, CPU clock, arrivals. The mirror image: CPU time run after the wall
//    clock was read adds to the stretch's CPU time only; a switch before the arrivals are read
//    makes the counts differ.
ThreadTimes read_thread_times(int schedstat_fd, clockid_t cpu_clock) noexcept {
    ThreadTimes times;
    if (!read_schedstat(schedstat_fd, times) || !read_cpu_clock(cpu_clock, times)) return {};
    times.at_ns = steady_ns();
    times.valid = true;
    return times;
}

ThreadTimes read_own_times(int schedstat_fd, std::int64_t now_ns) noexcept {
    ThreadTimes times;
    times.at_ns = now_ns;
    if (!read_cpu_clock(CLOCK_THREAD_CPUTIME_ID, times) || !read_schedstat(schedstat_fd, times))
        return {};
    times.valid = true;
    return times;
}

TurnShare share_of_turn(std::int64_t start_ns, std::int64_t end_ns, std::int64_t runqueue_ns,
                        std::int64_t unwatched_ns, const ThreadTimes& during,
                        const ThreadTimes& at_end) {
    TurnShare share;
    const std::int64_t duration = std::max<std::int64_t>(end_ns - start_ns, 0);
    share.runqueue_ns = std::clamp<std::int64_t>(runqueue_ns, 0, duration);
    // Steal only counts over a stretch in which the thread provably never left its CPU: from a
    // reading inside the turn to the carrier's own at its end (the carrier was running then, so
    // had it left its CPU in between, it would have been put back on one).
    if (during.valid && at_end.valid && during.at_ns >= start_ns && at_end.at_ns <= end_ns &&
        at_end.at_ns >= during.at_ns && at_end.arrivals == during.arrivals) {
        const std::int64_t span = at_end.at_ns - during.at_ns;
        const std::int64_t ran = at_end.cpu_ns - during.cpu_ns;
        share.stolen_ns = std::clamp<std::int64_t>(span - ran, 0, duration - share.runqueue_ns);
    }
    share.unwatched_ns = std::clamp<std::int64_t>(unwatched_ns, 0, duration);
    share.pinned_ns = duration - std::max(share.runqueue_ns + share.stolen_ns, share.unwatched_ns);
    return share;
}
