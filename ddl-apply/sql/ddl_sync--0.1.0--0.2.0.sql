-- ddl_sync 0.1.0 -> 0.2.0, run by ALTER EXTENSION ddl_sync UPDATE (written by hand; pgrx
-- generates only the install script ddl_sync--0.2.0.sql).
--
-- The rule: after this script, a database updated from 0.1.0 has exactly the objects of a fresh
-- CREATE EXTENSION ddl_sync at 0.2.0 (same definitions, privileges and column order). The package
-- test checks that against the kept 0.1.0 install script, sql/released/ddl_sync--0.1.0.sql
-- (e2e/tests/package.rs). Every SQL change of this release goes here too; for a new Rust
-- function, copy its CREATE FUNCTION from the generated install script.
\echo Use "ALTER EXTENSION ddl_sync UPDATE" to load this file. \quit

-- 0.2.0 changes no SQL object yet.
