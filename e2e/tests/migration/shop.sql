-- A release-sized migration of a small shop, run on the publisher while a native subscriber
-- replays it (e2e/tests/migration.rs). Every DDL kind of ddl_sync appears: table, index,
-- sequence, trigger, view, rule, schema, function, type, domain, extension; with the rows a
-- real migration writes in between. Transactions are explicit; statements that PostgreSQL runs
-- only outside a transaction block (CONCURRENTLY) stand alone. The role `reporting` exists on
-- both nodes (roles are global objects and never replicated).

-- 1. Foundations: schemas, extensions, types, domains.
BEGIN;
CREATE SCHEMA shop;
CREATE SCHEMA staging;
COMMENT ON SCHEMA shop IS 'orders, customers and products';
GRANT USAGE ON SCHEMA shop TO reporting;
CREATE EXTENSION pg_trgm;
CREATE EXTENSION citext WITH SCHEMA shop;
COMMENT ON EXTENSION citext IS 'case-insensitive text, for e-mail addresses';
CREATE TYPE shop.order_status AS ENUM ('new', 'paid', 'cancelled');
CREATE TYPE shop.address AS (street text, city text, zip text);
CREATE TYPE shop.price_range AS RANGE (subtype = numeric);
CREATE DOMAIN shop.email AS shop.citext CHECK (VALUE LIKE '%_@_%');
CREATE DOMAIN shop.money_amount AS numeric(12, 2) NOT NULL CHECK (VALUE >= 0);
COMMENT ON DOMAIN shop.email IS 'an e-mail address';
COMMENT ON TYPE shop.order_status IS 'life cycle of an order';
COMMIT;

-- 2. Customers: an identity key and a generated column; filled in the same transaction.
BEGIN;
CREATE TABLE shop.customers (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email shop.email NOT NULL,
    name text NOT NULL,
    search_name text GENERATED ALWAYS AS (lower(name)) STORED,
    home shop.address
);
CREATE UNIQUE INDEX customers_email_key ON shop.customers (email);
COMMENT ON TABLE shop.customers IS 'people who order';
COMMENT ON COLUMN shop.customers.search_name IS 'lower-case name, for searching';
INSERT INTO shop.customers (email, name, home)
SELECT 'customer' || i || '@example.com', 'Customer ' || i, ROW('Street ' || i, 'Town', lpad(i::text, 5, '0'))::shop.address
  FROM generate_series(1, 300) AS i;
COMMIT;

-- 3. Products, with unqualified names under a search_path, a sequence of their own and a
--    trigram index from the extension; filled right after creation.
BEGIN;
SET LOCAL search_path = shop, public;
CREATE SEQUENCE sku_seq START 1000 INCREMENT 10;
CREATE TABLE products (
    id int PRIMARY KEY,
    sku text NOT NULL DEFAULT 'SKU-' || nextval('sku_seq'),
    title text NOT NULL,
    price money_amount,
    tags text[] NOT NULL DEFAULT '{}'
);
ALTER SEQUENCE sku_seq OWNED BY products.sku;
INSERT INTO products (id, title, price, tags)
SELECT i, 'Product ' || i, i * 1.25, ARRAY['tag' || i % 5] FROM generate_series(1, 120) AS i;
CREATE INDEX products_title_trgm ON products USING gin (title gin_trgm_ops);
COMMENT ON INDEX products_title_trgm IS 'fuzzy search on titles';
COMMENT ON SEQUENCE sku_seq IS 'stock keeping unit numbers';
COMMIT;

-- 4. Orders, partitioned by date, with a foreign key and the enum.
BEGIN;
CREATE TABLE shop.orders (
    id bigint NOT NULL,
    customer_id bigint NOT NULL REFERENCES shop.customers (id),
    placed_on date NOT NULL,
    status shop.order_status NOT NULL DEFAULT 'new',
    total shop.money_amount,
    PRIMARY KEY (id, placed_on)
) PARTITION BY RANGE (placed_on);
CREATE TABLE shop.orders_2024 PARTITION OF shop.orders
    FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
CREATE TABLE shop.orders_2025 PARTITION OF shop.orders
    FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
CREATE INDEX orders_customer_idx ON shop.orders (customer_id);
INSERT INTO shop.orders (id, customer_id, placed_on, status, total)
SELECT i, 1 + i % 300, date '2024-01-01' + i % 700,
       (CASE WHEN i % 3 = 0 THEN 'paid' ELSE 'new' END)::shop.order_status, (i % 97) * 3.5
  FROM generate_series(1, 1000) AS i;
COMMIT;

-- 5. Order lines: created, filled right after; a constraint added NOT VALID and validated; a
--    new column filled in the same transaction.
CREATE TABLE shop.order_lines (
    order_id bigint NOT NULL,
    line_no int NOT NULL,
    product_id int NOT NULL REFERENCES shop.products (id),
    quantity int NOT NULL,
    PRIMARY KEY (order_id, line_no)
);
INSERT INTO shop.order_lines
SELECT o, l, 1 + (o * l) % 120, 1 + (o + l) % 4
  FROM generate_series(1, 1000) AS o, generate_series(1, 3) AS l;
BEGIN;
ALTER TABLE shop.order_lines ADD CONSTRAINT quantity_positive CHECK (quantity > 0) NOT VALID;
ALTER TABLE shop.order_lines VALIDATE CONSTRAINT quantity_positive;
ALTER TABLE shop.order_lines ADD COLUMN unit_price numeric(12, 2);
UPDATE shop.order_lines l SET unit_price = p.price FROM shop.products p WHERE p.id = l.product_id;
ALTER TABLE shop.order_lines ALTER COLUMN unit_price SET NOT NULL;
COMMIT;

-- 6. Customers grow: a column filled in the same transaction, a renamed column, a trigger.
BEGIN;
ALTER TABLE shop.customers ADD COLUMN phone text;
UPDATE shop.customers SET phone = '+1-555-' || lpad(id::text, 4, '0');
ALTER TABLE shop.customers ALTER COLUMN phone SET NOT NULL;
ALTER TABLE shop.customers RENAME COLUMN name TO full_name;
ALTER TABLE shop.customers ADD COLUMN updated_at timestamptz NOT NULL DEFAULT '2024-01-01 00:00:00+00';
CREATE FUNCTION shop.touch_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END
$$;
CREATE TRIGGER customers_touch BEFORE UPDATE ON shop.customers
    FOR EACH ROW EXECUTE FUNCTION shop.touch_updated_at();
COMMENT ON TRIGGER customers_touch ON shop.customers IS 'keeps updated_at current';
UPDATE shop.customers SET full_name = full_name || ' Jr.' WHERE id % 25 = 0;
COMMIT;

-- 7. The status enum learns a value (usable once committed) and fixes a spelling.
ALTER TYPE shop.order_status ADD VALUE 'shipped' AFTER 'paid';
ALTER TYPE shop.order_status RENAME VALUE 'cancelled' TO 'canceled';
UPDATE shop.orders SET status = 'shipped' WHERE status = 'paid' AND id % 2 = 0;

-- 8. Partitions: 2026 prepared apart, filled, then attached; 2024 detached and archived.
BEGIN;
CREATE TABLE shop.orders_2026 (LIKE shop.orders INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
INSERT INTO shop.orders_2026 (id, customer_id, placed_on, status, total)
SELECT 2000 + i, 1 + i % 300, date '2026-01-01' + i, 'new', i FROM generate_series(1, 50) AS i;
ALTER TABLE shop.orders_2026 ADD CONSTRAINT orders_2026_range
    CHECK (placed_on >= '2026-01-01' AND placed_on < '2027-01-01');
ALTER TABLE shop.orders ATTACH PARTITION shop.orders_2026
    FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
ALTER TABLE shop.orders_2026 DROP CONSTRAINT orders_2026_range;
COMMIT;
-- 2027 keeps the CHECK it was attached with, which implies its bounds: detached concurrently,
-- it gets no second one (2024 above has none, so it gets its bounds as a CHECK).
BEGIN;
CREATE TABLE shop.orders_2027 (LIKE shop.orders INCLUDING DEFAULTS);
ALTER TABLE shop.orders_2027 ADD CONSTRAINT orders_2027_range
    CHECK (placed_on >= '2027-01-01' AND placed_on < '2028-01-01');
ALTER TABLE shop.orders ATTACH PARTITION shop.orders_2027
    FOR VALUES FROM ('2027-01-01') TO ('2028-01-01');
INSERT INTO shop.orders (id, customer_id, placed_on, total) VALUES (3000, 3, '2027-02-01', 12);
COMMIT;
ALTER TABLE shop.orders DETACH PARTITION shop.orders_2024 CONCURRENTLY;
ALTER TABLE shop.orders DETACH PARTITION shop.orders_2027 CONCURRENTLY;
BEGIN;
ALTER TABLE shop.orders_2024 RENAME TO orders_2024_archive;
ALTER TABLE shop.orders_2024_archive SET SCHEMA staging;
INSERT INTO staging.orders_2024_archive (id, customer_id, placed_on, status, total)
VALUES (9999, 1, '2024-12-31', 'canceled', 0);
COMMIT;

-- 9. Views over the new shape; rules: one audits price changes, one makes a view deletable.
BEGIN;
CREATE VIEW shop.customer_orders AS
SELECT c.id AS customer_id, c.full_name, count(o.id) AS orders, coalesce(sum(o.total), 0) AS spent
  FROM shop.customers c LEFT JOIN shop.orders o ON o.customer_id = c.id
 GROUP BY c.id, c.full_name;
COMMENT ON VIEW shop.customer_orders IS 'orders per customer';
COMMENT ON COLUMN shop.customer_orders.spent IS 'sum of order totals';
ALTER TABLE shop.customer_orders RENAME COLUMN orders TO order_count;
CREATE VIEW shop.open_orders AS
SELECT id, customer_id, placed_on, total FROM shop.orders WHERE status = 'new';
CREATE OR REPLACE VIEW shop.open_orders AS
SELECT id, customer_id, placed_on, total, status FROM shop.orders WHERE status IN ('new', 'paid');
ALTER VIEW shop.open_orders RENAME TO pending_orders;
CREATE RULE pending_orders_cancel AS ON DELETE TO shop.pending_orders DO INSTEAD
    UPDATE shop.orders SET status = 'canceled' WHERE id = OLD.id AND placed_on = OLD.placed_on;
CREATE MATERIALIZED VIEW shop.sales_by_month AS
SELECT date_trunc('month', placed_on)::date AS month, sum(total) AS total FROM shop.orders GROUP BY 1;
CREATE UNIQUE INDEX sales_by_month_key ON shop.sales_by_month (month);
COMMENT ON MATERIALIZED VIEW shop.sales_by_month IS 'refreshed after each import';
CREATE TABLE shop.price_history (
    product_id int NOT NULL,
    old_price numeric(12, 2),
    new_price numeric(12, 2),
    changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE RULE log_price_change AS ON UPDATE TO shop.products
    WHERE OLD.price IS DISTINCT FROM NEW.price
    DO ALSO INSERT INTO shop.price_history (product_id, old_price, new_price)
            VALUES (OLD.id, OLD.price, NEW.price);
COMMENT ON RULE log_price_change ON shop.products IS 'audit of price changes';
COMMIT;
UPDATE shop.products SET price = price * 1.1 WHERE id % 4 = 0;
DELETE FROM shop.pending_orders WHERE id % 50 = 0;
REFRESH MATERIALIZED VIEW CONCURRENTLY shop.sales_by_month;

-- 10. Functions, a procedure and an aggregate; privileges on them.
BEGIN;
CREATE FUNCTION shop.order_total(p_order bigint) RETURNS numeric LANGUAGE sql STABLE
AS $$ SELECT coalesce(sum(quantity * unit_price), 0) FROM shop.order_lines WHERE order_id = p_order $$;
CREATE OR REPLACE FUNCTION shop.order_total(p_order bigint) RETURNS numeric
    LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT coalesce(sum(quantity * unit_price), 0)::numeric(12, 2)
        FROM shop.order_lines WHERE order_id = p_order $$;
ALTER FUNCTION shop.order_total(bigint) SET search_path = shop, pg_catalog;
COMMENT ON FUNCTION shop.order_total(bigint) IS 'sum of an order''s lines';
CREATE PROCEDURE shop.recompute_totals() LANGUAGE plpgsql AS $$
BEGIN
    UPDATE shop.orders o SET total = shop.order_total(o.id)
     WHERE o.id <= 1000 AND o.total IS DISTINCT FROM shop.order_total(o.id);
END
$$;
CREATE AGGREGATE shop.concat_all(text) (SFUNC = textcat, STYPE = text, INITCOND = '');
REVOKE EXECUTE ON FUNCTION shop.order_total(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION shop.order_total(bigint) TO reporting;
COMMIT;
CALL shop.recompute_totals();

-- 11. Identity and generated columns added to a table that exists.
BEGIN;
CREATE TABLE shop.invoices (
    no int NOT NULL,
    order_id bigint NOT NULL,
    issued_on date NOT NULL,
    net numeric(12, 2) NOT NULL
);
ALTER TABLE shop.invoices ALTER COLUMN no ADD GENERATED BY DEFAULT AS IDENTITY (START WITH 5000);
ALTER TABLE shop.invoices ADD PRIMARY KEY (no);
INSERT INTO shop.invoices (order_id, issued_on, net)
SELECT id, placed_on, total FROM shop.orders WHERE status = 'shipped';
ALTER TABLE shop.invoices ADD COLUMN gross numeric(12, 2) GENERATED ALWAYS AS (round(net * 1.2, 2)) STORED;
ALTER TABLE shop.invoices ALTER COLUMN no SET INCREMENT BY 2;
COMMIT;

-- 12. Sequences of their own.
CREATE SEQUENCE shop.ticket_seq AS int MINVALUE 1 MAXVALUE 999999 CYCLE;
ALTER SEQUENCE shop.ticket_seq RESTART WITH 100 CACHE 5;
CREATE TABLE shop.tickets (
    id int PRIMARY KEY DEFAULT nextval('shop.ticket_seq'),
    subject text NOT NULL
);
INSERT INTO shop.tickets (subject) SELECT 'ticket ' || g FROM generate_series(1, 40) AS g;
ALTER SEQUENCE shop.ticket_seq RENAME TO support_ticket_seq;
GRANT USAGE, SELECT ON SEQUENCE shop.support_ticket_seq TO reporting;

-- 13. Indexes, also built and dropped concurrently.
CREATE INDEX CONCURRENTLY order_lines_product_idx ON shop.order_lines (product_id);
CREATE INDEX CONCURRENTLY customers_search_idx ON shop.customers USING gin (search_name gin_trgm_ops);
CREATE UNIQUE INDEX CONCURRENTLY tickets_subject_key ON shop.tickets (subject);
ALTER INDEX shop.order_lines_product_idx RENAME TO order_lines_by_product;
ALTER INDEX shop.order_lines_by_product SET (fillfactor = 80);
DROP INDEX CONCURRENTLY shop.tickets_subject_key;
CREATE INDEX orders_open_idx ON shop.orders (placed_on) WHERE status = 'new';

-- 14. Row security, statistics, constraints, storage settings.
BEGIN;
ALTER TABLE shop.tickets ENABLE ROW LEVEL SECURITY;
CREATE POLICY tickets_reporting ON shop.tickets FOR SELECT TO reporting USING (true);
CREATE STATISTICS shop.orders_2025_stats (dependencies) ON customer_id, status FROM shop.orders_2025;
ALTER TABLE shop.order_lines ADD CONSTRAINT order_lines_quantity_max CHECK (quantity < 1000);
ALTER TABLE shop.order_lines RENAME CONSTRAINT order_lines_quantity_max TO quantity_sane;
ALTER TABLE shop.products ALTER COLUMN title SET STATISTICS 500;
ALTER TABLE shop.products SET (fillfactor = 90);
COMMIT;

-- 15. Privileges and ownership for the reporting role; then DDL run as that role.
BEGIN;
GRANT SELECT ON ALL TABLES IN SCHEMA shop TO reporting;
GRANT UPDATE (full_name) ON shop.customers TO reporting;
REVOKE SELECT ON shop.invoices FROM reporting;
GRANT USAGE ON TYPE shop.order_status TO reporting;
GRANT USAGE ON DOMAIN shop.email TO reporting;
ALTER DEFAULT PRIVILEGES IN SCHEMA shop GRANT SELECT ON TABLES TO reporting;
ALTER TABLE shop.price_history OWNER TO reporting;
GRANT USAGE, CREATE ON SCHEMA staging TO reporting;
COMMIT;
SET ROLE reporting;
CREATE TABLE staging.report_runs (id int PRIMARY KEY, ran_on date NOT NULL);
INSERT INTO staging.report_runs VALUES (1, '2025-06-01'), (2, '2025-06-02');
RESET ROLE;
CREATE TABLE shop.coupons (code text PRIMARY KEY, percent int NOT NULL);
INSERT INTO shop.coupons VALUES ('WELCOME', 10), ('LOYAL', 15);

-- 16. The type system: text search, a collation; a generated column that uses both.
BEGIN;
CREATE TEXT SEARCH CONFIGURATION shop.product_search (COPY = pg_catalog.english);
CREATE COLLATION shop.bytewise FROM "C";
ALTER TABLE shop.products ALTER COLUMN sku TYPE text COLLATE shop.bytewise;
ALTER TABLE shop.products ADD COLUMN search tsvector
    GENERATED ALWAYS AS (to_tsvector('shop.product_search'::regconfig, title)) STORED;
CREATE INDEX products_search_idx ON shop.products USING gin (search);
COMMIT;

-- 17. Domains evolve.
BEGIN;
ALTER DOMAIN shop.money_amount ADD CONSTRAINT money_amount_cap CHECK (VALUE < 1000000);
ALTER DOMAIN shop.email SET DEFAULT 'unknown@example.com';
ALTER DOMAIN shop.email DROP DEFAULT;
CREATE DOMAIN shop.phone AS text CHECK (VALUE ~ '^\+[0-9-]+$');
ALTER TABLE shop.customers ALTER COLUMN phone TYPE shop.phone;
COMMENT ON DOMAIN shop.phone IS 'an international number';
COMMIT;

-- 18. Staging work: a table created, filled, used and dropped in one transaction; a schema
--     that comes and goes; an extension that comes and goes; a schema renamed.
BEGIN;
CREATE TABLE staging.import_batch (id int PRIMARY KEY, payload text);
INSERT INTO staging.import_batch SELECT g, md5(g::text) FROM generate_series(1, 100) AS g;
INSERT INTO shop.products (id, title, price)
SELECT 1000 + id, payload, 1 FROM staging.import_batch WHERE id <= 10;
DROP TABLE staging.import_batch;
COMMIT;
BEGIN;
CREATE SCHEMA scratch;
CREATE TABLE scratch.work (id int PRIMARY KEY);
INSERT INTO scratch.work SELECT generate_series(1, 20);
CREATE EXTENSION hstore WITH SCHEMA scratch;
CREATE TABLE scratch.attrs (id int PRIMARY KEY, a scratch.hstore);
INSERT INTO scratch.attrs VALUES (1, 'colour => red');
COMMIT;
BEGIN;
DROP TABLE scratch.attrs;
DROP EXTENSION hstore;
DROP SCHEMA scratch CASCADE;
ALTER SCHEMA staging RENAME TO archive;
INSERT INTO archive.report_runs VALUES (3, '2025-06-03');
COMMIT;

-- 19. Clean-up: what the release no longer needs.
BEGIN;
DROP RULE log_price_change ON shop.products;
DROP TRIGGER customers_touch ON shop.customers;
DROP FUNCTION shop.touch_updated_at();
DROP VIEW shop.pending_orders;
DROP MATERIALIZED VIEW shop.sales_by_month;
DROP PROCEDURE shop.recompute_totals();
DROP AGGREGATE shop.concat_all(text);
DROP SEQUENCE shop.sku_seq CASCADE;
ALTER TABLE shop.products DROP COLUMN tags;
DROP TYPE shop.price_range;
DROP POLICY tickets_reporting ON shop.tickets;
DROP STATISTICS shop.orders_2025_stats;
ALTER TABLE shop.tickets DISABLE ROW LEVEL SECURITY;
DROP TABLE shop.coupons;
DROP INDEX shop.orders_open_idx;
COMMIT;

-- 20. More of each kind: inheritance, a trigger on a partitioned table, a constraint trigger,
--     a cast and an operator, renames and owners of functions and triggers, replica identity,
--     a composite type that grows, an unlogged table made logged, an extension update.
BEGIN;
CREATE TABLE shop.events_base (id bigint PRIMARY KEY, at timestamptz NOT NULL DEFAULT '2025-01-01');
CREATE TABLE shop.click_events (url text NOT NULL) INHERITS (shop.events_base);
INSERT INTO shop.click_events (id, url) VALUES (1, '/'), (2, '/cart');
ALTER TABLE shop.events_base ADD COLUMN source text NOT NULL DEFAULT 'web';
INSERT INTO shop.events_base (id, source) VALUES (10, 'app');
CREATE FUNCTION shop.default_total() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.total := coalesce(NEW.total, 0);
    RETURN NEW;
END
$$;
CREATE TRIGGER orders_stamp BEFORE INSERT ON shop.orders
    FOR EACH ROW EXECUTE FUNCTION shop.default_total();
ALTER TRIGGER orders_stamp ON shop.orders RENAME TO orders_default_total;
CREATE CONSTRAINT TRIGGER order_lines_checked AFTER INSERT ON shop.order_lines
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION shop.default_total();
CREATE FUNCTION shop.address_text(shop.address) RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT concat_ws(', ', $1.street, $1.city, $1.zip) $$;
CREATE CAST (shop.address AS text) WITH FUNCTION shop.address_text(shop.address) AS ASSIGNMENT;
CREATE OPERATOR shop.=== (LEFTARG = text, RIGHTARG = text, FUNCTION = texteq,
                          COMMUTATOR = OPERATOR(shop.===));
ALTER FUNCTION shop.order_total(bigint) RENAME TO order_sum;
ALTER FUNCTION shop.order_sum(bigint) OWNER TO reporting;
ALTER TABLE shop.price_history REPLICA IDENTITY FULL;
ALTER TABLE shop.order_lines CLUSTER ON order_lines_pkey;
ALTER TYPE shop.address ADD ATTRIBUTE country text;
ALTER SEQUENCE shop.support_ticket_seq AS bigint MAXVALUE 9999999;
CREATE UNLOGGED TABLE shop.cache (k text PRIMARY KEY, v text);
ALTER TABLE shop.cache SET LOGGED;
INSERT INTO shop.cache VALUES ('home', 'cached');
ALTER EXTENSION pg_trgm UPDATE;
COMMIT;
UPDATE shop.customers SET home.country = 'NZ' WHERE id % 7 = 0;

-- 21. Tables made from a query: their rows travel as rows, so the subscriber creates them empty.
CREATE TABLE archive.top_customers AS
SELECT customer_id, spent FROM shop.customer_orders ORDER BY spent DESC, customer_id LIMIT 10;
BEGIN;
SELECT id, title INTO archive.cheap_products FROM shop.products WHERE price < 10;
ALTER TABLE archive.cheap_products ADD PRIMARY KEY (id);
UPDATE archive.cheap_products SET title = upper(title);
COMMIT;

-- 22. Rows written after the migration, into its final shape.
INSERT INTO shop.customers (email, full_name, phone) VALUES ('late@example.com', 'Late Customer', '+1-555-9999');
INSERT INTO shop.orders (id, customer_id, placed_on, status, total)
SELECT 5000, id, '2026-03-01', 'shipped', 42 FROM shop.customers WHERE email = 'late@example.com';
INSERT INTO archive.orders_2024_archive (id, customer_id, placed_on, status, total)
VALUES (10000, 2, '2024-06-30', 'new', 7);
UPDATE shop.products SET title = title || ' (new)' WHERE id <= 5;
DELETE FROM shop.order_lines WHERE order_id = 1;
