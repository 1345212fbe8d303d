#include "lessons/08-pitfalls/meeting.hpp"

#include <mutex>

bool Meeting::wait(int size, std::chrono::milliseconds timeout) {
    std::unique_lock<boost::fibers::mutex> lock(mutex_);
    if (arrived_ == 0) size_ = size;
    const std::uint64_t mine = group_;
    if (++arrived_ >= size_) {
        ++group_;
        arrived_ = 0;
        complete_.notify_all();
        return true;
    }
    // The predicate form: Boost 1.74's wait_for may report a timeout after a notify.
    if (complete_.wait_for(lock, timeout, [&] { return group_ != mine; })) return true;
    --arrived_; // this caller leaves the group it could not complete
    return false;
}
