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
    std::int64_t pinned_ns = 0;   // what the fiber held: the rest
    std::int64_t runqueue_ns = 0; // the OS kept the thread waiting for a CPU
    std::int64_t stolen_ns = 0;   // the thread sat on a CPU that did not run it (steal)
};

// Splits the turn [start_ns, end_ns] with the watchdog's readings of the carrier: `before`, its
// last one before the turn began, and `during`, its first one while the turn went on (either
// may be invalid: a short turn is never seen under way), and `at_end`, the carrier's own as the
// turn ended (invalid: nothing is left out).
//  * Run queue: the wait since `during`, or since `before` less the time between `before` and
//    the turn's start (which that wait may have fallen in), whichever is larger.
//  * Steal, from `before` or `during`, whichever gives more, but only where the thread never
//    left its CPU from that reading to the end, and again less the time between that reading
//    and the turn's start. So a stall that freezes the watchdog too (a host that deschedules
//    both of the VM's CPUs) is still found, from the watchdog's last reading before it.
// Each share is a lower bound of the time it names, so errors lean towards reporting; but for
// one case: the kernel books a wait in the run queue when it ends, whole, so one under way at
// `before` may be counted a little beyond its share.
TurnShare share_of_turn(std::int64_t start_ns, std::int64_t end_ns, const ThreadTimes& before,
                        const ThreadTimes& during, const ThreadTimes& at_end);
