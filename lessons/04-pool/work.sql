-- What GET /work runs on its pooled connection (WorkService::query), for pgbench.
SELECT pg_sleep(0.05);
