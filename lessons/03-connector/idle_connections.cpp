#include "lessons/03-connector/idle_connections.hpp"

#include <sys/socket.h>

IdleConnections::IdleConnections(std::size_t carriers) {
    for (std::size_t i = 0; i < carriers; ++i)
        lists_.push_back(std::make_unique<List>());
}

IdleConnections::Waiting::Waiting(IdleConnections& list, std::size_t carrier, FiberSocket& socket)
    : list_(list), carrier_(carrier), socket_(socket), since_(std::chrono::steady_clock::now()) {
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
    return shut_;
}

void IdleConnections::unlink(List& list, Waiting& waiting) {
    if (list.newest_lightened == &waiting) list.newest_lightened = waiting.older_;
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
        if (shut_if_idle(*chosen, *oldest)) return true;
    }
}

std::optional<std::chrono::steady_clock::time_point>
IdleConnections::close_idle_before(std::size_t carrier,
                                   std::chrono::steady_clock::time_point cutoff) {
    List& list = *lists_[carrier];
    std::lock_guard<std::mutex> lock(list.mutex);
    while (list.oldest != nullptr && list.oldest->since_ < cutoff)
        shut_if_idle(list, *list.oldest);
    if (list.oldest == nullptr) return std::nullopt;
    return list.oldest->since_;
}

std::optional<std::chrono::steady_clock::time_point>
IdleConnections::lighten_idle_before(std::size_t carrier,
                                     std::chrono::steady_clock::time_point cutoff) {
    List& list = *lists_[carrier];
    std::lock_guard<std::mutex> lock(list.mutex);
    Waiting* waiting =
        list.newest_lightened != nullptr ? list.newest_lightened->newer_ : list.oldest;
    for (; waiting != nullptr && waiting->since_ < cutoff; waiting = waiting->newer_) {
        waiting->lightened_ = true;
        waiting->socket_.lighten_reader();
        list.newest_lightened = waiting;
        lightened_.fetch_add(1, std::memory_order_relaxed);
    }
    if (waiting == nullptr) return std::nullopt;
    return waiting->since_;
}

bool IdleConnections::shut_if_idle(List& list, Waiting& waiting) {
    unlink(list, waiting);
    // Bytes in the kernel that its fiber has not read yet (its carrier is busy) are a request
    // begun: not idle. It leaves the list unharmed.
    char byte;
    if (::recv(waiting.socket_.fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0) return false;
    waiting.shut_ = true;
    // Listed until now, so its fiber has not closed the descriptor: it is still this
    // connection's. The fiber's keep-alive wait ends with the end of stream this raises.
    ::shutdown(waiting.socket_.fd(), SHUT_RD);
    return true;
}

bool IdleConnections::any() const {
    for (const auto& list : lists_) {
        std::lock_guard<std::mutex> lock(list->mutex);
        if (list->oldest != nullptr) return true;
    }
    return false;
}
