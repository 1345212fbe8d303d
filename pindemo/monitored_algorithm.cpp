#include "monitored_algorithm.hpp"

#include "stack_sampler.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace {

using boost::fibers::context;
using boost::fibers::type;

std::int64_t now_ns() {
    return std::chrono::steady_clock::now().time_since_epoch().count();
}

} // namespace

MonitoredAlgorithm::MonitoredAlgorithm(std::unique_ptr<boost::fibers::algo::algorithm> inner,
                                       std::shared_ptr<CarrierMonitor> monitor,
                                       std::chrono::nanoseconds long_turn)
    : inner_(std::move(inner)), monitor_(std::move(monitor)), long_turn_ns_(long_turn.count()),
      schedstat_fd_(::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) {
    attach_sampler(monitor_.get());
}

MonitoredAlgorithm::~MonitoredAlgorithm() {
    monitor_->retire();
    detach_sampler();
    if (schedstat_fd_ >= 0) ::close(schedstat_fd_);
}

void MonitoredAlgorithm::awakened(context* ctx) noexcept {
    if (!ctx->is_context(type::dispatcher_context)) {
        ++ready_;
        if (counting_ && ctx == ended_.fiber) holder_requeued_ = true;
    }
    inner_->awakened(ctx);
}

context* MonitoredAlgorithm::pick_next() noexcept {
    context* next = inner_->pick_next();
    if (next == nullptr) return nullptr; // the dispatcher goes on (and soon suspends)
    std::int64_t now = now_ns();
    if (fiber_holds_carrier_ && now - turn_start_ns_ >= long_turn_ns_) {
        // The carrier's own times end the turn (turn_share.hpp), a few microseconds later.
        const ThreadTimes at_end = read_own_times(schedstat_fd_);
        if (at_end.valid) now = at_end.at_ns;
        ended_ = LongTurn{turn_start_ns_, now, holder_, 0, at_end};
        counting_ = true;
        looked_once_ = false;
        holder_requeued_ = false;
    }
    if (next->is_context(type::dispatcher_context)) {
        fiber_holds_carrier_ = false;
        monitor_->scheduler_turn();
        return next;
    }
    if (counting_) finish_long_turn(ready_); // `next` itself was one of the ready fibers
    --ready_;
    fiber_holds_carrier_ = true;
    holder_ = next;
    turn_start_ns_ = now;
    monitor_->turn_started(next, now);
    return next;
}

void MonitoredAlgorithm::suspend_until(
    std::chrono::steady_clock::time_point const& until) noexcept {
    if (counting_) {
        if (!looked_once_) {
            // Nothing is ready: look once more without waiting (sockets, other threads), and let
            // the dispatcher go round again (expired timers) before concluding nobody waited.
            looked_once_ = true;
            inner_->suspend_until(std::chrono::steady_clock::now());
            return;
        }
        finish_long_turn(ready_);
    }
    monitor_->parked(true);
    inner_->suspend_until(until);
    monitor_->parked(false);
}

void MonitoredAlgorithm::finish_long_turn(int ready) noexcept {
    ended_.ready_waiting = ready - (holder_requeued_ ? 1 : 0);
    counting_ = false;
    monitor_->long_turn_ended(ended_);
}
