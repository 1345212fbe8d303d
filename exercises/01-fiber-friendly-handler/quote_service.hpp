// Exercise 01: make a blocking handler fiber-friendly.
//
// GET /quote?item=tea asks three suppliers for a price and answers with the best one. Each
// supplier takes a while to answer. The code below works on threads: every wait in it holds the
// thread that waits. On fibers that is pinning: one waiting request stops every other request on
// its carrier. Make every wait park the fiber instead.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace httplib {
class Server;
}

// ---- do not change: the graded tests use these declarations ----

// Task 1. Waits `duration`, as a supplier does before it answers.
void wait_for_supplier(std::chrono::milliseconds duration);

// Task 2. The latest price of each item: published by one fiber or thread, awaited by others.
class PriceBoard {
public:
    void publish(const std::string& item, int cents);
    // The item's price, waiting up to `timeout` for one to be published; nullopt on timeout.
    std::optional<int> wait_for_price(const std::string& item, std::chrono::milliseconds timeout);

    // ---- end of do not change ----
private:
    // Yours to change.
    std::mutex mutex_;
    std::condition_variable published_;
    std::map<std::string, int> prices_;
};

// ---- do not change: the graded tests use these declarations ----

// Task 3. A supplier: a call that waits, then answers with a price in cents (or throws).
using Supplier = std::function<int()>;

// The lowest price the suppliers offer. The suppliers are independent of each other, so it
// should take about as long as the slowest of them, not as long as all of them together. An
// exception from any supplier reaches the caller.
int best_price(const std::vector<Supplier>& suppliers);

// Task 5 (stretch). The lowest price among the suppliers that answer within `deadline`; returns
// by then even when some have not answered. A supplier that throws offers no price. Throws
// std::runtime_error("no supplier answered within 300 ms") when none offered one in time. A late
// supplier may answer after the call returned: that must be harmless.
int best_price_within(const std::vector<Supplier>& suppliers, std::chrono::milliseconds deadline);

// Given (task 4 runs it): GET /quote?item=NAME answers "NAME: 95 cents\n", the best of three
// suppliers that each wait `supplier_delay` before they answer.
void add_quote_routes(httplib::Server& server, std::chrono::milliseconds supplier_delay);
