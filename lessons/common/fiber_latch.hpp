// A gate a test opens once. Tests hold handlers on one instead of sleeping, so "two requests are
// inside" is a fact the test waits for, not a guess about timing. wait() parks a fiber, or blocks
// a plain thread (Boost.Fiber's primitives work across threads); open() may come from either.
#pragma once

#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <mutex>

class Latch {
public:
    void wait() {
        std::unique_lock<boost::fibers::mutex> lock(mutex_);
        opened_.wait(lock, [this] { return open_; });
    }
    void open() {
        std::lock_guard<boost::fibers::mutex> lock(mutex_);
        open_ = true;
        opened_.notify_all();
    }

private:
    boost::fibers::mutex mutex_;
    boost::fibers::condition_variable opened_;
    bool open_ = false;
};
