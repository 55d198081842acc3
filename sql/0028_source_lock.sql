-- pgdedup schema, version 28: the source's lock keeps an untrusted owner from adding code
-- mid-run, one table's marks are written by one run at a time, and a marking column's name is
-- checked before a column is added.
--
-- * The source was checked (check_source: no index, statistics, constraint, rule or policy whose
--   expressions call another role's function) under an ACCESS SHARE lock held while it is read
--   (revision 24). ALTER TABLE waits for that lock, but CREATE INDEX takes SHARE, and CREATE
--   STATISTICS and ATTACH PARTITION take SHARE UPDATE EXCLUSIVE on the parent: none conflicts
--   with ACCESS SHARE. A table's owner could add an index on an expression calling their own
--   IMMUTABLE function after the check, and the planner folded it while planning pgdedup's next
--   read of the table (the next chunk of an index run, a worker's range, an exact check), with
--   the rights of the role running pgdedup: a superuser, often.
-- * Only the table's owner (or a superuser) may add those. So when the owner is a superuser, the
--   role running pgdedup, or the owner of pgdedup's schema (whose functions that role runs
--   anyway), ACCESS SHARE is still enough and is kept: nothing changes for an application's own
--   tables. A table of any other role is now locked in SHARE UPDATE EXCLUSIVE, the weakest mode
--   that conflicts with all three and with CREATE INDEX CONCURRENTLY, and with neither reads nor
--   writes; it also holds off, while pgdedup reads, VACUUM and ANALYZE of the table (autovacuum
--   skips it until its next round) and another pgdedup run reading it. PostgreSQL grants that
--   mode only to a role with UPDATE, DELETE or TRUNCATE on the table: a role that may only read
--   such a table is refused (PD006), told which grant lets it hold the table.
-- * Two collections of one table (each with its own marking column) writing their marks at the
--   same moment update the same rows, and each UPDATE locks rows in the order it scans them.
--   With synchronized sequential scans a scan starts where another scan of the table last
--   reported its position, so two such UPDATEs may walk the table from different blocks, each
--   reach rows the other has locked, and deadlock (one run cancelled, rolled back). Writing marks
--   (write_marks) and clearing them (unmark) first take a transaction-level advisory lock of the
--   table (pgdedup.lock_marks: class 1885824102, the table's oid), so writers of one table's
--   marks queue instead. (The collection's own lock never waits: it is tried, and a busy
--   collection fails at once, so taking the two in either order cannot deadlock.)
-- * A marking column's name longer than the server's identifiers (63 bytes) was accepted:
--   ALTER TABLE added the column under the name cut short, the run then failed looking it up by
--   the whole name, and every later dedupe of the collection failed with it while the added
--   column stayed (unmark and drop looked for the long name). guard_marking, which every
--   marking function calls before anything is written, refuses it (PD003).
--
-- Applied by migration 0028. Released files are never edited: a change is a new file + migration.

-- The source's lock (see above), taken first and held to the end of the transaction. A
-- materialized view or a foreign table cannot be locked (LOCK TABLE refuses them): one that
-- another non-superuser role owns is refused, since its owner could change it between the
-- check and the read.
CREATE OR REPLACE FUNCTION pgdedup.lock_source(p_schema text, p_table text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    rel record;
BEGIN
    SELECT c.oid, c.relkind, o.rolname AS owner, o.rolsuper OR o.rolname = current_user AS trusted,
           o.oid = (SELECT p.nspowner FROM pg_namespace p WHERE p.nspname = 'pgdedup') AS ours INTO rel
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_roles o ON o.oid = c.relowner
     WHERE n.nspname = p_schema AND c.relname = p_table;
    IF NOT FOUND THEN
        RETURN;  -- (check_source says so)
    ELSIF rel.relkind NOT IN ('r', 'p', 'v') THEN
        IF NOT rel.trusted THEN
            RAISE EXCEPTION '%.% is a % owned by %: it cannot be locked while it is checked and read, so its owner could change it in between; run pgdedup as %',
                p_schema, p_table, CASE rel.relkind WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' ELSE 'relation' END,
                rel.owner, rel.owner USING ERRCODE = 'PD006';
        END IF;
    ELSIF rel.trusted OR rel.ours THEN  -- nobody else may add an index, statistics or a partition
        EXECUTE format('LOCK TABLE %I.%I IN ACCESS SHARE MODE', p_schema, p_table);
    ELSIF has_table_privilege(rel.oid, 'UPDATE') OR has_table_privilege(rel.oid, 'DELETE')
          OR has_table_privilege(rel.oid, 'TRUNCATE') THEN
        EXECUTE format('LOCK TABLE %I.%I IN SHARE UPDATE EXCLUSIVE MODE', p_schema, p_table);
    ELSE
        RAISE EXCEPTION '%.% is owned by %, who could add an index (code the planner runs with your rights) while pgdedup reads it; holding the table against that needs UPDATE on it: GRANT UPDATE ON %.% TO %, or run pgdedup as %',
            p_schema, p_table, rel.owner, p_schema, p_table, current_user, rel.owner USING ERRCODE = 'PD006';
    END IF;
END $$;

-- As in revision 24 (the guard of a run that marks column p_column: under the lock if the column
-- exists; if it is to be added, checked without), and first the column's name: one the server
-- would cut short is refused.
CREATE OR REPLACE FUNCTION pgdedup.guard_marking(p_collection text, p_column text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
BEGIN
    IF octet_length(p_column) > current_setting('max_identifier_length')::integer THEN
        RAISE EXCEPTION 'the marking column''s name is longer than % bytes, the longest name the server keeps: %',
            current_setting('max_identifier_length'), p_column USING ERRCODE = 'PD003';
    END IF;
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.guard_collection_source(p_collection, p_column, true,
                                            pgdedup.has_column(c.source_schema, c.source_table, p_column));
END $$;

-- Wait for, and hold to the end of the transaction, the right to write marks into table p_table.
CREATE FUNCTION pgdedup.lock_marks(p_table oid) RETURNS void
LANGUAGE sql AS $$
    SELECT pg_catalog.pg_advisory_xact_lock((1885824102::bigint OPERATOR(pg_catalog.<<) 32)
                                            OPERATOR(pg_catalog.|) p_table::bigint)
$$;

-- Revision 6's write_marks, under the table's marks lock.
ALTER FUNCTION pgdedup.write_marks(integer, boolean) RENAME TO write_marks_unlocked;
CREATE FUNCTION pgdedup.write_marks(p_collection_id integer, p_only_redone boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    rel oid;
BEGIN
    SELECT pgdedup.relation_of(c.source_schema, c.source_table) INTO rel
    FROM pgdedup.collections c WHERE c.collection_id = p_collection_id;
    IF rel IS NOT NULL THEN  -- (a table that is gone fails in the update, as before)
        PERFORM pgdedup.lock_marks(rel);
    END IF;
    PERFORM pgdedup.write_marks_unlocked(p_collection_id, p_only_redone);
END $$;

-- As in revision 24 (the source checked: the marking column and the key), then the table's
-- marks lock, before unmark_unchecked clears the column.
CREATE OR REPLACE FUNCTION pgdedup.unmark(p_collection text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    rel oid;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    rel := pgdedup.relation_of(c.source_schema, c.source_table);
    IF rel IS NOT NULL THEN
        PERFORM pgdedup.guard_collection_source(p_collection, c.mark_column, false);
        PERFORM pgdedup.lock_marks(rel);
    END IF;
    RETURN pgdedup.unmark_unchecked(p_collection);
END $$;

SELECT pgdedup.pin_search_paths();
