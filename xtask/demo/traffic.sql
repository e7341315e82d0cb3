-- pgbench script: the live traffic while the migration runs (columns no step changes).
\set c random(1, 1000)
\set p random(1, 100)
INSERT INTO orders (customer_id, product_id, quantity) VALUES (:c, :p, 1 + :c % 3);
