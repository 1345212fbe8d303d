#include "cpu_lane.hpp"

CpuLane::CpuLane(int threads, int max_waiting) : max_waiting_(max_waiting) {
    if (threads < 1) throw std::invalid_argument("CpuLane: at least one thread");
    for (int i = 0; i < threads; ++i)
        threads_.emplace_back([this] { serve(); });
}

CpuLane::~CpuLane() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    work_arrived_.notify_all();
    for (std::thread& thread : threads_)
        thread.join();
}

std::uint64_t CpuLane::compute(std::function<std::uint64_t()> work) {
    boost::fibers::packaged_task<std::uint64_t()> task(std::move(work));
    boost::fibers::future<std::uint64_t> done = task.get_future();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        // The hand-off queue is a queue like any other: unbounded, it hides the overload the
        // gate of lesson 06 exists to show. Full, it says so at once.
        if (static_cast<int>(queue_.size()) >= max_waiting_)
            throw CpuBusy("the CPU lane is full: " + std::to_string(max_waiting_) +
                          " tasks wait already");
        queue_.push_back(std::move(task));
    }
    work_arrived_.notify_one();
    // A fiber-aware wait: on a carrier it parks this fiber; the lane thread that sets the value
    // makes it ready again across threads (the scheduler's notify()).
    return done.get();
}

int CpuLane::waiting() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(queue_.size());
}

void CpuLane::serve() {
    for (;;) {
        boost::fibers::packaged_task<std::uint64_t()> task;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            work_arrived_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) return; // stopping, and everything handed over is done
            task = std::move(queue_.front());
            queue_.pop_front();
        }
        task(); // the result, or the exception, goes to the caller's future
    }
}
