#include "epoll_scheduler.hpp"

#include <stdexcept>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace {

thread_local EpollScheduler* this_thread_scheduler = nullptr;

// ---- do not change: Boost.Fiber plumbing the tests rely on ----

// Parks the calling fiber until something schedule()s it or `deadline` passes. It does not say
// which of the two happened: record that yourself.
[[maybe_unused]] void park(Deadline deadline) noexcept {
    boost::fibers::context* self = boost::fibers::context::active();
    // Boost 1.74 bookkeeping for timed waits: a notified condition_variable::wait_until leaves
    // this at -1, and the scheduler would then ignore our deadline. sleep_for stores 0 too.
    self->twstatus.store(0, std::memory_order_relaxed);
    if (deadline == Deadline::max()) {
        self->suspend();
    } else {
        self->wait_until(deadline);
    }
}

// ---- end of do not change ----

} // namespace

EpollScheduler::EpollScheduler() {
    // TODO(ex7) task 1: what does this carrier wait on, and how can another thread reach it?
    this_thread_scheduler = this;
}

EpollScheduler::~EpollScheduler() {
    // TODO(ex7) task 1: give back what the constructor took.
    if (this_thread_scheduler == this) this_thread_scheduler = nullptr;
}

EpollScheduler* EpollScheduler::current() {
    return this_thread_scheduler;
}

bool EpollScheduler::wait_readable(int fd, Deadline deadline) {
    // TODO(ex7) task 2: park this fiber until `fd` is readable or `deadline` passes, and say
    // which one happened.
    (void)fd;
    (void)deadline;
    throw std::logic_error("TODO(ex7) task 2: EpollScheduler::wait_readable is not written yet");
}

// The ready queue: given, it is what boost::fibers::algo::round_robin does.
void EpollScheduler::awakened(boost::fibers::context* fiber) noexcept {
    fiber->ready_link(ready_);
}

boost::fibers::context* EpollScheduler::pick_next() noexcept {
    // (Task 3, the stretch, changes this.)
    if (ready_.empty()) return nullptr;
    boost::fibers::context* next = &ready_.front();
    ready_.pop_front();
    return next;
}

bool EpollScheduler::has_ready_fibers() const noexcept {
    return !ready_.empty();
}

void EpollScheduler::suspend_until(std::chrono::steady_clock::time_point const& until) noexcept {
    // TODO(ex7) task 1: no fiber is ready. Sleep in the kernel until `until` (the next timer;
    // time_point::max() when there is none) or until something wakes the carrier. Returning at
    // once, as this placeholder does, makes the carrier spin: the scheduler calls it again and
    // again, and the tests see the CPU it burns.
    (void)until;
}

void EpollScheduler::notify() noexcept {
    // TODO(ex7) task 1: another thread made one of this carrier's fibers ready while the
    // carrier may be asleep in suspend_until. Wake it.
}
