// Which part of a long turn was the fiber's doing.
//
// A turn is the span from the switch to a fiber to the switch away from it. Its length on the
// clock is not all the fiber's: the carrier thread may not have had a CPU for part of it.
//  * The OS may have kept it waiting in the run queue while another thread had the CPU. The
//    kernel counts that time per thread (/proc/self/task/TID/schedstat, second field).
//  * On a virtual machine the hypervisor may take the CPU itself away (steal time). The thread
//    then neither runs nor waits as far as its kernel knows: it still sits on its CPU and no
//    per-thread wait counter grows. But a KVM guest's kernel (with steal accounting, its
//    default) leaves steal out of the thread's CPU clock. So the pair gives it away: between
//    two readings the thread was never put on a CPU afresh (schedstat's third field did not
//    move), so it never left its CPU, yet its CPU clock advanced less than the wall clock. A
//    fiber that blocks in a call leaves its CPU (and is put back on one later); one that
//    computes keeps its CPU clock running: neither passes for steal. Where the kernel keeps
//    interrupt time apart (CONFIG_IRQ_TIME_ACCOUNTING), time spent in interrupts counts as
//    stolen too; and a fiber spinning on a lock may have its spin cut short by the hypervisor
//    (pause-loop exiting), which then counts as stolen as well.
//  * The whole machine may stall: a virtual machine paused by its host, a process stopped and
//    continued. Then the watchdog thread stalls too, and no reading is taken during the stall;
//    but the watchdog knows it woke up late. A turn's stretch that the watchdog slept through,
//    late by more than it ever is when it can run, is unwatched: the detector has no evidence
//    that a fiber held the carrier then rather than the machine being still.
// The detector reports a turn only when what is left, the pinned part, reaches the threshold.
#pragma once

#include <cstdint>
#include <ctime>

// A carrier thread's times at one moment, as its kernel counts them.
struct ThreadTimes {
    bool valid = false;
    std::int64_t at_ns = 0;       // steady clock
    std::int64_t cpu_ns = 0;      // its CPU clock: time it ran (steal left out)
    std::int64_t runqueue_ns = 0; // time it was ready to run but waited for a CPU
    std::uint64_t arrivals = 0;   // times it was put on a CPU: unchanged while it never left one
};

// The watchdog's reading of a carrier thread while a turn goes on. `schedstat_fd` is the
// thread's /proc/self/task/TID/schedstat, `cpu_clock` its CPU clock (pthread_getcpuclockid).
// Invalid when a read fails (the thread has ended, /proc is missing) or the kernel does not
// count arrivals (it prints "0 0 0" without its scheduler statistics).
ThreadTimes read_thread_times(int schedstat_fd, clockid_t cpu_clock) noexcept;

// The carrier thread's reading of itself as a turn ends at `now_ns` (steady clock, just read):
// `schedstat_fd` is its /proc/thread-self/schedstat.
ThreadTimes read_own_times(int schedstat_fd, std::int64_t now_ns) noexcept;

// Both readings take their parts in the order that makes any delay between the reads (the
// reading thread itself preempted or stolen) look like less steal, never more: see the .cpp.

struct TurnShare {
    std::int64_t pinned_ns = 0;    // what the fiber held: the rest
    std::int64_t runqueue_ns = 0;  // the OS kept the thread waiting for a CPU
    std::int64_t stolen_ns = 0;    // the thread sat on a CPU that did not run it (steal)
    std::int64_t unwatched_ns = 0; // the watchdog could not run either (the machine stalled)
};

// Splits the turn [start_ns, end_ns]. `runqueue_ns` is the thread's run-queue wait from a reading
// taken before the turn began to one taken when it ended: at least the turn's own, perhaps a
// little more (errs towards not reporting). `during` is the watchdog's reading while the turn
// went on (or invalid), `at_end` the carrier's own as it ended. Steal is counted only between
// those two, and only if the thread never left its CPU there (errs towards reporting).
// `unwatched_ns` is how much of the turn the watchdog slept through late. It may overlap the
// run queue's and the steal's shares (a stalled machine shows in all three), so the larger of
// it and their sum is left out, never both: pinned = duration - max(run queue + steal,
// unwatched).
TurnShare share_of_turn(std::int64_t start_ns, std::int64_t end_ns, std::int64_t runqueue_ns,
                        std::int64_t unwatched_ns, const ThreadTimes& during,
                        const ThreadTimes& at_end);

// A stretch of steady-clock time, and how much of [from, to] lies within `stretches` (which do
// not overlap each other).
struct Stretch {
    std::int64_t from_ns = 0, to_ns = 0;
};
template <typename Stretches>
std::int64_t overlap_ns(std::int64_t from, std::int64_t to, const Stretches& stretches) {
    std::int64_t total = 0;
    for (const Stretch& s : stretches) {
        const std::int64_t lo = s.from_ns > from ? s.from_ns : from;
        const std::int64_t hi = s.to_ns < to ? s.to_ns : to;
        if (hi > lo) total += hi - lo;
    }
    return total;
}
