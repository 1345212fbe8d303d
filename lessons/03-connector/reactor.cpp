#include "lessons/03-connector/reactor.hpp"

#include "lessons/02-fibers/fiber_stack.hpp"
#include "lessons/common/tracing.hpp"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <utility>

namespace {

thread_local Reactor* this_thread_reactor = nullptr;

// How many ready sockets one epoll_wait() hands back. More simply wait for the next call.
constexpr int events_per_poll = 256;

[[noreturn]] void die(const char* what) {
    // Only the kernel refusing us an epoll or eventfd gets here: nothing sensible to recover.
    std::fprintf(stderr, "reactor: %s: %s\n", what, std::strerror(errno));
    std::abort();
}

// Hands a parked fiber back to the scheduler (or remembers the edge when nobody waits).
void wake(boost::fibers::context*& slot, bool& ready) noexcept {
    if (slot == nullptr) {
        ready = true;
        return;
    }
    boost::fibers::context* waiter = slot;
    slot = nullptr; // tells the waiter its socket is ready: it retries the syscall
    // Its deadline may have passed in this same scheduler pass: Boost 1.74 then readied it for
    // the timer without clearing our slot. Linked into the ready queue twice, it would corrupt
    // the queue. Schedule it once; the cleared slot still tells it the socket is ready.
    if (!waiter->ready_is_linked()) boost::fibers::context::active()->schedule(waiter);
}

// A socket wait's name in a --trace.
const char* traced_as(Direction direction) {
    return direction == Direction::read ? "socket.read" : "socket.write";
}

} // namespace

int timeout_ms_until(Deadline deadline) {
    if (deadline == no_deadline) return -1;
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= left.zero()) return 0;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    return ms < INT_MAX ? static_cast<int>(ms) : INT_MAX;
}

Reactor::Reactor() {
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) die("epoll_create1");
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) die("eventfd");
    epoll_event event{};
    event.events = EPOLLIN;   // level-triggered: it stays readable until we drain it
    event.data.ptr = nullptr; // nullptr marks the eventfd among the sockets
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event) != 0) die("epoll_ctl(eventfd)");
    this_thread_reactor = this;
}

Reactor::~Reactor() {
    if (this_thread_reactor == this) this_thread_reactor = nullptr;
    ::close(wake_fd_);
    ::close(epoll_fd_);
}

Reactor* Reactor::current() {
    return this_thread_reactor;
}

void Reactor::add(Watch& watch) {
    watch.reactor = this;
    epoll_event event{};
    // Edge-triggered: epoll reports a change once, so a connection costs one epoll_ctl for its
    // whole life. The price is discipline: always try the syscall first and wait only after
    // EAGAIN, and remember edges that arrive while nobody waits (watch.readable/writable).
    event.events = EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    event.data.ptr = &watch;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, watch.fd, &event) != 0)
        throw std::runtime_error(std::string("epoll_ctl(ADD): ") + std::strerror(errno));
}

void Reactor::remove(Watch& watch) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, watch.fd, nullptr);
    watch.reactor = nullptr;
}

bool Reactor::wait(Watch& watch, Direction direction, Deadline deadline) {
    const bool read = direction == Direction::read;
    bool& ready = read ? watch.readable : watch.writable;
    if (read && watch.hung_up) return true;
    if (ready) {
        // An edge arrived since we last looked; it may predate the caller's EAGAIN, in which
        // case the caller's retry sees EAGAIN again and the next wait really parks.
        ready = false;
        return true;
    }
    TraceWait traced(traced_as(direction)); // a span in --trace's timeline
    while (park(read ? watch.reader : watch.writer, deadline)) {
        if (!(read && watch.lighten)) return true;
        // Woken by lighten_reader(), not by the socket: give the pages back and wait on,
        // unless the socket's edge came meanwhile.
        watch.lighten = false;
        release_stack_below_here();
        if (watch.hung_up || std::exchange(ready, false)) return true;
    }
    return false;
}

void Reactor::lighten_reader(Watch& watch) {
    if (watch.reader == nullptr) return; // not parked reading (woken meanwhile): nothing to do
    watch.lighten = true;
    wake(watch.reader, watch.readable);
}

bool Reactor::wait_once(int fd, Direction direction, Deadline deadline) {
    Watch watch;
    watch.fd = fd;
    watch.reactor = this;
    epoll_event event{};
    event.events = (direction == Direction::read ? EPOLLIN | EPOLLRDHUP : EPOLLOUT) | EPOLLONESHOT;
    event.data.ptr = &watch;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0)
        throw std::runtime_error(std::string("epoll_ctl(ADD once): ") + std::strerror(errno));
    TraceWait traced(traced_as(direction));
    const bool ready = park(direction == Direction::read ? watch.reader : watch.writer, deadline);
    traced.end();
    // `watch` lives on this fiber's stack: unregister before it goes away.
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    return ready;
}

bool Reactor::park(boost::fibers::context*& slot, Deadline deadline) noexcept {
    boost::fibers::context* self = boost::fibers::context::active();
    slot = self;
    // Boost 1.74 bookkeeping for timed waits: a condition_variable wait_until() that was
    // notified leaves this field at -1, and the scheduler would then take our deadline for a
    // "timeout after notify" and never wake us. A plain timed wait starts it at 0, exactly as
    // boost::this_fiber::sleep_for does.
    self->twstatus.store(0, std::memory_order_relaxed);
    if (deadline == no_deadline) {
        self->suspend();
    } else {
        self->wait_until(deadline);
    }
    const bool woken = slot != self; // wake() cleared the slot; a timeout leaves it
    if (!woken) slot = nullptr;
    return woken;
}

void Reactor::poll(int timeout_ms) noexcept {
    epoll_event events[events_per_poll];
    const int count = ::epoll_wait(epoll_fd_, events, events_per_poll, timeout_ms);
    last_poll_ = std::chrono::steady_clock::now();
    if (count < 0) {
        if (errno == EINTR) return;
        die("epoll_wait");
    }
    for (int i = 0; i < count; ++i) {
        const uint32_t what = events[i].events;
        auto* watch = static_cast<Watch*>(events[i].data.ptr);
        if (watch == nullptr) { // another thread called notify()
            uint64_t drained = 0;
            while (::read(wake_fd_, &drained, sizeof drained) > 0) {
            }
            continue;
        }
        // Hang-ups and errors wake both directions: the syscall the fiber retries reports them.
        if (what & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) watch->hung_up = true;
        if (what & EPOLLPRI) watch->urgent = true;
        if (what & (EPOLLIN | EPOLLPRI | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            wake(watch->reader, watch->readable);
        if (what & (EPOLLOUT | EPOLLHUP | EPOLLERR)) wake(watch->writer, watch->writable);
    }
}

void Reactor::awakened(boost::fibers::context* ctx) noexcept {
    ctx->ready_link(ready_);
}

boost::fibers::context* Reactor::pick_next() noexcept {
    // The scheduler's dispatcher calls this between fibers. As long as some fiber is ready it
    // never idles, so suspend_until() (and with it epoll_wait) is not reached: a fiber that
    // yields in a loop would starve every fiber waiting for a socket. So while fibers keep the
    // carrier busy, look at the sockets (without waiting) at least once a millisecond.
    if (!ready_.empty() &&
        boost::fibers::context::active()->is_context(boost::fibers::type::dispatcher_context) &&
        std::chrono::steady_clock::now() - last_poll_ >= std::chrono::milliseconds(1))
        poll(0);
    if (ready_.empty()) return nullptr;
    boost::fibers::context* next = &ready_.front();
    ready_.pop_front();
    return next;
}

bool Reactor::has_ready_fibers() const noexcept {
    return !ready_.empty();
}

void Reactor::suspend_until(std::chrono::steady_clock::time_point const& until) noexcept {
    poll(timeout_ms_until(until)); // `until` is the next timer, or max() when there is none
}

void Reactor::notify() noexcept {
    const uint64_t one = 1;
    // Cannot fail short of the counter overflowing; a lost wake-up here is impossible.
    [[maybe_unused]] const ssize_t written = ::write(wake_fd_, &one, sizeof one);
}
