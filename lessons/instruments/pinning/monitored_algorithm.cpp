#include "lessons/instruments/pinning/monitored_algorithm.hpp"

#include "lessons/common/process.hpp"
#include "lessons/instruments/pinning/fiber_name.hpp"
#include "lessons/instruments/pinning/stack_sampler.hpp"

namespace {

using boost::fibers::context;

std::int64_t now_ns() {
    return std::chrono::steady_clock::now().time_since_epoch().count();
}

// The calling thread's own CPU time: a system call (~0.2 us), the price of "on CPU x ms".
std::int64_t thread_cpu_ns() {
    return thread_cpu_time().count();
}

bool is_dispatcher(const context* ctx) {
    return ctx->is_context(boost::fibers::type::dispatcher_context);
}

} // namespace

MonitoredAlgorithm::MonitoredAlgorithm(std::unique_ptr<boost::fibers::algo::algorithm> inner,
                                       std::shared_ptr<CarrierMonitor> monitor,
                                       std::chrono::nanoseconds long_turn)
    : inner_(std::move(inner)), monitor_(std::move(monitor)), long_turn_ns_(long_turn.count()) {
    attach_sampler(monitor_.get());
}

MonitoredAlgorithm::~MonitoredAlgorithm() {
    monitor_->retire();
    detach_sampler();
}

void MonitoredAlgorithm::awakened(context* ctx) noexcept {
    if (!is_dispatcher(ctx)) {
        ++ready_;
        if (counting_ && ctx == ended_.fiber) requeued_ = true;
    }
    inner_->awakened(ctx);
}

context* MonitoredAlgorithm::pick_next() noexcept {
    context* next = inner_->pick_next();
    if (next == nullptr) return nullptr; // the dispatcher goes on looking
    const std::int64_t now = now_ns();
    if (holder_ != nullptr && now - turn_start_ns_ > long_turn_ns_) {
        ended_ = LongTurn{turn_start_ns_, now, thread_cpu_ns() - turn_cpu_ns_, holder_, {}, 0};
        counting_ = true;
        looked_ = requeued_ = false;
    }
    if (is_dispatcher(next)) {
        holder_ = nullptr;
        monitor_->scheduler_turn();
        return next;
    }
    if (counting_) end_long_turn(); // `next` is one of the fibers that were ready
    --ready_;
    holder_ = next;
    turn_start_ns_ = now;
    turn_cpu_ns_ = thread_cpu_ns();
    monitor_->turn_started(next, now);
    return next;
}

void MonitoredAlgorithm::suspend_until(
    std::chrono::steady_clock::time_point const& until) noexcept {
    if (counting_ && !looked_) {
        // Nothing is ready yet: poll once without waiting (sockets, other threads' wake-ups) and
        // let the dispatcher go round again (expired timers) before concluding nobody waited.
        looked_ = true;
        inner_->suspend_until(std::chrono::steady_clock::now());
        return;
    }
    if (counting_) end_long_turn();
    inner_->suspend_until(until);
}

void MonitoredAlgorithm::end_long_turn() noexcept {
    counting_ = false;
    ended_.ready_waiting = ready_ - (requeued_ ? 1 : 0);
    if (ended_.ready_waiting <= 0) return; // nobody waited for the carrier: not a pin
    try {
        ended_.fiber_name = fiber_display_name(ended_.fiber); // a fiber that ended has no name
        monitor_->long_turn_ended(ended_);
    } catch (...) { // out of memory: this one turn goes unreported
    }
}
