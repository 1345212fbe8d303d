// The reactor: epoll inside each carrier's fiber scheduler.
//
// Boost.Fiber lets a program replace the scheduling algorithm a thread uses to pick its next
// fiber. A Reactor is such an algorithm, with one addition: when no fiber is ready, the carrier
// sleeps in epoll_wait() instead of on a condition variable. So the carrier thread wakes for
// whichever comes first: a socket a parked fiber waits for, the next timer (a fiber's sleep or
// timeout), or another thread handing it work (notify() writes to an eventfd). No separate
// poller thread is involved, so a socket's readiness never crosses threads: the fiber that
// waited runs on the very thread that saw the event.
//
// Every carrier has its own Reactor, and a socket registered with one carrier's reactor is
// served by fibers of that carrier only. That is why fibers here never migrate between carriers.
#pragma once

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/context.hpp>
#include <boost/fiber/scheduler.hpp>
#include <chrono>
#include <cstdint>

using Deadline = std::chrono::steady_clock::time_point;
constexpr Deadline no_deadline = Deadline::max();

// The wait until `deadline` in the milliseconds poll() and epoll_wait() take: -1 for no
// deadline, 0 once it has passed, rounded up (waking a little late is harmless, waking early
// would spin until the deadline), and at most INT_MAX, about 24.8 days (the caller then simply
// waits again): a bare cast to int would wrap a deadline weeks away into a random timeout.
int timeout_ms_until(Deadline deadline);

enum class Direction { read, write };

// A socket registered with one carrier's reactor for its whole life (edge-triggered).
// The reactor remembers readiness it saw while nobody waited, and which fiber waits for what.
struct Watch {
    int fd = -1;
    class Reactor* reactor = nullptr;
    bool readable = false; // an edge arrived that no waiter consumed yet
    bool writable = false;
    // The peer closed its side, or the socket failed: from now on a read never blocks (it
    // returns the bytes left, then 0 or the error), so a read wait returns at once. Remembered
    // because the edge that said so came only once, perhaps with data a reader has taken since.
    bool hung_up = false;
    // The peer sent an urgent (TCP out-of-band) byte. Linux ends a read at its mark, so from now
    // on a short read no longer means the kernel held nothing more (FiberSocket::wait_readable).
    bool urgent = false;
    // lighten_reader() woke the reader: not the socket, but a request to give back its stack.
    bool lighten = false;
    boost::fibers::context* reader = nullptr; // the fiber parked until readable, if any
    boost::fibers::context* writer = nullptr;
};

class Reactor final : public boost::fibers::algo::algorithm {
public:
    Reactor();
    ~Reactor() override;

    // The reactor of the calling thread, or nullptr when the thread is not a carrier.
    static Reactor* current();

    // Registers/unregisters a socket for the lifetime of a connection. Call on this carrier.
    void add(Watch& watch);
    void remove(Watch& watch);

    // Parks the calling fiber until the watched socket may be ready in `direction`, or until
    // `deadline`. Returns false on timeout. May return true spuriously: retry the syscall.
    // Call it only after the syscall said EAGAIN: an edge that came before is not repeated.
    bool wait(Watch& watch, Direction direction, Deadline deadline);

    // For a fiber long parked until `watch` is readable (an idle kept-alive connection): wakes it
    // just long enough to give back the stack pages below its wait (release_stack_below_here)
    // and parks it again; its wait() goes on as if nothing happened. Call it on this carrier.
    void lighten_reader(Watch& watch);

    // The same for a socket this reactor does not own (a database connection that fibers of
    // several carriers use in turn): registered for this one wait only.
    bool wait_once(int fd, Direction direction, Deadline deadline);

    // boost::fibers::algo::algorithm
    void awakened(boost::fibers::context* ctx) noexcept override;
    boost::fibers::context* pick_next() noexcept override;
    bool has_ready_fibers() const noexcept override;
    void suspend_until(std::chrono::steady_clock::time_point const& until) noexcept override;
    void notify() noexcept override;

private:
    // Moves fibers whose sockets are ready onto the ready queue; waits up to timeout_ms (-1:
    // forever, 0: just look).
    void poll(int timeout_ms) noexcept;
    bool park(boost::fibers::context*& slot, Deadline deadline) noexcept;

    boost::fibers::scheduler::ready_queue_type ready_;
    int epoll_fd_ = -1;
    int wake_fd_ = -1; // eventfd: other threads write to it to wake this carrier
    std::chrono::steady_clock::time_point last_poll_;
};
