#include "quote_service.hpp"

#include "lessons/02-fibers/fiber_stack.hpp"

#include <algorithm>
#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/fiber.hpp>
#include <boost/fiber/future.hpp>
#include <boost/fiber/mutex.hpp>
#include <boost/fiber/operations.hpp>
#include <httplib.h>
#include <memory>
#include <optional>
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

namespace {

// What the suppliers asked by best_price_within() share with it. Held by a shared_ptr: a late
// supplier's fiber still reports here after the caller returned, and the state lives until the
// last of them is done.
struct Offers {
    boost::fibers::mutex mutex;
    boost::fibers::condition_variable changed;
    std::size_t pending = 0; // suppliers that have not answered yet
    std::optional<int> best;
};

} // namespace

int best_price_within(const std::vector<Supplier>& suppliers, std::chrono::milliseconds deadline) {
    const auto until = std::chrono::steady_clock::now() + deadline;
    auto offers = std::make_shared<Offers>();
    offers->pending = suppliers.size();
    for (const Supplier& supplier : suppliers) {
        // Detached: nobody joins a late supplier. It owns a copy of its call and of the state.
        boost::fibers::fiber(boost::fibers::launch::post, std::allocator_arg, FiberStack(64 * 1024),
                             [offers, supplier] {
                                 std::optional<int> cents;
                                 try {
                                     cents = supplier();
                                 } catch (const std::exception&) {
                                     // a supplier that throws offers no price
                                 }
                                 std::lock_guard<boost::fibers::mutex> lock(offers->mutex);
                                 if (cents && (!offers->best || *cents < *offers->best))
                                     offers->best = cents;
                                 --offers->pending;
                                 offers->changed.notify_all();
                             })
            .detach();
    }
    std::unique_lock<boost::fibers::mutex> lock(offers->mutex);
    // The predicate form: Boost 1.74's timed waits may wake without a notify.
    offers->changed.wait_until(lock, until, [&] { return offers->pending == 0; });
    if (!offers->best)
        throw std::runtime_error("no supplier answered within " + std::to_string(deadline.count()) +
                                 " ms");
    return *offers->best;
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
