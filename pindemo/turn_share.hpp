// Which part of a long turn was the fiber's doing.
//
// A turn is the span from the switch to a fiber to the switch away from it. Its length on the
// clock is not all the fiber's: the carrier thread may not have had a CPU for part of it.
//  * The OS may have kept it waiting in the run queue while another thread had the CPU. The
//    kernel counts that time per thread (/proc/self/task/TID/schedstat, second field).
//  * On a virtual machine the hypervisor may take the CPU itself away (steal time). The thread
//    then neither runs nor waits as far as its kernel knows: it still sits on its CPU, its CPU
//    clock stands still (the kernel leaves steal out of it), and no per-thread counter grows. What
//    gives it away is that pair: between two readings the thread was never put on a CPU afresh
//    (schedstat's third field, unchanged), so it never left its CPU, yet its CPU clock advanced
//    less than the wall clock. A fiber that blocks in a call leaves the CPU (and is put back
//    later); one that computes keeps its CPU clock running: neither is mistaken for steal.
// The detector reports a turn only when what is left, the pinned part, reaches the threshold.
#pragma once

#include <cstdint>
#include <ctime>

// A carrier thread's times at one moment, as its kernel counts them.
struct ThreadTimes {
    bool valid = false;
    std::int64_t at_ns = 0;       // steady clock, when read
    std::int64_t cpu_ns = 0;      // its CPU clock: time it ran (steal not included)
    std::int64_t runqueue_ns = 0; // time it was ready to run but waited for a CPU
    std::uint64_t arrivals = 0;   // times it was put on a CPU: unchanged while it never left one
};

// Reads them. `schedstat_fd` is the thread's /proc/self/task/TID/schedstat (or
// /proc/thread-self/schedstat on the thread itself), `cpu_clock` its CPU clock
// (pthread_getcpuclockid). Invalid when either read fails (the thread has ended, /proc is not
// mounted).
ThreadTimes read_thread_times(int schedstat_fd, clockid_t cpu_clock) noexcept;

struct TurnShare {
    std::int64_t pinned_ns = 0;   // what the fiber held: the rest
    std::int64_t runqueue_ns = 0; // the OS kept the thread waiting for a CPU
    std::int64_t stolen_ns = 0;   // the thread sat on a CPU that did not run it (steal)
};

// Splits the turn [start_ns, end_ns]. `runqueue_ns` is the thread's run-queue wait from a reading
// taken before the turn began to one taken when it ended: at least the turn's own. `during` is a
// reading taken while the turn went on (or invalid), `at_end` one the carrier took as it ended.
// Time before `during` is never counted as stolen: errors lean towards reporting.
TurnShare share_of_turn(std::int64_t start_ns, std::int64_t end_ns, std::int64_t runqueue_ns,
                        const ThreadTimes& during, const ThreadTimes& at_end);
