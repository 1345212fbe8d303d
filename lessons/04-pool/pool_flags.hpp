// The command-line flags of every server with a database pool, and its start.
#pragma once

#include "lessons/04-pool/pg_pool.hpp"
#include "lessons/common/flags.hpp"

#include <memory>
#include <string>

// --db, --pool-size, --pool-timeout, --pool-barging.
void add_pool_flags(Flags& flags, PoolOptions& options);

// Creates the pool and opens all its connections, or prints one line and exits 1:
// "<program>: cannot connect to PostgreSQL: ... (is PostgreSQL running? lessons/tools/pg-cluster
// starts one; ...)". On success prints "pool: 10 connections open, checkout timeout 30s, first
// come, first served" (or "barging").
std::unique_ptr<PgPool> open_pool_or_exit(const PoolOptions& options, const std::string& program);
