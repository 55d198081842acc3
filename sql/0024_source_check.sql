-- pgdedup schema, version 24: the source checks in SQL, so the SQL functions make them too.
--
-- * Up to revision 23 the checks that reading a collection's source cannot run another role's
--   code with the reader's rights (a column type, view, index expression, statistics object,
--   CHECK constraint or row-level security policy another non-superuser made) were made by
--   pgdedup's Python commands only. A superuser calling mark_duplicates, find_duplicates,
--   update_duplicates, prepare_mark_column or unmark from psql read the table unchecked: an
--   index expression calling the table owner's function ran it as superuser while the query was
--   planned. The checks are now pgdedup.check_source (Python calls the same function), and
--   pgdedup.guard_source takes the source's ACCESS SHARE lock and checks under it (held to the
--   end of the transaction, so an ALTER cannot slip in between the check and a read).
-- * The marking column is checked like a text column (before, neither side checked it: a
--   table's owner could change its type to one of their own with a cast, which unmark and the
--   marking ran with the marker's rights).
-- * The checks read the catalogs through the transaction's snapshot: in a REPEATABLE READ or
--   SERIALIZABLE transaction that snapshot may predate the owner's last change, which the
--   planner would nevertheless use. Such a transaction is refused when a relation read belongs
--   to another non-superuser role.
-- * Those five functions check first: each is renamed <name>_unchecked and a function of the
--   old name and arguments guards the source, then calls it. (One wrapper each, instead of a
--   second copy of five long bodies.) A later revision that replaces one of them must replace
--   the _unchecked body, or keep the guard (tests/test_security.py checks every wrapper). A
--   function calling another of them checks again: ~1 ms.
-- * A missing source or column is SQLSTATE PD007 (pgdedup.SourceMissing), no longer PD006.
--
-- Applied by migration 0024. Released files are never edited: a change is a new file + migration.

-- Whether reading p_schema.p_table (the key, p_columns) could run code another non-superuser
-- role controls, with the current role's rights; raises if so (PD006), or if the relation or a
-- column is missing (PD007). Returns the relation's relkind. What is checked:
--   * each column read (the key, p_columns) has a type (a domain: and every type under it)
--     owned by a superuser or by the current role: a cast from a type its owner made runs that
--     owner's function, and so does a domain's CHECK when the column is written;
--   * a view is owned by a superuser or the current role, and so are the functions and
--     operators of the views it reads, and those of the indexes, extended statistics and CHECK
--     constraints of every relation read (partitions and inheritance children included): the
--     planner may evaluate them while planning a read;
--   * no row-level security policy applies to the current role on a relation read (it would
--     choose the rows compared and run its expressions with the reader's rights);
--   * in a transaction other than READ COMMITTED, every relation read belongs to a superuser or
--     the current role (the catalogs are read through the transaction's snapshot);
--   * the key column still has the type it was indexed with, one of the supported key types
--     (p_key_type NULL: any type its owner may not make; p_key NULL: no key is read).
CREATE FUNCTION pgdedup.check_source(p_schema text, p_table text, p_key text, p_key_type text, p_columns text[],
                                     p_collection text DEFAULT NULL) RETURNS "char"
LANGUAGE plpgsql STABLE AS $$
DECLARE
    label text := p_schema || '.' || p_table;
    of text := CASE WHEN p_collection IS NULL THEN '' ELSE format(' of collection ''%s''', p_collection) END;
    restart text := CASE WHEN p_collection IS NULL THEN '' ELSE
        format(': `pgdedup drop %s` forgets the collection; index the table under its new name to start again', p_collection) END;
    rel record;
    rels oid[];
    bad record;
    col text;
    typ record;
BEGIN
    IF p_key IS NOT NULL AND p_key_type IS NOT NULL
       AND p_key_type NOT IN ('smallint', 'integer', 'bigint', 'uuid', 'text', 'character varying') THEN
        RAISE EXCEPTION 'unsupported key type % recorded for %', quote_literal(p_key_type), label USING ERRCODE = 'PD006';
    END IF;
    SELECT c.oid, c.relkind, o.rolname AS owner,
           o.rolsuper OR c.relowner = (SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user) AS trusted
      INTO rel
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_roles o ON o.oid = c.relowner
     WHERE n.nspname = p_schema AND c.relname = p_table;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%', format('the source table %s%s does not exist (renamed or dropped?)%s', label, of, restart)
            USING ERRCODE = 'PD007';
    END IF;
    IF rel.relkind = 'v' AND NOT rel.trusted THEN
        RAISE EXCEPTION '% is a view owned by %: reading it runs the functions it calls with your rights; run pgdedup as %',
            label, rel.owner, rel.owner USING ERRCODE = 'PD006';
    END IF;
    WITH RECURSIVE r(oid) AS (  -- the relation, what its views read, partitions and children
        SELECT rel.oid
        UNION
        SELECT x.oid FROM r, LATERAL (
            SELECT d.refobjid AS oid FROM pg_rewrite w
            JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid
                            AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> r.oid
            WHERE w.ev_class = r.oid
            UNION ALL
            SELECT i.inhrelid FROM pg_inherits i WHERE i.inhparent = r.oid) x
    )
    SELECT array_agg(r.oid) INTO rels FROM r;
    IF current_setting('transaction_isolation') NOT IN ('read committed', 'read uncommitted') THEN  -- (RU runs as RC)
        SELECT c.oid::regclass::text AS what, o.rolname AS owner INTO bad
          FROM unnest(rels) AS u(oid) JOIN pg_class c ON c.oid = u.oid JOIN pg_roles o ON o.oid = c.relowner
         WHERE NOT o.rolsuper AND o.rolname <> current_user LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'reading % in a % transaction: % belongs to %, whose changes since the transaction''s snapshot the checks would not see; run pgdedup in a READ COMMITTED transaction',
                label, upper(current_setting('transaction_isolation')), bad.what, bad.owner USING ERRCODE = 'PD006';
        END IF;
    END IF;
    WITH users AS (SELECT 'pg_rewrite'::regclass AS classid, w.oid AS objid FROM unnest(rels) AS u(oid)
                   JOIN pg_rewrite w ON w.ev_class = u.oid
                   UNION ALL
                   SELECT 'pg_class'::regclass, i.indexrelid FROM unnest(rels) AS u(oid) JOIN pg_index i ON i.indrelid = u.oid
                   UNION ALL
                   SELECT 'pg_statistic_ext'::regclass, e.oid FROM unnest(rels) AS u(oid)
                   JOIN pg_statistic_ext e ON e.stxrelid = u.oid
                   UNION ALL
                   SELECT 'pg_constraint'::regclass, c.oid FROM unnest(rels) AS u(oid) JOIN pg_constraint c ON c.conrelid = u.oid),
    deps AS (SELECT d.refclassid, d.refobjid FROM users u
             JOIN pg_depend d ON d.classid = u.classid AND d.objid = u.objid)
    SELECT x.what, r.rolname AS owner INTO bad FROM (
        SELECT 'function ' || p.oid::regprocedure::text AS what, p.proowner AS owner
        FROM deps JOIN pg_proc p ON deps.refclassid = 'pg_proc'::regclass AND p.oid = deps.refobjid
        UNION ALL
        SELECT 'operator ' || o.oid::regoperator::text, f.proowner
        FROM deps JOIN pg_operator o ON deps.refclassid = 'pg_operator'::regclass AND o.oid = deps.refobjid
        JOIN pg_proc f ON f.oid = o.oprcode
        UNION ALL
        SELECT 'view ' || c.oid::regclass::text, c.relowner FROM unnest(rels) AS u(oid) JOIN pg_class c ON c.oid = u.oid
        WHERE c.relkind = 'v'
    ) x JOIN pg_roles r ON r.oid = x.owner
    WHERE NOT r.rolsuper AND r.rolname <> current_user
    UNION ALL  -- and whether row-level security policies apply to the current role on a relation read
    SELECT 'policies', NULL FROM unnest(rels) AS u(oid) JOIN pg_class c ON c.oid = u.oid
    WHERE c.relkind IN ('r', 'p') AND row_security_active(c.oid)
    LIMIT 1;
    IF FOUND AND bad.owner IS NOT NULL THEN
        RAISE EXCEPTION 'reading % runs %, which % made, with your rights; run pgdedup as %',
            label, bad.what, bad.owner, bad.owner USING ERRCODE = 'PD006';
    ELSIF FOUND THEN
        RAISE EXCEPTION 'row-level security policies of % (or of a table it reads) apply to you: they would choose the rows pgdedup compares (its results stand for every row) and run their expressions with your rights; run pgdedup as the table''s owner, a superuser or a role with BYPASSRLS',
            label USING ERRCODE = 'PD006';
    END IF;
    FOREACH col IN ARRAY array_remove(p_key || p_columns, NULL) LOOP
        -- the column's type and, for a domain, every type under it: any may run its owner's
        -- code (a cast from a base type, a domain's CHECK when the column is written)
        WITH RECURSIVE chain(oid) AS (
            SELECT a.atttypid FROM pg_attribute a
            WHERE a.attrelid = rel.oid AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped
            UNION
            SELECT t.typbasetype FROM chain JOIN pg_type t ON t.oid = chain.oid WHERE t.typtype = 'd'
        )
        SELECT (SELECT a.atttypid::regtype::text FROM pg_attribute a
                WHERE a.attrelid = rel.oid AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped) AS type_name,
               (SELECT o.rolname FROM chain JOIN pg_type t ON t.oid = chain.oid JOIN pg_roles o ON o.oid = t.typowner
                WHERE NOT o.rolsuper AND o.rolname <> current_user LIMIT 1) AS owner
          INTO typ;
        IF typ.type_name IS NULL THEN
            RAISE EXCEPTION '%', format('column %s of the source table %s%s does not exist any more%s',
                                        quote_literal(col), label, of, restart) USING ERRCODE = 'PD007';
        END IF;
        IF col = p_key AND p_key_type IS NOT NULL AND typ.type_name <> p_key_type THEN
            RAISE EXCEPTION 'the key column % of % is % now, not % as when it was indexed: drop the collection and index it again',
                quote_literal(col), label, typ.type_name, p_key_type USING ERRCODE = 'PD006';
        END IF;
        IF typ.owner IS NOT NULL THEN
            RAISE EXCEPTION 'column % of % has type %, made by %: its text form may run that role''s code with your rights; run pgdedup as %',
                quote_literal(col), label, typ.type_name, typ.owner, typ.owner USING ERRCODE = 'PD006';
        END IF;
    END LOOP;
    RETURN rel.relkind;
END $$;

-- The source's ACCESS SHARE lock, taken first and held to the end of the transaction: ALTER
-- TABLE, which every change check_source looks for needs, waits for it. A materialized view or a
-- foreign table cannot be locked (LOCK TABLE refuses them): one that another non-superuser role
-- owns is refused, since its owner could change it between the check and the read.
CREATE FUNCTION pgdedup.lock_source(p_schema text, p_table text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    rel record;
BEGIN
    SELECT c.relkind, o.rolname AS owner, o.rolsuper OR o.rolname = current_user AS trusted INTO rel
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_roles o ON o.oid = c.relowner
     WHERE n.nspname = p_schema AND c.relname = p_table;
    IF NOT FOUND THEN
        RETURN;  -- (check_source says so)
    ELSIF rel.relkind IN ('r', 'p', 'v') THEN
        EXECUTE format('LOCK TABLE %I.%I IN ACCESS SHARE MODE', p_schema, p_table);
    ELSIF NOT rel.trusted THEN
        RAISE EXCEPTION '%.% is a % owned by %: it cannot be locked while it is checked and read, so its owner could change it in between; run pgdedup as %',
            p_schema, p_table, CASE rel.relkind WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' ELSE 'relation' END,
            rel.owner, rel.owner USING ERRCODE = 'PD006';
    END IF;
END $$;

-- check_source under the source's lock (lock_source).
CREATE FUNCTION pgdedup.guard_source(p_schema text, p_table text, p_key text, p_key_type text, p_columns text[],
                                     p_collection text DEFAULT NULL) RETURNS "char"
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pgdedup.lock_source(p_schema, p_table);
    RETURN pgdedup.check_source(p_schema, p_table, p_key, p_key_type, p_columns, p_collection);
END $$;

-- Whether p_schema.p_table has a column p_column (false when the table is gone).
CREATE FUNCTION pgdedup.has_column(p_schema text, p_table text, p_column text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = pgdedup.relation_of(p_schema, p_table)
                   AND a.attname = p_column AND a.attnum > 0 AND NOT a.attisdropped)
$$;

-- guard_source for a collection's source as recorded: its key, text columns and partition
-- column, and the marking column p_mark if the table has it (the marks are read and written
-- through its type's casts). p_text false (unmark, which reads no text): the marking column and
-- the key if it still exists, whatever its type. p_lock false: check_source alone (a marking
-- column about to be added: ALTER TABLE takes the table's ACCESS EXCLUSIVE lock, and holding
-- ACCESS SHARE before that, two runs could deadlock; the caller checks again once it is added).
CREATE FUNCTION pgdedup.guard_collection_source(p_collection text, p_mark text DEFAULT NULL, p_text boolean DEFAULT true,
                                                p_lock boolean DEFAULT true) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    key text;
    columns text[];
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    IF p_lock THEN  -- first: which columns exist is read under the lock (a change committed while
        PERFORM pgdedup.lock_source(c.source_schema, c.source_table);  -- it waited is seen)
    END IF;
    columns := CASE WHEN p_text THEN array_remove(c.text_columns || c.partition_by, NULL) ELSE '{}' END;
    IF p_mark IS NOT NULL AND pgdedup.has_column(c.source_schema, c.source_table, p_mark) THEN
        columns := columns || p_mark;
    END IF;
    key := CASE WHEN p_text OR pgdedup.has_column(c.source_schema, c.source_table, c.key_column) THEN c.key_column END;
    PERFORM pgdedup.check_source(c.source_schema, c.source_table, key, CASE WHEN p_text THEN c.key_type END,
                                 columns, c.name);
END $$;

-- The guard of a run that marks column p_column: under the lock if the column exists; if it is
-- to be added, checked without (prepare_mark_column checks again once it holds ALTER's lock).
CREATE FUNCTION pgdedup.guard_marking(p_collection text, p_column text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.guard_collection_source(p_collection, p_column, true,
                                            pgdedup.has_column(c.source_schema, c.source_table, p_column));
END $$;

ALTER FUNCTION pgdedup.find_duplicates(text, double precision, text, integer, text)
    RENAME TO find_duplicates_unchecked;
CREATE FUNCTION pgdedup.find_duplicates(p_collection text, p_threshold double precision DEFAULT NULL,
                                        p_keep_order text DEFAULT NULL, p_max_bucket integer DEFAULT 100,
                                        p_verify text DEFAULT 'estimate')
RETURNS TABLE (rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pgdedup.guard_collection_source(p_collection);
    RETURN QUERY SELECT * FROM pgdedup.find_duplicates_unchecked(p_collection, p_threshold, p_keep_order,
                                                                  p_max_bucket, p_verify);
END $$;

ALTER FUNCTION pgdedup.mark_duplicates(text, double precision, text, text, integer, text)
    RENAME TO mark_duplicates_unchecked;
CREATE FUNCTION pgdedup.mark_duplicates(p_collection text, p_threshold double precision DEFAULT NULL,
                                        p_keep_order text DEFAULT NULL, p_column text DEFAULT 'duplicate_of',
                                        p_max_bucket integer DEFAULT 100, p_verify text DEFAULT 'estimate')
RETURNS TABLE (rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pgdedup.guard_marking(p_collection, p_column);
    RETURN QUERY SELECT * FROM pgdedup.mark_duplicates_unchecked(p_collection, p_threshold, p_keep_order, p_column,
                                                                  p_max_bucket, p_verify);
END $$;

ALTER FUNCTION pgdedup.update_duplicates(text, boolean, double precision, text, text, integer, boolean, text)
    RENAME TO update_duplicates_unchecked;
CREATE FUNCTION pgdedup.update_duplicates(p_collection text, p_alter boolean DEFAULT true,
                                          p_threshold double precision DEFAULT NULL, p_keep_order text DEFAULT NULL,
                                          p_column text DEFAULT 'duplicate_of', p_max_bucket integer DEFAULT 100,
                                          p_full boolean DEFAULT false, p_verify text DEFAULT 'estimate')
RETURNS TABLE (kind text, rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_alter THEN
        PERFORM pgdedup.guard_marking(p_collection, p_column);
    ELSE
        PERFORM pgdedup.guard_collection_source(p_collection);
    END IF;
    RETURN QUERY SELECT * FROM pgdedup.update_duplicates_unchecked(p_collection, p_alter, p_threshold, p_keep_order,
                                                                    p_column, p_max_bucket, p_full, p_verify);
END $$;

ALTER FUNCTION pgdedup.prepare_mark_column(text, text) RENAME TO prepare_mark_column_unchecked;
CREATE FUNCTION pgdedup.prepare_mark_column(p_collection text, p_column text DEFAULT 'duplicate_of') RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    added boolean;
    result text;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    added := NOT pgdedup.has_column(c.source_schema, c.source_table, p_column);
    PERFORM pgdedup.guard_marking(p_collection, p_column);
    result := pgdedup.prepare_mark_column_unchecked(p_collection, p_column);
    IF added THEN  -- added under ALTER TABLE's ACCESS EXCLUSIVE lock, held to the commit: check under it
        PERFORM pgdedup.guard_collection_source(p_collection, p_column, true, false);
    END IF;
    RETURN result;
END $$;

-- unmark reads the marking column and, for a column made again, the key (any type its owner
-- may not make); a source that is gone has nothing to clear (unmark then only forgets the
-- stored marks, as drop_collection needs)
ALTER FUNCTION pgdedup.unmark(text) RENAME TO unmark_unchecked;
CREATE FUNCTION pgdedup.unmark(p_collection text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    IF pgdedup.relation_of(c.source_schema, c.source_table) IS NOT NULL THEN
        PERFORM pgdedup.guard_collection_source(p_collection, c.mark_column, false);
    END IF;
    RETURN pgdedup.unmark_unchecked(p_collection);
END $$;

SELECT pgdedup.pin_search_paths();
