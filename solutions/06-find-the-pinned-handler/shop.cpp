#include "shop.hpp"

#include "lessons/instruments/pinning/fiber_name.hpp"

#include <boost/fiber/future.hpp>
#include <boost/fiber/operations.hpp>
#include <httplib.h>
#include <mutex>
#include <thread>

std::string serve_named(const std::string& route, const std::function<std::string()>& handler) {
    // A connection's fiber serves request after request: the name says what it does now.
    name_this_fiber(route);
    return handler();
}

int Stock::count(const std::string& item) {
    std::lock_guard<boost::fibers::mutex> lock(mutex_);
    const auto found = items_.find(item);
    return found == items_.end() ? 0 : found->second;
}

void Stock::restock(int each, const std::function<void()>& while_held) {
    std::lock_guard<boost::fibers::mutex> lock(mutex_); // blocks this plain thread, fine
    for (auto& item : items_)
        item.second = each;
    while_held();
}

std::string handle_stock(Stock& stock, const std::string& item) {
    return item + ": " + std::to_string(stock.count(item)) + " in stock\n";
}

std::string handle_receipt(int order) {
    // The blocking call runs on a thread of its own; this fiber parks on a fiber-aware future
    // until the thread has set it (fiber futures may be set from any thread). One thread per
    // call keeps the example short; lesson 05's platform executor is the pooled version.
    boost::fibers::packaged_task<std::string()> render(
        [order] { return legacy_render_receipt(order); });
    boost::fibers::future<std::string> receipt = render.get_future();
    std::thread worker(std::move(render));
    std::string text = receipt.get(); // parks this fiber, not the carrier
    worker.join(); // the thread has set the result: it is ending, this takes microseconds
    return text;
}

namespace {

// A computation that keeps the CPU busy for `duration`: the report's number crunching.
void crunch_for(std::chrono::milliseconds duration) {
    // Give the carrier to the other fibers every millisecond: a ready fiber waits at most that
    // long, far below the detector's 20 ms threshold. yield() costs a fiber switch, nothing more.
    constexpr auto slice = std::chrono::milliseconds(1);
    const auto end = std::chrono::steady_clock::now() + duration;
    auto next_yield = std::chrono::steady_clock::now() + slice;
    for (auto now = std::chrono::steady_clock::now(); now < end;
         now = std::chrono::steady_clock::now()) {
        if (now >= next_yield) {
            boost::this_fiber::yield();
            next_yield = std::chrono::steady_clock::now() + slice;
        }
    }
}

} // namespace

std::string handle_report() {
    crunch_for(std::chrono::milliseconds(200));
    return "report: 3 items, 19 in stock\n";
}

// ---- do not change: the library and the routes ----

std::string legacy_render_receipt(int order) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200)); // it waits for a print server
    return "receipt #" + std::to_string(order) + ": 1 x tea, 2.50\n";
}

void add_shop_routes(httplib::Server& app, Stock& stock) {
    app.Get("/stock", [&stock](const httplib::Request& req, httplib::Response& res) {
        const std::string item = req.get_param_value("item");
        res.set_content(serve_named("GET /stock", [&] { return handle_stock(stock, item); }),
                        "text/plain");
    });
    app.Get("/receipt", [](const httplib::Request& req, httplib::Response& res) {
        const int order = std::stoi(req.get_param_value("order"));
        res.set_content(serve_named("GET /receipt", [&] { return handle_receipt(order); }),
                        "text/plain");
    });
    app.Get("/report", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(serve_named("GET /report", [] { return handle_report(); }), "text/plain");
    });
}
