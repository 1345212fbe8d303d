// Which part of a long turn was the fiber's doing.
//
// A turn is the span from the switch to a fiber to the switch away from it. Its length on the
// clock is not all the fiber's: the carrier thread may not have had a CPU for part of it.
//  * The OS may have kept it waiting in the run queue while another thread had the CPU. The
//    kernel counts that time per thread (/proc/self/task/TID/schedstat, second field).
//  * On a virtual machine the hypervisor may take the CPU itself away (steal time). The thread
//    then neither runs nor waits as far as its kernel knows: it still sits on its CPU and no
//    per-thread wait counter grows. But a KVM guest's kernel (with steal accounting, its
//    default) leaves steal out of the time the thread ran. So the pair gives it away: between
//    two readings the thread was never put on a CPU afresh (schedstat's third field did not
//    move), so it never left its CPU, yet it ran for less time than passed. A fiber that blocks
//    in a call leaves its CPU (and is put back on one later); one that computes runs all along:
//    neither passes for steal. Where the kernel keeps interrupt time apart
//    (CONFIG_IRQ_TIME_ACCOUNTING), time spent in interrupts counts as stolen too; and a fiber
//    spinning on a lock may have its spin cut short by the hypervisor (pause-loop exiting),
//    which then counts as stolen as well.
// The detector reports a turn only when what is left, the pinned part, reaches the threshold.
#pragma once

#include <cstddef>
#include <cstdint>

// A carrier thread's times at one moment, as its kernel counts them. The counters were read
// between from_ns and at_ns (steady clock): not before the one, not after the other.
struct ThreadTimes {
    bool valid = false;
    std::int64_t from_ns = 0;
    std::int64_t at_ns = 0;
    std::int64_t ran_ns = 0;      // time it ran on a CPU (steal left out)
    std::int64_t runqueue_ns = 0; // time it was ready to run but waited for a CPU
    std::uint64_t arrivals = 0;   // times it was put on a CPU: unchanged while it never left one
};

// The watchdog's reading of a carrier thread. `schedstat_fd` is the thread's open
// /proc/self/task/TID/schedstat. The time it ran is schedstat's own figure, which the kernel
// brings up to date only at its ticks and switches: it may lag by a tick. (Asking for the
// thread's CPU clock instead would be exact, but on a virtual machine it is worse: read from
// another CPU while the carrier's virtual CPU is descheduled, it counts the steal so far as
// time run, and the kernel makes up for it later by leaving out time the carrier did run.)
// Invalid when the read fails (the thread has ended, /proc is missing) or the kernel does not
// count arrivals (it prints "0 0 0" without its scheduler statistics).
ThreadTimes read_thread_times(int schedstat_fd) noexcept;

// The calling thread's CPU clock: how long it has run, exact to the nanosecond.
std::int64_t this_thread_cpu_ns() noexcept;

// The carrier thread's reading of itself as a turn ends; `schedstat_fd` is its
// /proc/thread-self/schedstat. The time it ran is its CPU clock, exact. The turn ends at the
// returned at_ns.
ThreadTimes read_own_times(int schedstat_fd) noexcept;

struct TurnShare {
    std::int64_t pinned_ns = 0;   // what the fiber held: the rest
    std::int64_t runqueue_ns = 0; // the OS kept the thread waiting for a CPU
    std::int64_t stolen_ns = 0;   // the thread sat on a CPU that did not run it (steal)
};

// Splits the turn [start_ns, end_ns] with the watchdog's readings of the carrier: `before`, its
// last one before the turn began, and `during`, its first one wholly inside the turn (either
// may be invalid: a short turn is never seen under way), and `at_end`, the carrier's own as the
// turn ended (invalid: nothing is left out). Each share is a lower bound of the time it names,
// so errors lean towards reporting:
//  * Run queue: the wait since `during`. (Not since `before`: the kernel books a wait when it
//    ends, whole, so one under way at `before` would be counted from before `before`.)
//  * Steal, from `before` or `during`, whichever gives more, but only where the thread never
//    left its CPU from that reading to the end, and less the time between that reading and the
//    turn's start (which the stall may have fallen in). From `before` it is found even when the
//    stall froze the watchdog too, so that no reading could be taken during the turn: a host
//    that deschedules both of the VM's CPUs while a busy carrier runs a short turn.
TurnShare share_of_turn(std::int64_t start_ns, std::int64_t end_ns, const ThreadTimes& before,
                        const ThreadTimes& during, const ThreadTimes& at_end);

// Of the watchdog's readings (any order; invalid ones are skipped), the two that share_of_turn
// takes for the turn [start_ns, end_ns]: the last taken before the turn began, and the first
// taken wholly inside it (from_ns at or after the start: one under way as the turn began may
// hold a wait booked before it). Chosen by the time each was taken, whichever turn the
// watchdog thought was under way then: the carrier reads the clock for a turn's start a moment
// before it publishes the turn, so a carrier preempted in between is read during the new turn
// "for" the old one.
struct ReadingsAround {
    ThreadTimes before;
    ThreadTimes during;
};
ReadingsAround readings_around(std::int64_t start_ns, std::int64_t end_ns,
                               const ThreadTimes* readings, std::size_t count);

// A stretch of the steady clock during which the watchdog was held up: between two of its
// checkpoints more than a tick passed beyond what it meant to sleep (its tick, a wait for a
// sample) and beyond its own waits for a CPU (the run queue's, which the carriers' statistics
// show anyway). What holds up a watchdog that is neither asleep nor waiting for a CPU almost
// always holds the whole process or the whole machine: the process stopped (SIGSTOP, a
// debugger), the virtual machine frozen by its host. (Rarely, a lock it shares with a preempted
// thread: the memory map's in a page fault, or its queue to the reporting thread.) A carrier's turn
// stretched by such a stall is no more the fiber's doing than the OS's run queue is, and no reading
// can split it: the watchdog was not there to take one.
struct Stretch {
    std::int64_t from_ns = 0;
    std::int64_t to_ns = 0;
};

// The fiber's part of a turn: the share's pinned part, less the time `held_ns` the watchdog was
// held up in it beyond what the run queue's and the steal's shares already cover. (They may be
// the same time, a carrier waiting for a CPU as the machine froze, so they are not added up.)
std::int64_t fibers_part(const TurnShare& share, std::int64_t held_ns);

// How much of the turn [start_ns, end_ns] the stretches cover. They do not overlap one another
// (the watchdog's late wake-ups follow one another); empty ones count nothing.
std::int64_t time_covered(std::int64_t start_ns, std::int64_t end_ns, const Stretch* stretches,
                          std::size_t count);
