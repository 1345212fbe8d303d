// Frames one HTTP/1.1 response out of the bytes a client receives, and refuses what it cannot
// frame for certain. A response read one byte too short or too long leaves the rest to be taken
// for the next response on a kept-alive connection (request smuggling's twin on the client side),
// so anything whose end is in doubt is refused, never guessed:
//  * a head (status line and header lines, CRLF-terminated, up to the blank line) of at most
//    max_response_head_bytes, with a status line "HTTP/1.x DDD[ reason]" and "name: value" lines
//    free of control bytes; the body is Content-Length bytes (one header, digits only, at most
//    max_response_body_bytes), none for 204 and 304, or, with no Content-Length, everything up
//    to the server's close (then the connection cannot be kept);
//  * refused: Transfer-Encoding (chunked bodies are not implemented here), interim 1xx
//    responses, a second Content-Length, anything over a limit, and every malformed line.
// It owns no socket: feed() it the bytes as they come, in any pieces. The connection's reads
// are sized by room(), so nothing past a limit or past the response is ever read.
//
// A parser may also charge what it holds to a ResponseBudget that many calls share: the bytes it
// buffers, and a body's whole Content-Length as soon as the head announces it. A response that
// would pass the budget is refused there and then, and the parser gives back what it took when it
// is destroyed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

struct HttpResponse {
    int status = 0;
    std::string body;
    bool keep_alive = true; // false when the server answered "Connection: close"
};

// The response head this client reads at most. Our servers send ~100 bytes; a head that does
// not end within the limit is refused (a server sending header lines forever cannot make the
// client buffer them, or search them, without end).
constexpr std::size_t max_response_head_bytes = 16 * 1024;
// The response body this client reads at most. Our servers' largest answer (/metrics) is a few
// KiB; a larger Content-Length is refused before a byte of the body is read, and a body that
// runs to the close is refused when it passes the limit.
constexpr std::size_t max_response_body_bytes = 1024 * 1024;

// Bytes of responses that all the calls sharing it may hold at once: a client's memory budget,
// which no number of concurrent calls can pass. Thread-safe: calls on every carrier and thread
// take from it and give back to it.
class ResponseBudget {
public:
    explicit ResponseBudget(std::size_t bytes) : limit_(bytes) {}
    ResponseBudget(const ResponseBudget&) = delete;
    ResponseBudget& operator=(const ResponseBudget&) = delete;

    // Takes `bytes`, or nothing and false when that would pass the limit.
    bool take(std::size_t bytes);
    void give_back(std::size_t bytes) { in_use_.fetch_sub(bytes, std::memory_order_relaxed); }

    std::size_t limit() const { return limit_; }
    std::size_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
    // How many takes it refused so far: responses refused for want of room.
    std::uint64_t refusals() const { return refusals_.load(std::memory_order_relaxed); }

private:
    const std::size_t limit_;
    std::atomic<std::size_t> in_use_{0};
    std::atomic<std::uint64_t> refusals_{0};
};

class ResponseParser {
public:
    enum class State { more, complete, refused };

    // Other limits than the client's are for tests and the fuzz target, which need small ones,
    // and for a client that knows what its server sends (lesson 07's inventory client). With a
    // `budget`, what the parser holds is charged to it (see above).
    explicit ResponseParser(std::size_t max_head = max_response_head_bytes,
                            std::size_t max_body = max_response_body_bytes,
                            ResponseBudget* budget = nullptr)
        : max_head_(max_head), max_body_(max_body), budget_(budget) {}
    ~ResponseParser();
    ResponseParser(const ResponseParser&) = delete;
    ResponseParser& operator=(const ResponseParser&) = delete;

    // Takes bytes that arrived, up to the end of the response, and returns how many it took:
    // fewer than `bytes.size()` only when the response is complete (the rest is not part of
    // it) or refused. Gives the same answer however the bytes are split.
    std::size_t feed(std::string_view bytes);
    // The server closed the connection: completes a body that runs to the close, refuses any
    // other unfinished response.
    void end_of_stream();

    State state() const { return state_; }
    // How many bytes to read next: never past a limit, never past this response's end, at
    // least 1 while the state is `more` (0 otherwise).
    std::size_t room() const;
    HttpResponse& response() { return response_; } // once complete
    const HttpResponse& response() const { return response_; }
    const std::string& error() const { return error_; } // once refused: one line
    // Refused because the budget had no room for the response (error() says so too).
    bool over_budget() const { return over_budget_; }
    std::size_t buffered() const { return head_.size() + response_.body.size(); }

private:
    void parse_head();
    void refuse(const std::string& why);
    // Charges `bytes` to the budget, if any; refuses the response when it has no room.
    bool charge(std::size_t bytes);

    std::size_t max_head_, max_body_;
    ResponseBudget* budget_;
    std::size_t charged_ = 0; // what this response holds of the budget
    bool over_budget_ = false;
    State state_ = State::more;
    std::string head_;         // bytes of the head, up to and including the blank line
    std::size_t searched_ = 0; // bytes of head_ already searched for the blank line
    bool head_done_ = false;
    bool until_close_ = false;  // no Content-Length: the body ends when the server closes
    std::size_t body_size_ = 0; // the Content-Length (when !until_close_)
    HttpResponse response_;
    std::string error_;
};
