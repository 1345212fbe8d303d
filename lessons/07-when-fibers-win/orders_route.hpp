// GET /orders/{id}: the I/O-heavy endpoint of the migration article, on this repository's parts.
//
//   1. one indexed lookup through the pool (lesson 04):  SELECT item, quantity FROM orders ...
//   2. one call to the inventory service (InventoryClient), which answers after ~100 ms
//
// It answers 200 with {"id":7,"item":"item-7","quantity":8,"query_ms":0.3,"inventory_ms":100.4,
// "thread":"carrier-1#77"}, 404 when there is no such order, 500 with one line when the
// database failed (the pool's timeout, PostgreSQL down, no orders table), and 502 with one line
// when the inventory service did not answer 200 in time.
//
// Nearly all of a request's time is the downstream wait, and the wait is what each wiring spends
// differently: a platform thread sits blocked through it, a fiber parks and costs its carrier
// nothing. So 200 threads serve at most 200 / 0.1 s = 2,000 requests a second; fibers serve what
// the CPU allows.
#pragma once

#include "lessons/04-pool/pg_pool.hpp"
#include "lessons/07-when-fibers-win/inventory_client.hpp"

#include <httplib.h>

// The lookup, with {id} standing for the order's number (digits only: the route admits no other).
inline constexpr const char* orders_query = "SELECT item, quantity FROM orders WHERE id = {id}";
// Part 2's second round trip: the ten orders up to this one (an index range scan).
inline constexpr const char* recent_orders_query =
    "SELECT count(*), sum(quantity) FROM orders WHERE id > {id} - 10 AND id <= {id}";

void add_orders_route(httplib::Server& server, PgPool& pool, InventoryClient& inventory);

// GET /orders/{id}/summary, part 2's endpoint: no downstream call, two quick round trips on one
// borrowed connection (orders_query, then recent_orders_query), as the scaling report's endpoint
// made two JDBC round trips. 200 with {"id":7,"item":"item-7","quantity":8,"recent_orders":7,
// "recent_quantity":35,"thread":"..."}, 404 when there is no such order, 500 with one line when
// the database failed.
void add_summary_route(httplib::Server& server, PgPool& pool);
