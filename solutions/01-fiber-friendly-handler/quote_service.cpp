#include "quote_service.hpp"

#include "fiber_stack.hpp"

#include <algorithm>
#include <boost/fiber/future.hpp>
#include <boost/fiber/operations.hpp>
#include <httplib.h>
#include <stdexcept>

void wait_for_supplier(std::chrono::milliseconds duration) {
    // Parks this fiber; the carrier runs the others and wakes this one when the time is up.
    boost::this_fiber::sleep_for(duration);
}

void PriceBoard::publish(const std::string& item, int cents) {
    {
        std::lock_guard<boost::fibers::mutex> lock(mutex_);
        prices_[item] = cents;
    }
    published_.notify_all();
}

std::optional<int> PriceBoard::wait_for_price(const std::string& item,
                                              std::chrono::milliseconds timeout) {
    std::unique_lock<boost::fibers::mutex> lock(mutex_);
    // The predicate form: Boost 1.74's wait_for may report a timeout after a notify.
    if (!published_.wait_for(lock, timeout, [&] { return prices_.count(item) > 0; }))
        return std::nullopt;
    return prices_[item];
}

int best_price(const std::vector<Supplier>& suppliers) {
    if (suppliers.empty()) throw std::invalid_argument("best_price needs at least one supplier");
    // One fiber per supplier, all started before we wait for any: their waits overlap. The
    // futures carry each answer, or its exception, back to this fiber; get() parks it. Each
    // runs on a FiberStack, the guarded stack every fiber in this repository runs on (it also
    // keeps AddressSanitizer right about exceptions thrown on it); 64 KiB is plenty here.
    std::vector<boost::fibers::future<int>> answers;
    for (const Supplier& supplier : suppliers)
        answers.push_back(boost::fibers::async(boost::fibers::launch::post, std::allocator_arg,
                                               FiberStack(64 * 1024), supplier));
    int best = answers.front().get();
    for (std::size_t i = 1; i < answers.size(); ++i)
        best = std::min(best, answers[i].get());
    return best;
}

// ---- do not change: the route the end-to-end test (task 4) drives ----

void add_quote_routes(httplib::Server& server, std::chrono::milliseconds supplier_delay) {
    server.Get("/quote", [supplier_delay](const httplib::Request& req, httplib::Response& res) {
        const std::string item = req.get_param_value("item");
        const auto supplier = [supplier_delay](int cents) {
            return [supplier_delay, cents] {
                wait_for_supplier(supplier_delay);
                return cents;
            };
        };
        const int cents = best_price({supplier(120), supplier(95), supplier(110)});
        res.set_content(item + ": " + std::to_string(cents) + " cents\n", "text/plain");
    });
}
