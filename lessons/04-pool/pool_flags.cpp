#include "lessons/04-pool/pool_flags.hpp"

#include "lessons/common/process.hpp"

#include <cstdio>

void add_pool_flags(Flags& flags, PoolOptions& options) {
    flags
        .add("db", options.conninfo,
             "libpq connection string, e.g. \"host=127.0.0.1 port=25432 user=postgres\" "
             "(lessons/tools/pg-cluster prints one); empty: libpq's PGHOST, PGPORT, ...")
        .add("pool-size", options.size, 1, 1000,
             "database connections at most; requests beyond them wait for one")
        .add("pool-timeout", options.checkout_timeout, std::chrono::milliseconds(1),
             std::chrono::hours(1),
             "how long a request waits for a connection before it fails with 500")
        .add("pool-barging", options.barging,
             "hand a returned connection to whoever asks first (HikariCP's way) instead of "
             "the longest waiter");
}

std::unique_ptr<PgPool> open_pool_or_exit(const PoolOptions& options, const std::string& program) {
    auto pool = std::make_unique<PgPool>(options);
    try {
        pool->open();
    } catch (const std::exception& e) {
        fail(program, std::string(e.what()) +
                          " (is PostgreSQL running? lessons/tools/pg-cluster starts one; pass "
                          "its connection string with --db)");
    }
    std::printf("pool: %d connections open, checkout timeout %s, %s\n", options.size,
                format_duration(options.checkout_timeout).c_str(),
                options.barging ? "barging" : "first come, first served");
    std::fflush(stdout);
    return pool;
}
