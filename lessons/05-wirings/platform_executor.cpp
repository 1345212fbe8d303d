#include "lessons/05-wirings/platform_executor.hpp"

#include "lessons/common/process.hpp"
#include "lessons/common/tracing.hpp"

#include <boost/fiber/future.hpp>
#include <stdexcept>
#include <string>

PlatformExecutor::PlatformExecutor(int threads_max) {
    if (threads_max < 1) throw std::invalid_argument("threads_max must be at least 1");
    threads_.reserve(static_cast<std::size_t>(threads_max));
    for (int i = 0; i < threads_max; ++i)
        threads_.emplace_back([this, i] {
            name_this_thread("platform-" + std::to_string(i));
            work();
        });
}

PlatformExecutor::~PlatformExecutor() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    work_arrived_.notify_all();
    for (auto& thread : threads_)
        thread.join();
}

bool PlatformExecutor::run(const std::function<bool()>& task) {
    // In a --trace: the wait in the queue, then the run as a slice of the pool thread's track.
    TraceWait queued("executor.queue");
    // `task` and `queued` live on the caller's stack, which stays put while the caller waits.
    boost::fibers::packaged_task<bool()> packaged([&task, &queued] {
        queued.end();
        const TraceTurn run(queued.fiber());
        return task();
    });
    boost::fibers::future<bool> done = packaged.get_future();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        queue_.push_back(std::move(packaged));
        queued_.fetch_add(1, std::memory_order_relaxed);
    }
    work_arrived_.notify_one();
    // A fiber parks here (its carrier serves other connections meanwhile); the pool thread's
    // set_value wakes it across threads.
    return done.get();
}

void PlatformExecutor::work() {
    for (;;) {
        boost::fibers::packaged_task<bool()> task;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            work_arrived_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) return; // stopping, and nothing left to do
            task = std::move(queue_.front());
            queue_.pop_front();
            queued_.fetch_sub(1, std::memory_order_relaxed);
        }
        busy_.fetch_add(1, std::memory_order_relaxed);
        task(); // an exception is stored in the future and rethrown to the waiting fiber
        busy_.fetch_sub(1, std::memory_order_relaxed);
    }
}
