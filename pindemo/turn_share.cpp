#include "turn_share.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unistd.h>

ThreadTimes read_thread_times(int schedstat_fd, clockid_t cpu_clock) noexcept {
    ThreadTimes times;
    if (schedstat_fd < 0) return times;
    // "<ns on a CPU> <ns waiting for one> <times put on one>\n"
    char text[128];
    const ssize_t n = ::pread(schedstat_fd, text, sizeof text - 1, 0);
    if (n <= 0) return times;
    text[n] = '\0';
    unsigned long long on_cpu = 0, waiting = 0, arrivals = 0;
    if (std::sscanf(text, "%llu %llu %llu", &on_cpu, &waiting, &arrivals) != 3) return times;
    // schedstat's own on-CPU figure only moves at scheduler ticks (every 4 ms here); the CPU
    // clock is exact to the nanosecond.
    timespec cpu{};
    if (::clock_gettime(cpu_clock, &cpu) != 0) return times;
    times.valid = true;
    times.at_ns = std::chrono::steady_clock::now().time_since_epoch().count();
    times.cpu_ns = static_cast<std::int64_t>(cpu.tv_sec) * 1000000000 + cpu.tv_nsec;
    times.runqueue_ns = static_cast<std::int64_t>(waiting);
    times.arrivals = arrivals;
    return times;
}

TurnShare share_of_turn(std::int64_t start_ns, std::int64_t end_ns, std::int64_t runqueue_ns,
                        const ThreadTimes& during, const ThreadTimes& at_end) {
    TurnShare share;
    const std::int64_t duration = std::max<std::int64_t>(end_ns - start_ns, 0);
    share.runqueue_ns = std::clamp<std::int64_t>(runqueue_ns, 0, duration);
    // Steal only counts over a stretch in which the thread provably never left its CPU: from a
    // reading inside the turn to the carrier's own at its end (the carrier was running then, so
    // had it left its CPU in between, it would have been put back on one).
    if (during.valid && at_end.valid && during.at_ns >= start_ns && at_end.at_ns >= during.at_ns &&
        at_end.arrivals == during.arrivals) {
        const std::int64_t span = at_end.at_ns - during.at_ns;
        const std::int64_t ran = at_end.cpu_ns - during.cpu_ns;
        share.stolen_ns = std::clamp<std::int64_t>(span - ran, 0, duration - share.runqueue_ns);
    }
    share.pinned_ns = duration - share.runqueue_ns - share.stolen_ns;
    return share;
}
