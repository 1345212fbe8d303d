// Exercise 06: find the handlers that pin their carrier, with the pinning detector, and fix them.
//
// A small shop's handlers. Every one of them works, and under a light load nobody notices a
// thing. But some hold their carrier thread for a long time — in a blocking call, on a
// std::mutex, in a long computation — and while they do, every other fiber on that carrier
// waits. The detector (lessons/instruments/pinning/) reports such turns: which fiber, on which
// carrier, how long, and where it was stuck.
#pragma once

#include <boost/fiber/mutex.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <string>

namespace httplib {
class Server;
}

// ---- do not change: the graded tests use these declarations ----

// Task 1. Runs `handler` on the calling fiber and returns its answer, with the fiber named
// `route` ("GET /stock") meanwhile, so that a pinning event says which route held the carrier.
std::string serve_named(const std::string& route, const std::function<std::string()>& handler);

// The stock of each item. A plain thread (the restocker) refreshes it now and then, and fibers
// (GET /stock) read it.
class Stock {
public:
    // Task 2. How many of `item` are in stock.
    int count(const std::string& item);
    // Sets every item's count to `each`; calls `while_held` while it holds the table, standing in
    // for a refresh from the warehouse that takes a while. Called by a plain thread.
    void restock(int each, const std::function<void()>& while_held);

    // ---- end of do not change ----
private:
    // A fiber mutex: a fiber that waits for it parks, and the restocker (a plain thread) can
    // take it too. A std::mutex would block the whole carrier while the restocker holds it.
    boost::fibers::mutex mutex_;
    std::map<std::string, int> items_{{"tea", 12}, {"coffee", 7}};
};

// ---- do not change: the graded tests use these declarations ----

// The handlers, each answering one line.
std::string handle_stock(Stock& stock, const std::string& item); // "tea: 12 in stock\n"
std::string handle_receipt(int order);                           // Task 3. "receipt #7: ...\n"
std::string handle_report();                                     // Task 4. "report: ...\n"

// Given: a library we cannot change. Renders a receipt; blocks its calling thread for about
// 200 ms while it does.
std::string legacy_render_receipt(int order);

// Given (task 5 runs it): GET /stock?item=NAME, GET /receipt?order=N, GET /report, each through
// serve_named.
void add_shop_routes(httplib::Server& app, Stock& stock);
