#include "pindemo/pin_cases.hpp"

#include "lessons/04-pool/pg_connection.hpp"
#include "lessons/common/process.hpp"

#include <boost/fiber/future.hpp>
#include <boost/fiber/mutex.hpp>
#include <boost/fiber/operations.hpp>
#include <cstdint>
#include <cstdio>
#include <libpq-fe.h>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>

namespace {

using Clock = std::chrono::steady_clock;

std::string ms(std::chrono::milliseconds duration) {
    return std::to_string(duration.count()) + " ms";
}

class SleepCase : public PinCase {
public:
    SleepCase(bool fixed, std::chrono::milliseconds duration)
        : fixed_(fixed), duration_(duration) {}
    std::string describe() const override {
        return "waits " + ms(duration_) +
               (fixed_ ? " in boost::this_fiber::sleep_for (fiber-aware)"
                       : " in std::this_thread::sleep_for (not fiber-aware)");
    }
    std::string fiber_name() const override { return "sleeper"; }
    void run() override {
        if (fixed_) {
            boost::this_fiber::sleep_for(duration_);
        } else {
            std::this_thread::sleep_for(duration_); // ANTI-PATTERN: the carrier sleeps with us
        }
    }

private:
    bool fixed_;
    std::chrono::milliseconds duration_;
};

// Another OS thread takes the lock first; our fiber asks for it, and the thread holds it `duration`
// longer.
template <typename Mutex> class MutexCase : public PinCase {
public:
    explicit MutexCase(std::chrono::milliseconds duration) : duration_(duration) {}
    ~MutexCase() override {
        if (holder_.joinable()) holder_.join();
    }
    std::string describe() const override {
        return std::is_same<Mutex, std::mutex>::value
                   ? "waits " + ms(duration_) +
                         " for a std::mutex another thread holds (not fiber-aware)"
                   : "waits " + ms(duration_) +
                         " for a boost::fibers::mutex another thread holds (fiber-aware)";
    }
    std::string fiber_name() const override { return "locker"; }
    void run() override {
        // boost::fibers futures park a fiber and block a plain thread: both sides may use them.
        boost::fibers::future<void> lock_is_held = held_.get_future();
        holder_ = std::thread([this, asked = asking_.get_future()]() mutable {
            std::lock_guard<Mutex> lock(mutex_);
            held_.set_value();
            asked.get(); // the hold starts when our fiber asks, so the wait is the whole duration
            std::this_thread::sleep_for(duration_); // a plain thread: nobody else to run here
        });
        lock_is_held.get();
        asking_.set_value();
        std::lock_guard<Mutex> lock(mutex_); // std::mutex: ANTI-PATTERN, the carrier waits too
    }

private:
    std::chrono::milliseconds duration_;
    Mutex mutex_;
    boost::fibers::promise<void> held_;   // the other thread has the lock
    boost::fibers::promise<void> asking_; // our fiber is about to ask for it
    std::thread holder_;
};

// One query that takes `duration` in the server: pg_sleep. Both versions connect up front, from
// main, because a blocking connect on the carrier would be a second pin.
class DbCase : public PinCase {
public:
    DbCase(bool fixed, std::chrono::milliseconds duration, const std::string& conninfo)
        : fixed_(fixed), duration_(duration) {
        char sql[64];
        std::snprintf(sql, sizeof sql, "SELECT pg_sleep(%.3f)", duration.count() / 1000.0);
        sql_ = sql;
        if (fixed_) {
            // How long connecting may take: loopback answers in milliseconds; a server that does
            // not answer within this is down.
            fiber_aware_ = std::make_unique<PgConnection>(conninfo, std::chrono::seconds(10));
            return;
        }
        blocking_.reset(PQconnectdb(conninfo.c_str()));
        if (PQstatus(blocking_.get()) != CONNECTION_OK)
            throw std::runtime_error("cannot connect to PostgreSQL: " +
                                     first_line(PQerrorMessage(blocking_.get())));
    }
    std::string describe() const override {
        return "runs \"" + sql_ + "\"" +
               (fixed_ ? " with lesson 04's PgConnection (libpq's asynchronous API, fiber-aware)"
                       : " with PQexec (waits inside libpq: not fiber-aware)");
    }
    std::string fiber_name() const override { return "db-client"; }
    void run() override {
        if (fixed_) {
            fiber_aware_->query(sql_, duration_ + std::chrono::seconds(10));
            return;
        }
        // ANTI-PATTERN: PQexec waits for the answer in poll(), holding the carrier thread.
        std::unique_ptr<PGresult, void (*)(PGresult*)> result(PQexec(blocking_.get(), sql_.c_str()),
                                                              PQclear);
        if (PQresultStatus(result.get()) != PGRES_TUPLES_OK)
            throw std::runtime_error("the query failed: " +
                                     first_line(PQerrorMessage(blocking_.get())));
    }

private:
    static std::string first_line(const char* text) {
        const std::string message = text ? text : "";
        return message.substr(0, message.find('\n'));
    }

    bool fixed_;
    std::chrono::milliseconds duration_;
    std::string sql_;
    std::unique_ptr<PgConnection> fiber_aware_;
    std::unique_ptr<PGconn, void (*)(PGconn*)> blocking_{nullptr, PQfinish};
};

// Something to compute that the optimizer cannot remove: a few rounds of a 64-bit mix.
[[gnu::noinline]] std::uint64_t crunch(std::uint64_t x, int rounds) {
    for (int i = 0; i < rounds; ++i) {
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdULL;
        x ^= x >> 29;
    }
    return x;
}

class CpuCase : public PinCase {
public:
    CpuCase(bool fixed, std::chrono::milliseconds duration) : fixed_(fixed), duration_(duration) {}
    std::string describe() const override {
        return "computes for " + ms(duration_) + " of CPU time" +
               (fixed_ ? ", yielding every millisecond" : " without pausing (it never yields)");
    }
    std::string fiber_name() const override { return "cruncher"; }
    void run() override {
        // How long a fiber may compute before it lets the others run: far below the detector's
        // threshold, and long enough that switching costs nothing next to the work.
        constexpr auto slice = std::chrono::milliseconds(1);
        std::chrono::nanoseconds computed{0};
        auto since = thread_cpu_time();
        auto next_yield = Clock::now() + slice;
        std::uint64_t x = 42;
        while (computed < duration_) {
            x = crunch(x, 20000);
            // CPU time of the carrier thread: only our slices count, not other fibers' turns.
            const auto now = thread_cpu_time();
            computed += now - since;
            since = now;
            if (fixed_ && Clock::now() >= next_yield) {
                boost::this_fiber::yield();
                since = thread_cpu_time();
                next_yield = Clock::now() + slice;
            }
        }
        result_ = x;
    }

private:
    bool fixed_;
    std::chrono::milliseconds duration_;
    volatile std::uint64_t result_ = 0;
};

} // namespace

const std::vector<std::string>& pin_case_names() {
    static const std::vector<std::string> names = {"sleep", "mutex", "pq", "cpu"};
    return names;
}

std::unique_ptr<PinCase> make_pin_case(const std::string& name, bool fixed,
                                       std::chrono::milliseconds duration, const std::string& db) {
    if (name == "sleep") return std::make_unique<SleepCase>(fixed, duration);
    if (name == "mutex") {
        if (fixed) return std::make_unique<MutexCase<boost::fibers::mutex>>(duration);
        return std::make_unique<MutexCase<std::mutex>>(duration);
    }
    if (name == "pq") {
        if (db.empty())
            throw std::invalid_argument("--case pq needs --db CONNINFO, a libpq connection string "
                                        "such as the one lessons/tools/pg-cluster start prints");
        return std::make_unique<DbCase>(fixed, duration, db);
    }
    if (name == "cpu") return std::make_unique<CpuCase>(fixed, duration);
    throw std::runtime_error("unknown case '" + name + "'");
}
