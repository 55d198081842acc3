-- pgdedup schema, version 3: safe on production tables.
-- Applied by migration 0003. Released files are never edited: a change is a new file + migration.
--
-- * every function runs with search_path = pg_catalog, pg_temp (no object of another schema can
--   stand in for a built-in one; pgdedup's own objects are schema-qualified);
-- * errors carry pgdedup's own SQLSTATEs (class PD, see docs/security.md);
-- * every parameter is checked before anything is written;
-- * writers take the collection's lock first and fail at once, naming the holder, when it is taken;
-- * the marking column is recorded per collection; pgdedup writes no other column of a source table;
-- * stored names and types are never trusted as SQL: identifiers via %I, key types via an allow-list;
-- * row-level security on pgdedup's tables: a role that is not their owner sees a collection only
--   when it may SELECT the collection's source table (and no row-level policy filters that table).
-- Function signatures of revision 2 are kept (CREATE OR REPLACE), so the downgrade restores them.

ALTER TABLE pgdedup.collections ADD COLUMN mark_column text;  -- the source column pgdedup marks
COMMENT ON COLUMN pgdedup.collections.mark_column IS
    'the column of the source table that mark_duplicates writes; pgdedup writes no other column';

-- SQLSTATEs: PD001 no such collection, PD002 no such row, PD003 bad argument, PD005 busy (a lock
-- is held by someone else), PD006 refused as unsafe; PD004 is kept for stale results.

-- The key type of a collection as SQL, from an allow-list: a type name read from a table is
-- never spliced into SQL as it is.
CREATE FUNCTION pgdedup.key_type_sql(p_key_type text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF p_key_type IN ('smallint', 'integer', 'bigint', 'uuid', 'text', 'character varying') THEN
        RETURN p_key_type;
    END IF;
    RAISE EXCEPTION 'unsupported key type "%" recorded for a collection', p_key_type USING ERRCODE = 'PD006';
END $$;

-- Check the arguments the dedupe functions share; raise PD003 on the first bad one.
-- NULL threshold means "the collection's own".
CREATE FUNCTION pgdedup.check_args(p_threshold double precision, p_max_bucket integer DEFAULT 100,
                                   p_verify text DEFAULT 'estimate', p_limit integer DEFAULT 1) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF p_threshold IS NOT NULL AND NOT (p_threshold > 0 AND p_threshold <= 1) THEN  -- NaN fails too
        RAISE EXCEPTION 'threshold must be in (0, 1], not %', p_threshold USING ERRCODE = 'PD003';
    END IF;
    IF p_max_bucket IS NULL OR p_max_bucket < 1 THEN
        RAISE EXCEPTION 'max_bucket must be a positive integer, not %', coalesce(p_max_bucket::text, 'NULL')
            USING ERRCODE = 'PD003';
    END IF;
    IF p_verify IS NULL OR p_verify NOT IN ('estimate', 'exact') THEN
        RAISE EXCEPTION 'verify must be estimate or exact, not %', coalesce(p_verify, 'NULL') USING ERRCODE = 'PD003';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'limit must be a positive integer, not %', coalesce(p_limit::text, 'NULL')
            USING ERRCODE = 'PD003';
    END IF;
END $$;

-- May the current role read this source table through pgdedup? It must be allowed to SELECT
-- it, and no row-level policy may filter the table for it (pgdedup's results cover every row,
-- so it cannot answer for a role that sees only some of them).
CREATE FUNCTION pgdedup.may_read_source(p_schema text, p_table text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(has_table_privilege(c.oid, 'SELECT')
                    AND (NOT c.relrowsecurity
                         OR (pg_has_role(c.relowner, 'USAGE') AND NOT c.relforcerowsecurity)
                         OR (SELECT r.rolbypassrls FROM pg_roles r WHERE r.rolname = current_user)), false)
    FROM (SELECT to_regclass(format('%I.%I', p_schema, p_table)) AS oid) t
    LEFT JOIN pg_class c ON c.oid = t.oid
$$;

-- The lock a writer takes before its first write (a transaction lock, or with p_session a
-- session lock that the caller releases). Held by someone else: fail at once, naming the holder.
CREATE FUNCTION pgdedup.lock_collection(p_collection_id integer, p_session boolean DEFAULT false) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    holder text;
    got boolean;
BEGIN
    IF p_session THEN
        got := pg_try_advisory_lock(1885824100, p_collection_id);
    ELSE
        got := pg_try_advisory_xact_lock(1885824100, p_collection_id);
    END IF;
    IF got THEN
        RETURN;
    END IF;
    SELECT format('%s (pid %s, since %s)', coalesce(nullif(a.application_name, ''), 'a session'), l.pid,
                  to_char(coalesce(a.xact_start, a.backend_start), 'YYYY-MM-DD HH24:MI:SS'))
    INTO holder
    FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.classid = 1885824100 AND l.objid = p_collection_id
      AND l.objsubid = 2 AND l.granted
    LIMIT 1;
    RAISE EXCEPTION 'collection "%" is busy: % is working on it; try again when it has finished',
        (SELECT c.name FROM pgdedup.collections c WHERE c.collection_id = p_collection_id),
        coalesce(holder, 'another session') USING ERRCODE = 'PD005';
END $$;

-- Raise unless the backend p_pid holds the collection's lock: a worker process writes only
-- while the run that started it is alive and holds the lock.
CREATE FUNCTION pgdedup.assert_locked_by(p_collection_id integer, p_pid integer) RETURNS void
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_locks l
                   WHERE l.locktype = 'advisory' AND l.classid = 1885824100 AND l.objid = p_collection_id
                     AND l.objsubid = 2 AND l.granted AND l.pid = p_pid) THEN
        RAISE EXCEPTION 'the run that started this worker no longer holds the collection''s lock; stopping'
            USING ERRCODE = 'PD005';
    END IF;
END $$;

-- The id of a collection by name (only collections the caller may read are visible).
CREATE OR REPLACE FUNCTION pgdedup.collection_id(p_name text) RETURNS integer
LANGUAGE plpgsql STABLE AS $$
DECLARE
    cid integer;
BEGIN
    SELECT c.collection_id INTO cid FROM pgdedup.collections c WHERE c.name = p_name;
    IF cid IS NULL THEN
        RAISE EXCEPTION 'no collection named "%"; run pgdedup index first', p_name USING ERRCODE = 'PD001';
    END IF;
    RETURN cid;
END $$;

-- Edges: as in revision 2, with every argument checked.
CREATE OR REPLACE FUNCTION pgdedup.edges(p_collection_id integer, p_threshold double precision DEFAULT NULL,
                                         p_max_bucket integer DEFAULT 100, p_verify text DEFAULT 'estimate',
                                         p_ranked boolean DEFAULT false)
RETURNS TABLE (row_a bigint, row_b bigint, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    t double precision := coalesce(p_threshold,
        (SELECT c.threshold FROM pgdedup.collections c WHERE c.collection_id = p_collection_id));
BEGIN
    PERFORM pgdedup.check_args(p_threshold, p_max_bucket, p_verify);
    IF p_verify = 'estimate' THEN
        RETURN QUERY SELECT * FROM pgdedup.verified_pairs(p_collection_id, t, p_max_bucket, p_ranked);
    ELSE
        RETURN QUERY SELECT e.row_a, e.row_b, e.similarity FROM pgdedup.exact_pairs e
                     WHERE e.collection_id = p_collection_id AND e.similarity >= t;
    END IF;
END $$;

-- Rows similar to a signature: as in revision 2, with threshold and limit checked.
CREATE OR REPLACE FUNCTION pgdedup.similar_to(p_collection text, p_signature integer[], p_buckets bigint[],
                                              p_threshold double precision DEFAULT NULL, p_limit integer DEFAULT 10,
                                              p_exclude text DEFAULT NULL)
RETURNS TABLE (row_key text, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    cid integer := pgdedup.collection_id(p_collection);
    t double precision;
BEGIN
    PERFORM pgdedup.check_args(p_threshold, 100, 'estimate', p_limit);
    SELECT coalesce(p_threshold, c.threshold) INTO t FROM pgdedup.collections c WHERE c.collection_id = cid;
    RETURN QUERY
    WITH hits AS (
        SELECT DISTINCT b.row_id
        FROM unnest(p_buckets) WITH ORDINALITY AS u(bucket, band)
        JOIN pgdedup.band_keys b ON b.collection_id = cid AND b.band = u.band - 1 AND b.bucket = u.bucket
    )
    SELECT s.row_key, pgdedup.similarity(s.signature, p_signature) AS sim
    FROM hits h
    JOIN pgdedup.signatures s ON s.collection_id = cid AND s.row_id = h.row_id
    WHERE s.row_key IS DISTINCT FROM p_exclude
      AND pgdedup.similarity(s.signature, p_signature) >= t
    ORDER BY sim DESC, s.row_key
    LIMIT p_limit;
END $$;

-- Rows like the row with key p_key: as in revision 2, with its own SQLSTATE for a missing row.
CREATE OR REPLACE FUNCTION pgdedup.similar(p_collection text, p_key text, p_threshold double precision DEFAULT NULL,
                                           p_limit integer DEFAULT 10)
RETURNS TABLE (row_key text, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    sig integer[];
    bks bigint[];
BEGIN
    PERFORM pgdedup.check_args(p_threshold, 100, 'estimate', p_limit);
    SELECT s.signature, s.buckets INTO sig, bks FROM pgdedup.signatures s
    WHERE s.collection_id = pgdedup.collection_id(p_collection) AND s.row_key = p_key;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'collection "%" has no row with key "%"', p_collection, p_key USING ERRCODE = 'PD002';
    END IF;
    RETURN QUERY SELECT * FROM pgdedup.similar_to(p_collection, sig, bks, p_threshold, p_limit, p_key);
END $$;

-- find_duplicates stays as in revision 2: it writes nothing persistent before edges() has
-- checked its arguments, and it waits for the collection's lock (mark_duplicates and the CLI take
-- it first with lock_collection, which fails at once and names the holder).

-- The non-invasive view: as in revision 2, with the key type from the allow-list, and (on
-- PostgreSQL 15+) security_invoker, so the view reads the source with the reader's privileges.
CREATE OR REPLACE FUNCTION pgdedup.create_duplicates_view(p_collection text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    view_name text;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    view_name := c.name || '_duplicates';
    EXECUTE format(
        'CREATE OR REPLACE VIEW pgdedup.%I %s AS
         SELECT s.*, d.duplicate_of::%s AS duplicate_of, d.similarity AS duplicate_similarity
         FROM %I.%I s LEFT JOIN pgdedup.duplicates d ON d.collection_id = %s AND d.row_key = s.%I::text',
        view_name, CASE WHEN current_setting('server_version_num')::int >= 150000
                        THEN 'WITH (security_invoker = true)' ELSE '' END,
        pgdedup.key_type_sql(c.key_type), c.source_schema, c.source_table, c.collection_id, c.key_column);
    RETURN format('pgdedup.%I', view_name);
END $$;

-- Make sure p_column of the collection's source table may be marked, adding it if absent.
-- A column may be marked only when it is the one recorded for the collection, or a new one
-- pgdedup adds now, or an existing empty (all NULL) column of the key's type that is neither
-- the key nor a text column, nor marked by another collection; it is then recorded.
-- Adding the column needs a brief ACCESS EXCLUSIVE lock on the table: it waits at most
-- lock_timeout (5 s unless the session set one) and then fails with PD005 instead of queueing
-- every later query behind it. Call it in its own transaction (the CLI does) so that lock is
-- released at once; mark_duplicates calls it too. Returns the qualified column name.
CREATE FUNCTION pgdedup.prepare_mark_column(p_collection text, p_column text DEFAULT 'duplicate_of') RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    rel regclass;
    kind "char";
    found_type text;
    generated "char";
    target text;
    other text;
    has_values boolean;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.lock_collection(c.collection_id);
    target := format('%I.%I.%I', c.source_schema, c.source_table, p_column);
    IF p_column IS NULL OR p_column = '' THEN
        RAISE EXCEPTION 'the marking column needs a name' USING ERRCODE = 'PD003';
    END IF;
    rel := to_regclass(format('%I.%I', c.source_schema, c.source_table));
    IF rel IS NULL THEN
        RAISE EXCEPTION 'the source table %.% of collection "%" does not exist any more',
            c.source_schema, c.source_table, c.name USING ERRCODE = 'PD006';
    END IF;
    SELECT relkind INTO kind FROM pg_class WHERE oid = rel;
    IF kind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '%.% is not a table, so pgdedup cannot mark it in place; use the non-invasive mode (--no-alter / find_duplicates)',
            c.source_schema, c.source_table USING ERRCODE = 'PD006';
    END IF;
    IF c.mark_column IS NOT NULL AND c.mark_column <> p_column THEN
        RAISE EXCEPTION 'collection "%" marks column "%"; pgdedup writes no other column of %.%',
            c.name, c.mark_column, c.source_schema, c.source_table USING ERRCODE = 'PD006';
    END IF;
    IF p_column = c.key_column OR p_column = ANY (c.text_columns) THEN
        RAISE EXCEPTION 'refusing to mark column "%": it is the % of collection "%"', p_column,
            CASE WHEN p_column = c.key_column THEN 'key' ELSE 'text' END, c.name USING ERRCODE = 'PD006';
    END IF;
    SELECT o.name INTO other FROM pgdedup.collections o
    WHERE o.collection_id <> c.collection_id AND o.source_schema = c.source_schema
      AND o.source_table = c.source_table AND o.mark_column = p_column;
    IF other IS NOT NULL THEN
        RAISE EXCEPTION 'column % is marked by collection "%"', target, other USING ERRCODE = 'PD006';
    END IF;
    SELECT a.atttypid::regtype::text, a.attgenerated INTO found_type, generated FROM pg_attribute a
    WHERE a.attrelid = rel AND a.attname = p_column AND a.attnum > 0 AND NOT a.attisdropped;
    IF found_type IS NULL THEN
        IF current_setting('lock_timeout') IN ('0', '') THEN
            PERFORM set_config('lock_timeout', '5s', true);
        END IF;
        BEGIN
            EXECUTE format('ALTER TABLE %I.%I ADD COLUMN %I %s', c.source_schema, c.source_table, p_column,
                           pgdedup.key_type_sql(c.key_type));
        EXCEPTION WHEN lock_not_available THEN
            RAISE EXCEPTION 'could not lock %.% to add column "%" within %: other transactions are using the table; try again later or add the column yourself (type %)',
                c.source_schema, c.source_table, p_column, current_setting('lock_timeout'), c.key_type
                USING ERRCODE = 'PD005';
        END;
    ELSIF c.mark_column IS DISTINCT FROM p_column THEN
        IF found_type <> c.key_type OR generated <> '' THEN
            RAISE EXCEPTION 'refusing to mark column %: marks are keys of type %, it is % %', target, c.key_type,
                CASE WHEN generated <> '' THEN 'a generated column of type' ELSE 'of type' END, found_type
                USING ERRCODE = 'PD006';
        END IF;
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.%I WHERE %I IS NOT NULL)',
                       c.source_schema, c.source_table, p_column) INTO has_values;
        IF has_values THEN
            RAISE EXCEPTION 'refusing to mark column %: it holds values pgdedup did not write (pgdedup marks only a column it adds, or an empty one of the key''s type added for it)',
                target USING ERRCODE = 'PD006';
        END IF;
    END IF;
    UPDATE pgdedup.collections SET mark_column = p_column WHERE collection_id = c.collection_id;
    RETURN target;
END $$;

-- Mark duplicates in place: as in revision 2, but arguments and keep order are checked, the
-- lock is taken and the column vetted by prepare_mark_column before anything is written.
CREATE OR REPLACE FUNCTION pgdedup.mark_duplicates(p_collection text, p_threshold double precision DEFAULT NULL,
                                                   p_keep_order text DEFAULT NULL, p_column text DEFAULT 'duplicate_of',
                                                   p_max_bucket integer DEFAULT 100, p_verify text DEFAULT 'estimate')
RETURNS TABLE (rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    c pgdedup.collections;
    result record;
BEGIN
    PERFORM pgdedup.check_args(p_threshold, p_max_bucket, p_verify);
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.keep_order_sql(c.collection_id, p_keep_order);
    PERFORM pgdedup.prepare_mark_column(p_collection, p_column);
    SELECT * INTO result FROM pgdedup.find_duplicates(p_collection, p_threshold, p_keep_order, p_max_bucket, p_verify);
    EXECUTE format(
        'UPDATE %1$I.%2$I s SET %3$I = NULL
         WHERE s.%3$I IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM pgdedup.duplicates d WHERE d.collection_id = $1 AND d.row_key = s.%4$I::text)',
        c.source_schema, c.source_table, p_column, c.key_column) USING c.collection_id;
    EXECUTE format(
        'UPDATE %1$I.%2$I s SET %3$I = d.duplicate_of::%5$s
         FROM pgdedup.duplicates d
         WHERE d.collection_id = $1 AND d.row_key = s.%4$I::text AND s.%3$I IS DISTINCT FROM d.duplicate_of::%5$s',
        c.source_schema, c.source_table, p_column, c.key_column, pgdedup.key_type_sql(c.key_type)) USING c.collection_id;
    RETURN QUERY SELECT result.rows_examined, result.duplicates, result.groups;
END $$;

-- Pin search_path in every function, and keep find_duplicates' DROP ... IF EXISTS quiet.
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p WHERE p.pronamespace = 'pgdedup'::regnamespace LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, pg_temp', f);
    END LOOP;
END $$;
ALTER FUNCTION pgdedup.find_duplicates(text, double precision, text, integer, text) SET client_min_messages = warning;

-- Access: nothing for PUBLIC; a role that is not the owner of pgdedup's tables sees the rows of
-- a collection only when may_read_source says it may read the collection's source.
REVOKE ALL ON ALL TABLES IN SCHEMA pgdedup FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA pgdedup FROM PUBLIC;
ALTER TABLE pgdedup.collections ENABLE ROW LEVEL SECURITY;
CREATE POLICY readable_source ON pgdedup.collections
    USING (pgdedup.may_read_source(source_schema, source_table));
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['signatures', 'band_keys', 'band_keys_staged', 'duplicates', 'exact_pairs', 'runs'] LOOP
        EXECUTE format('ALTER TABLE pgdedup.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY readable_collection ON pgdedup.%I
                        USING (collection_id IN (SELECT c.collection_id FROM pgdedup.collections c))', t);
    END LOOP;
    IF current_setting('server_version_num')::int >= 150000 THEN
        ALTER VIEW pgdedup.status SET (security_invoker = true);
    END IF;
END $$;
