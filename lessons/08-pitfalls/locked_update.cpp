#include "lessons/08-pitfalls/locked_update.hpp"

#include "lessons/08-pitfalls/query_param.hpp"

#include <boost/fiber/mutex.hpp>
#include <boost/fiber/operations.hpp>
#include <mutex>
#include <nlohmann/json.hpp>

namespace {

// The shared state, and the lock the handler takes around it.
template <typename Mutex> class Counter {
public:
    long update_slowly(std::chrono::milliseconds wait) {
        std::lock_guard<Mutex> lock(mutex_);
        boost::this_fiber::sleep_for(wait); // parks the fiber, holding the lock
        return ++updates_;
    }

private:
    Mutex mutex_;
    long updates_ = 0;
};

template <typename Mutex> void add_route(httplib::Server& server, const char* mutex_name) {
    // One counter per kind of lock, for the life of the process.
    static Counter<Mutex> counter;
    server.Get("/locked", [mutex_name](const httplib::Request& req, httplib::Response& res) {
        std::chrono::milliseconds wait{};
        try {
            wait = std::chrono::milliseconds(whole_number_param(req, "ms", 100, 0, 10'000));
        } catch (const std::invalid_argument& e) {
            return answer_bad_request(res, e.what());
        }
        const long updates = counter.update_slowly(wait);
        const nlohmann::ordered_json answer = {{"updates", updates}, {"mutex", mutex_name}};
        res.set_content(answer.dump() + "\n", "application/json");
    });
}

} // namespace

void add_locked_route(httplib::Server& server, LockKind lock) {
    if (lock == LockKind::std_mutex_bad) {
        add_route<std::mutex>(server, "std::mutex"); // ANTI-PATTERN
    } else {
        add_route<boost::fibers::mutex>(server, "boost::fibers::mutex");
    }
}
