#include "epoll_scheduler.hpp"

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace {

thread_local EpollScheduler* this_thread_scheduler = nullptr;

[[noreturn]] void die(const char* what) {
    // Only the kernel refusing an epoll or eventfd gets here: nothing sensible to recover.
    std::fprintf(stderr, "EpollScheduler: %s: %s\n", what, std::strerror(errno));
    std::abort();
}

// One fiber's wait for one fd. It lives on the waiting fiber's stack; epoll holds its address
// only while the fd is registered, and the fiber unregisters before it returns.
struct Waiter {
    boost::fibers::context* fiber;
    bool readable = false; // set by the scheduler: tells the fiber who woke it
};

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

// epoll_wait's timeout in ms for a wait until `until`: -1 for "no timer", 0 once it passed,
// rounded up (waking a ms late is harmless; waking early would spin until the timer is due),
// capped at INT_MAX (a far deadline would wrap into a random, possibly negative, int).
int timeout_ms_until(std::chrono::steady_clock::time_point until) {
    if (until == std::chrono::steady_clock::time_point::max()) return -1;
    const auto left = until - std::chrono::steady_clock::now();
    if (left <= left.zero()) return 0;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    return ms < INT_MAX ? static_cast<int>(ms) : INT_MAX;
}

} // namespace

EpollScheduler::EpollScheduler() {
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) die("epoll_create1");
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) die("eventfd");
    epoll_event event{};
    event.events = EPOLLIN;   // level-triggered: readable until suspend_until drains it
    event.data.ptr = nullptr; // marks the eventfd among the waiters
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event) != 0) die("epoll_ctl(eventfd)");
    this_thread_scheduler = this;
}

EpollScheduler::~EpollScheduler() {
    if (this_thread_scheduler == this) this_thread_scheduler = nullptr;
    ::close(wake_fd_);
    ::close(epoll_fd_);
}

EpollScheduler* EpollScheduler::current() {
    return this_thread_scheduler;
}

bool EpollScheduler::wait_readable(int fd, Deadline deadline) {
    Waiter waiter{boost::fibers::context::active()};
    epoll_event event{};
    // One-shot: the event fires once, for this wait; the fiber then removes the registration,
    // whichever way it woke, before `waiter` goes out of scope.
    event.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    event.data.ptr = &waiter;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0)
        throw std::runtime_error("wait_readable: epoll_ctl(ADD): " +
                                 std::string(std::strerror(errno)));
    park(deadline);
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    // The flag, not the clock: a fiber readied by its timer and its fd in one pass was readable.
    return waiter.readable;
}

void EpollScheduler::awakened(boost::fibers::context* fiber) noexcept {
    fiber->ready_link(ready_);
}

boost::fibers::context* EpollScheduler::pick_next() noexcept {
    // While some fiber is always ready the carrier never idles, and suspend_until (with its
    // epoll_wait) is never reached: a fiber that yields in a loop would starve every socket.
    // So between fibers, look at the sockets without waiting, at most once a millisecond (a
    // system call per switch would cost more than the fibers' work). Only the dispatcher: Boost
    // also calls pick_next from a fiber about to park.
    const auto now = std::chrono::steady_clock::now();
    if (!ready_.empty() && now - last_look_ >= std::chrono::milliseconds(1) &&
        boost::fibers::context::active()->is_context(boost::fibers::type::dispatcher_context)) {
        last_look_ = now;
        wake_ready_fds(0);
    }
    if (ready_.empty()) return nullptr;
    boost::fibers::context* next = &ready_.front();
    ready_.pop_front();
    return next;
}

bool EpollScheduler::has_ready_fibers() const noexcept {
    return !ready_.empty();
}

void EpollScheduler::suspend_until(std::chrono::steady_clock::time_point const& until) noexcept {
    wake_ready_fds(timeout_ms_until(until));
}

void EpollScheduler::wake_ready_fds(int timeout_ms) noexcept {
    epoll_event events[64]; // more ready fds simply wait for the next pass
    const int count = ::epoll_wait(epoll_fd_, events, 64, timeout_ms);
    if (count < 0) {
        if (errno == EINTR) return; // a signal: the scheduler calls us again
        die("epoll_wait");
    }
    for (int i = 0; i < count; ++i) {
        auto* waiter = static_cast<Waiter*>(events[i].data.ptr);
        if (waiter == nullptr) { // notify(): drain it, or epoll reports it on every pass
            std::uint64_t drained = 0;
            while (::read(wake_fd_, &drained, sizeof drained) > 0) {
            }
            continue;
        }
        waiter->readable = true;
        // Its deadline may have readied it already in this pass (Boost 1.74 timers), and from
        // pick_next it may sit in the ready queue: link it only once.
        if (!waiter->fiber->ready_is_linked())
            boost::fibers::context::active()->schedule(waiter->fiber);
    }
}

void EpollScheduler::notify() noexcept {
    const std::uint64_t one = 1;
    // Another thread readied one of our fibers: end the carrier's epoll_wait. Cannot fail short
    // of the counter overflowing, and then the eventfd is readable anyway.
    [[maybe_unused]] const ssize_t written = ::write(wake_fd_, &one, sizeof one);
}
