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

namespace {

// What grew between reading `from` and the end, less the part of that stretch before the turn
// began (the growth may all have happened there): a lower bound of the growth within the turn.
std::int64_t within_turn(std::int64_t growth, const ThreadTimes& from, std::int64_t start_ns) {
    return growth - std::max<std::int64_t>(start_ns - from.at_ns, 0);
}

} // namespace

TurnShare share_of_turn(std::int64_t start_ns, std::int64_t end_ns, const ThreadTimes& before,
                        const ThreadTimes& during, const ThreadTimes& at_end) {
    TurnShare share;
    const std::int64_t duration = std::max<std::int64_t>(end_ns - start_ns, 0);
    share.pinned_ns = duration;
    if (!at_end.valid || at_end.at_ns > end_ns) return share;
    std::int64_t runqueue = 0, stolen = 0;
    for (const ThreadTimes* from : {&before, &during}) {
        if (!from->valid || from->at_ns > at_end.at_ns) continue;
        runqueue = std::max(runqueue,
                            within_turn(at_end.runqueue_ns - from->runqueue_ns, *from, start_ns));
        // Steal only counts over a stretch in which the thread provably never left its CPU: up
        // to the carrier's own reading at the end (it was running then, so had it left its CPU
        // in between, it would have been put back on one, and the count would have moved).
        if (from->arrivals != at_end.arrivals) continue;
        const std::int64_t wall = at_end.at_ns - from->at_ns;
        const std::int64_t ran = at_end.cpu_ns - from->cpu_ns;
        stolen = std::max(stolen, within_turn(wall - ran, *from, start_ns));
    }
    share.runqueue_ns = std::clamp<std::int64_t>(runqueue, 0, duration);
    share.stolen_ns = std::clamp<std::int64_t>(stolen, 0, duration - share.runqueue_ns);
    share.pinned_ns = duration - share.runqueue_ns - share.stolen_ns;
    return share;
}
