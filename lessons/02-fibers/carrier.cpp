#include "lessons/02-fibers/carrier.hpp"

#include "lessons/02-fibers/fiber_stack.hpp"
#include "lessons/common/process.hpp"

#include <algorithm>
#include <boost/fiber/all.hpp>
#include <cstdio>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace {
// Read once per carrier start, so a plain mutex is cheap enough.
std::mutex observers_mutex;
std::vector<SchedulerObserver> observers;
} // namespace

Carrier::Carrier(std::string name, SchedulerSetup setup, std::size_t stack_size)
    : name_(std::move(name)), stack_size_(stack_size),
      thread_([this, setup = std::move(setup)] { run(setup); }) {
}

Carrier::~Carrier() {
    stop();
}

void Carrier::spawn(std::function<void()> task) {
    if (inbox_.push(std::move(task)) != boost::fibers::channel_op_status::success)
        throw std::logic_error("carrier " + name_ + " is stopped and takes no new fibers");
}

void Carrier::stop() {
    inbox_.close();
    if (thread_.joinable()) thread_.join();
}

void Carrier::run(const SchedulerSetup& setup) {
    name_this_thread(name_);
    if (setup) {
        setup();
    } else {
        use_carrier_algorithm<boost::fibers::algo::round_robin>();
    }

    // Fibers still running. Only this thread touches it, but the wait below must park this
    // (main) fiber, not block the thread, so the counter sits behind fiber primitives.
    int live = 0;
    boost::fibers::mutex mutex;
    boost::fibers::condition_variable all_done;

    auto start_fiber = [&](std::function<void()> task) {
        {
            std::lock_guard<boost::fibers::mutex> lock(mutex);
            ++live;
        }
        boost::fibers::fiber(std::allocator_arg, FiberStack(stack_size_),
                             [&, task = std::move(task)] {
                                 try {
                                     task();
                                 } catch (const std::exception& e) {
                                     std::fprintf(stderr, "%s: a fiber failed: %s\n", name_.c_str(),
                                                  e.what());
                                 }
                                 std::lock_guard<boost::fibers::mutex> lock(mutex);
                                 if (--live == 0) all_done.notify_all();
                             })
            .detach();
    };

    std::function<void()> task;
    while (inbox_.pop(task) == boost::fibers::channel_op_status::success) { // parks while empty
        start_fiber(std::move(task));
        // A burst of tasks (thousands of new connections): let the new fibers, and any other
        // ready one, run between starts instead of holding the carrier until the inbox is empty.
        while (inbox_.try_pop(task) == boost::fibers::channel_op_status::success) {
            boost::this_fiber::yield();
            start_fiber(std::move(task));
        }
    }
    std::unique_lock<boost::fibers::mutex> lock(mutex);
    all_done.wait(lock, [&] { return live == 0; });
}

bool on_fiber() {
    return boost::fibers::context::active()->is_context(boost::fibers::type::worker_context);
}

void install_carrier_algorithm(std::unique_ptr<boost::fibers::algo::algorithm> algorithm) {
    std::vector<SchedulerObserver> wrapping;
    {
        std::lock_guard<std::mutex> lock(observers_mutex);
        wrapping = observers;
    }
    for (SchedulerObserver observer : wrapping)
        algorithm = observer(std::move(algorithm));
    // The scheduler takes ownership (Boost counts references to algorithms itself).
    boost::fibers::context::active()->get_scheduler()->set_algo(algorithm.release());
}

void observe_carrier_schedulers(SchedulerObserver observer) {
    std::lock_guard<std::mutex> lock(observers_mutex);
    observers.push_back(observer);
}

void stop_observing_carrier_schedulers(SchedulerObserver observer) {
    std::lock_guard<std::mutex> lock(observers_mutex);
    observers.erase(std::remove(observers.begin(), observers.end(), observer), observers.end());
}
