#include "turn_share.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <unistd.h>

namespace {

std::int64_t steady_ns() {
    return std::chrono::steady_clock::now().time_since_epoch().count();
}

// schedstat reads "<ns on a CPU> <ns waiting for one> <times put on one>\n".
bool read_schedstat(int fd, ThreadTimes& times) {
    if (fd < 0) return false;
    char text[128];
    const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
    if (n <= 0) return false;
    text[n] = '\0';
    unsigned long long ran = 0, waiting = 0, arrivals = 0;
    if (std::sscanf(text, "%llu %llu %llu", &ran, &waiting, &arrivals) != 3) return false;
    times.ran_ns = static_cast<std::int64_t>(ran);
    times.runqueue_ns = static_cast<std::int64_t>(waiting);
    times.arrivals = arrivals;
    // A running thread has been put on a CPU at least once: zero means the kernel keeps no such
    // count, and an arrival count that never moves would pass every turn for steal.
    return arrivals > 0;
}

} // namespace

// Steal over a stretch is (time passed) - (time run) from a watchdog reading to the carrier's
// own at the end, provided the arrival count did not move. The order of the reads keeps a
// delay between them (the reading thread preempted or stolen) from adding to it:
//  * the watchdog's: the clock (from_ns), schedstat, the clock again (at_ns). Steal counts from
//    at_ns: the time run is as of the schedstat read (or earlier: it lags), so the stretch
//    counts more time run than it should, never less; a switch after the read makes the counts
//    differ. The run queue counts from a reading only if from_ns is inside the turn: then no
//    wait it holds was booked before the turn began.
//  * the carrier's: schedstat for the run queue, the CPU clock, the clock (the turn's end),
//    schedstat again for arrivals. A wait that the first read books ended before the turn did;
//    CPU time between the CPU clock and the end counts as not run, but it is inside the turn;
//    and a switch before the second read makes the counts differ.
ThreadTimes read_thread_times(int schedstat_fd) noexcept {
    ThreadTimes times;
    times.from_ns = steady_ns();
    if (!read_schedstat(schedstat_fd, times)) return {};
    times.at_ns = steady_ns();
    times.valid = true;
    return times;
}

std::int64_t this_thread_cpu_ns() noexcept {
    timespec cpu{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu); // cannot fail for the calling thread
    return static_cast<std::int64_t>(cpu.tv_sec) * 1000000000 + cpu.tv_nsec;
}

ThreadTimes read_own_times(int schedstat_fd) noexcept {
    ThreadTimes times, later;
    times.from_ns = steady_ns();
    if (!read_schedstat(schedstat_fd, times)) return {}; // for the run queue
    times.ran_ns = this_thread_cpu_ns();
    times.at_ns = steady_ns();
    if (!read_schedstat(schedstat_fd, later)) return {}; // for the arrivals
    times.arrivals = later.arrivals;
    times.valid = true;
    return times;
}

TurnShare share_of_turn(std::int64_t start_ns, std::int64_t end_ns, const ThreadTimes& before,
                        const ThreadTimes& during, const ThreadTimes& at_end) {
    TurnShare share;
    const std::int64_t duration = std::max<std::int64_t>(end_ns - start_ns, 0);
    share.pinned_ns = duration;
    if (!at_end.valid || at_end.at_ns > end_ns) return share;
    std::int64_t runqueue = 0, stolen = 0;
    if (during.valid && during.from_ns >= start_ns && during.at_ns <= at_end.at_ns)
        runqueue = at_end.runqueue_ns - during.runqueue_ns;
    for (const ThreadTimes* from : {&before, &during}) {
        if (!from->valid || from->at_ns > at_end.at_ns) continue;
        // Steal only counts over a stretch in which the thread provably never left its CPU: up
        // to the carrier's own reading at the end (it was running then, so had it left its CPU
        // in between, it would have been put back on one, and the count would have moved).
        if (from->arrivals != at_end.arrivals) continue;
        const std::int64_t passed = at_end.at_ns - from->at_ns;
        const std::int64_t ran = at_end.ran_ns - from->ran_ns;
        // Less the part of the stretch before the turn began: the stall may all lie there.
        stolen = std::max(stolen, passed - ran - std::max<std::int64_t>(start_ns - from->at_ns, 0));
    }
    share.runqueue_ns = std::clamp<std::int64_t>(runqueue, 0, duration);
    share.stolen_ns = std::clamp<std::int64_t>(stolen, 0, duration - share.runqueue_ns);
    share.pinned_ns = duration - share.runqueue_ns - share.stolen_ns;
    return share;
}

ReadingsAround readings_around(std::int64_t start_ns, std::int64_t end_ns,
                               const ThreadTimes* readings, std::size_t count) {
    ReadingsAround around;
    for (std::size_t i = 0; i < count; ++i) {
        const ThreadTimes& times = readings[i];
        if (!times.valid || times.at_ns > end_ns) continue;
        if (times.at_ns < start_ns) {
            if (!around.before.valid || times.at_ns > around.before.at_ns) around.before = times;
        } else if (times.from_ns >= start_ns &&
                   (!around.during.valid || times.at_ns < around.during.at_ns)) {
            around.during = times;
        } // else under way as the turn began: neither
    }
    return around;
}

std::int64_t time_covered(std::int64_t start_ns, std::int64_t end_ns, const Stretch* stretches,
                          std::size_t count) {
    std::int64_t covered = 0;
    for (std::size_t i = 0; i < count; ++i)
        covered += std::max<std::int64_t>(
            std::min(end_ns, stretches[i].to_ns) - std::max(start_ns, stretches[i].from_ns), 0);
    return std::min(covered, std::max<std::int64_t>(end_ns - start_ns, 0));
}

std::int64_t fibers_part(const TurnShare& share, std::int64_t held_ns) {
    return share.pinned_ns -
           std::max<std::int64_t>(held_ns - share.runqueue_ns - share.stolen_ns, 0);
}
