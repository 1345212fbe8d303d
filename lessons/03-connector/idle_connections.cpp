#include "lessons/03-connector/idle_connections.hpp"

#include <sys/socket.h>

IdleConnections::IdleConnections(std::size_t carriers) {
    for (std::size_t i = 0; i < carriers; ++i)
        lists_.push_back(std::make_unique<List>());
}

IdleConnections::Waiting::Waiting(IdleConnections& list, std::size_t carrier, int fd)
    : list_(list), carrier_(carrier), fd_(fd), since_(std::chrono::steady_clock::now()) {
    List& mine = *list_.lists_[carrier_];
    std::lock_guard<std::mutex> lock(mine.mutex);
    older_ = mine.newest;
    (older_ != nullptr ? older_->newer_ : mine.oldest) = this;
    mine.newest = this;
}

bool IdleConnections::Waiting::end() {
    List& mine = *list_.lists_[carrier_];
    std::lock_guard<std::mutex> lock(mine.mutex);
    if (listed_) unlink(mine, *this);
    return evicted_;
}

void IdleConnections::unlink(List& list, Waiting& waiting) {
    (waiting.older_ != nullptr ? waiting.older_->newer_ : list.oldest) = waiting.newer_;
    (waiting.newer_ != nullptr ? waiting.newer_->older_ : list.newest) = waiting.older_;
    waiting.older_ = waiting.newer_ = nullptr;
    waiting.listed_ = false;
}

bool IdleConnections::evict_longest_idle() {
    for (;;) {
        // Each carrier's oldest, one lock at a time; then the oldest of those, if still there.
        List* chosen = nullptr;
        auto longest = std::chrono::steady_clock::time_point::max();
        for (const auto& list : lists_) {
            std::lock_guard<std::mutex> lock(list->mutex);
            if (list->oldest != nullptr && list->oldest->since_ < longest) {
                longest = list->oldest->since_;
                chosen = list.get();
            }
        }
        if (chosen == nullptr) return false;
        std::lock_guard<std::mutex> lock(chosen->mutex);
        Waiting* oldest = chosen->oldest; // its request may have come meanwhile: then the next
        if (oldest == nullptr) continue;  // carrier emptied meanwhile: look again
        unlink(*chosen, *oldest);
        // Bytes in the kernel that its fiber has not read yet (its carrier is busy) are a
        // request begun: not idle. It leaves the list unharmed; look for the next.
        char byte;
        if (::recv(oldest->fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0) continue;
        oldest->evicted_ = true;
        // Listed until now, so its fiber has not closed the descriptor: it is still this
        // connection's. The fiber's keep-alive wait ends with the end of stream this raises.
        ::shutdown(oldest->fd_, SHUT_RD);
        return true;
    }
}

bool IdleConnections::any() const {
    for (const auto& list : lists_) {
        std::lock_guard<std::mutex> lock(list->mutex);
        if (list->oldest != nullptr) return true;
    }
    return false;
}
