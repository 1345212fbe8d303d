#include "lessons/03-connector/fiber_stream.hpp"

#include <algorithm>
#include <cstring>

namespace {

// The first read of a request takes at most this much; the buffer grows only for larger heads.
// A typical request (hey, wrk, curl) is 100-300 bytes. 1 KiB, not more: glibc keeps freed blocks
// of up to 1,032 bytes in a per-thread cache, so the buffer a request takes and gives back costs
// little; a larger block first sweeps every small block cpp-httplib freed into the general
// bins (malloc_consolidate), once per request.
constexpr std::size_t first_read = 1024;
// write() gathers up to this much before it sends on its own; flush() sends the rest.
constexpr std::size_t gather_limit = 64 * 1024;

} // namespace

FiberStream::FiberStream(FiberSocket& socket, std::chrono::milliseconds read_timeout,
                         std::chrono::milliseconds write_timeout)
    : socket_(socket), read_timeout_(read_timeout), write_timeout_(write_timeout) {
}

bool FiberStream::is_readable() const {
    return begin_ < end_ || socket_.wait_readable(deadline_after(read_timeout_));
}

ssize_t FiberStream::fill(Deadline deadline) {
    if (begin_ == end_) begin_ = end_ = 0;
    if (in_.size() - end_ < first_read / 2) {
        // Move unread bytes to the front, then make room for one more read.
        std::copy(in_.begin() + static_cast<std::ptrdiff_t>(begin_),
                  in_.begin() + static_cast<std::ptrdiff_t>(end_), in_.begin());
        end_ -= begin_;
        begin_ = 0;
        if (in_.size() - end_ < first_read / 2) in_.resize(std::max(first_read, in_.size() * 2));
    }
    const ssize_t n = socket_.receive(in_.data() + end_, in_.size() - end_, deadline);
    if (n > 0) end_ += static_cast<std::size_t>(n);
    return n;
}

ssize_t FiberStream::read(char* data, std::size_t size) {
    if (begin_ == end_) {
        const ssize_t n = fill(deadline_after(read_timeout_));
        if (n <= 0) return n; // 0: the peer closed; -1: an error or the read timeout
    }
    const std::size_t count = std::min(size, end_ - begin_);
    std::memcpy(data, in_.data() + begin_, count);
    begin_ += count;
    if (begin_ == end_) {
        // Everything received has been consumed. An idle connection (a keep-alive wait, a
        // handler sleeping for a second) holds no buffer: 10,000 of them would pin 10 MB.
        std::vector<char>().swap(in_);
        begin_ = end_ = 0;
    }
    return static_cast<ssize_t>(count);
}

ssize_t FiberStream::write(const char* data, std::size_t size) {
    if (failed_) return -1;
    out_.append(data, size);
    if (out_.size() >= gather_limit && !flush()) return -1;
    return static_cast<ssize_t>(size);
}

bool FiberStream::flush() {
    if (failed_) return false;
    if (out_.empty()) return true;
    // The write timeout bounds each wait for the client to take more bytes, not the whole
    // response: a slow reader of a large response is fine as long as it keeps reading.
    for (std::size_t sent = 0; sent < out_.size() && !failed_;) {
        const ssize_t n = socket_.send_some(out_.data() + sent, out_.size() - sent,
                                            deadline_after(write_timeout_));
        failed_ = n < 0;
        if (n > 0) sent += static_cast<std::size_t>(n);
    }
    out_.clear();
    if (out_.capacity() > gather_limit) std::string().swap(out_);
    return !failed_;
}

void FiberStream::get_remote_ip_and_port(std::string& ip, int& port) const {
    socket_.remote_address(ip, port);
}

void FiberStream::get_local_ip_and_port(std::string& ip, int& port) const {
    socket_.local_address(ip, port);
}

FiberStream::Arrival FiberStream::wait_for_request(Deadline deadline) {
    if (begin_ < end_) return Arrival::request; // pipelined: it is here already
    for (;;) {
        if (!socket_.wait_readable(deadline)) return Arrival::timeout;
        // Readable may mean data, or that the peer closed; a read tells which.
        const ssize_t n = fill(deadline);
        if (n > 0) return Arrival::request;
        if (n == 0) return Arrival::closed;
        if (errno == ETIMEDOUT) return Arrival::timeout;
        return Arrival::closed; // reset by peer, or another error
    }
}

FiberStream::Head FiberStream::read_head(std::size_t max_bytes, Deadline deadline) {
    static const char blank_line[] = "\r\n\r\n";
    std::size_t searched = 0; // bytes after begin_ already searched (offsets survive fill())
    for (;;) {
        const char* start = in_.data() + begin_;
        const std::size_t available = end_ - begin_;
        // Search the new bytes, and three before them in case "\r\n\r\n" arrived split.
        const std::size_t from = searched >= 3 ? searched - 3 : 0;
        const char* found =
            std::search(start + from, start + available, blank_line, blank_line + 4);
        if (found != start + available) {
            head_length_ = static_cast<std::size_t>(found + 4 - start);
            return head_length_ > max_bytes ? Head::too_large : Head::complete;
        }
        if (available >= max_bytes) return Head::too_large;
        searched = available;
        const ssize_t n = fill(deadline);
        if (n == 0) return Head::closed;
        if (n < 0) return errno == ETIMEDOUT ? Head::timeout : Head::closed;
    }
}
