INSERT INTO customers (email, name, legacy_code)
SELECT 'customer' || i || '@example.com', 'Customer ' || i, 'L' || i
FROM generate_series(1, 1000) AS i;

INSERT INTO products (sku, title, price_cents)
SELECT 'SKU-' || i, 'Product ' || i, 100 * (1 + i % 50)
FROM generate_series(1, 100) AS i;

INSERT INTO orders (customer_id, product_id, quantity, placed_at)
SELECT 1 + i % 1000, 1 + i % 100, 1 + i % 3, timestamptz '2026-01-01' + i * interval '1 hour'
FROM generate_series(1, 5000) AS i;
