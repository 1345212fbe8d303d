#include "quote_service.hpp"

#include <algorithm>
#include <httplib.h>
#include <stdexcept>
#include <thread>

void wait_for_supplier(std::chrono::milliseconds duration) {
    // TODO(ex1) task 1: this wait holds the whole carrier thread. Wait the fiber-aware way.
    std::this_thread::sleep_for(duration);
}

void PriceBoard::publish(const std::string& item, int cents) {
    // TODO(ex1) task 2: a std::mutex and a std::condition_variable block the carrier thread.
    {
        std::lock_guard<std::mutex> lock(mutex_);
        prices_[item] = cents;
    }
    published_.notify_all();
}

std::optional<int> PriceBoard::wait_for_price(const std::string& item,
                                              std::chrono::milliseconds timeout) {
    // TODO(ex1) task 2: while this waits, no other fiber on the carrier can run, not even the
    // one that would publish the price.
    std::unique_lock<std::mutex> lock(mutex_);
    if (!published_.wait_for(lock, timeout, [&] { return prices_.count(item) > 0; }))
        return std::nullopt;
    return prices_[item];
}

int best_price(const std::vector<Supplier>& suppliers) {
    if (suppliers.empty()) throw std::invalid_argument("best_price needs at least one supplier");
    // TODO(ex1) task 3: the suppliers are asked one after another, so their waits add up.
    // Ask them all at once, then take the lowest answer.
    int best = suppliers.front()();
    for (std::size_t i = 1; i < suppliers.size(); ++i)
        best = std::min(best, suppliers[i]());
    return best;
}

int best_price_within(const std::vector<Supplier>& suppliers, std::chrono::milliseconds deadline) {
    // TODO(ex1) task 5 (stretch): ask them all at once, as in task 3, but wait no longer than
    // `deadline`, and take the best price that came in by then.
    (void)suppliers;
    (void)deadline;
    throw std::logic_error("TODO(ex1) task 5: best_price_within is not written yet");
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
