-- Lesson 07's orders: 100,000 rows behind a primary key, so GET /orders/{id} is one index
-- lookup. Safe to run twice and from two sessions at once (the checkpoint, the tests): the
-- advisory lock makes the second wait, and then it finds the table there.
BEGIN;
SELECT pg_advisory_xact_lock(7);
CREATE TABLE IF NOT EXISTS orders (id integer PRIMARY KEY, item text NOT NULL,
                                   quantity integer NOT NULL);
INSERT INTO orders
SELECT i, 'item-' || i, 1 + i % 9 FROM generate_series(1, 100000) AS i
ON CONFLICT (id) DO NOTHING;
COMMIT;
ANALYZE orders;
