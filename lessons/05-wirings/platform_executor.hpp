// The platform executor: a pool of OS threads that run requests, first come first served.
// Tomcat's classic wiring, the "platform threads" of the Java study.
//
//   connection fiber --run(task)--> FIFO queue --> one of threads_max OS threads runs the task
//        (parked until the task is done)                (blocking that thread in every wait)
//
// run() queues the task and parks the calling fiber (a plain thread blocks) until a pool thread
// has run it. So a queued request costs a parked fiber and an open connection, nothing more,
// and at most threads_max requests are ever being handled at once: the rest wait in the queue,
// where no application metric sees them, without errors, for as long as it takes.
//
// A task runs on an OS thread: its waits (pool.borrow, the database query, the socket writes)
// block that thread, as a platform thread's waits do in Java. Those waits are fiber-aware
// calls, and fiber-aware calls block a plain thread instead of parking a fiber (fiber_io.hpp).
//
// The queue has no bound of its own, like Tomcat's executor queue: it holds at most one task per
// open connection, so the connector's max_connections bounds it.
#pragma once

#include <atomic>
#include <boost/fiber/future.hpp>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

class PlatformExecutor {
public:
    // Starts `threads_max` threads named platform-0, platform-1, ... (threads_max >= 1).
    explicit PlatformExecutor(int threads_max);
    // Lets the threads finish the queued tasks, then joins them.
    ~PlatformExecutor();
    PlatformExecutor(const PlatformExecutor&) = delete;
    PlatformExecutor& operator=(const PlatformExecutor&) = delete;

    // Runs `task` on a pool thread and returns its result (or rethrows its exception). Waits,
    // parking a fiber or blocking a thread, until a thread is free and has run it.
    bool run(const std::function<bool()>& task);

    int threads_max() const { return static_cast<int>(threads_.size()); }
    // Tasks waiting for a thread.
    int queued() const { return queued_.load(std::memory_order_relaxed); }
    // Threads running a task.
    int busy() const { return busy_.load(std::memory_order_relaxed); }

private:
    void work();

    // A std::mutex although fibers take it in run(): it guards a push_back, never a wait, so a
    // carrier holds it for nanoseconds. The threads wait on the condition variable.
    std::mutex mutex_;
    std::condition_variable work_arrived_;
    // packaged_task: the task and its fiber-aware promise. The pool thread runs it and drops
    // it; the waiting fiber keeps the shared state alive through its future.
    std::deque<boost::fibers::packaged_task<bool()>> queue_;
    bool stopping_ = false;
    std::atomic<int> queued_{0};
    std::atomic<int> busy_{0};
    std::vector<std::thread> threads_;
};
