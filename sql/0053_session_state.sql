-- pgdedup schema, version 53: what pgdedup finds on, and leaves in, a caller's session.
--
-- * Temp relations another role left on the session were trusted. A session may serve several
--   roles one after another (a pool without DISCARD ALL, SET ROLE), and a dedupe reads temp
--   tables by name: walk() made pg_temp.pgdedup_fixed only IF NOT EXISTS, and the state an auto
--   run keeps between its calls (pgdedup_estimated_for, pgdedup_ranked_for, pgdedup_resume and
--   the closure's tables) was recognised by its content. Another role's temp VIEW of such a name
--   ran its functions with the rights of whoever deduped next (a superuser, often), and a view
--   can compute the very transaction_timestamp() its marker is compared with. Now
--   guard_temp_tables refuses (PD006) to work on a session where a pg_temp relation named
--   pgdedup_* (but the COPY staging tables, which pgdedup's Python side makes and drops itself)
--   is anything but an ordinary table, index or sequence of the current role: only that role
--   can have made it. lock_collection calls it, which every dedupe, mark, unmark, track and
--   index takes before anything else, and so do the readers of that state that may be called
--   without the lock (reusing, rank_rows, closure_state).
-- * write_marks and unmark set pgdedup.marking (which keeps their writes out of the tracking
--   queue) to off afterwards instead of back to what the caller had: a role that had set it on
--   for its own writes (docs/security.md) had the rest of its transaction's writes queued.
--
-- Applied by migration 0053. Released files are never edited: a change is a new file + migration.

-- Raise PD006 if this session has a temp relation named pgdedup_* (but pgdedup_copy_*) that is
-- not an ordinary table, index or sequence owned by the current role.
CREATE FUNCTION pgdedup.guard_temp_tables() RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    bad record;
BEGIN
    SELECT c.relname, c.relowner::regrole AS owner,
           CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view'
                          WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'i' THEN 'index'
                          WHEN 'S' THEN 'sequence' ELSE 'relation' END AS kind INTO bad
    FROM pg_class c
    WHERE c.relnamespace = pg_my_temp_schema() AND starts_with(c.relname, 'pgdedup_')
      AND NOT starts_with(c.relname, 'pgdedup_copy_')
      AND (c.relowner <> (SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user) OR c.relkind NOT IN ('r', 'i', 'S'))
    ORDER BY c.relname
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'pgdedup will not work on this session: pg_temp.% is a % of role % that pgdedup did not make as role % (another role used the session before: a pool without DISCARD ALL, SET ROLE); end the session or run DISCARD TEMP',
            bad.relname, bad.kind, bad.owner, current_user USING ERRCODE = 'PD006';
    END IF;
END $$;

-- As in revision 3, refusing a session with another role's pgdedup_* temp relations first.
CREATE OR REPLACE FUNCTION pgdedup.lock_collection(p_collection_id integer, p_session boolean DEFAULT false) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    holder text;
    got boolean;
BEGIN
    PERFORM pgdedup.guard_temp_tables();
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

-- As in revision 40, with the same guard.
CREATE OR REPLACE FUNCTION pgdedup.reusing(p_collection_id integer, p_max_bucket integer) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    PERFORM pgdedup.guard_temp_tables();
    IF current_setting('pgdedup.reuse_estimated', true) IS DISTINCT FROM 'on'
       OR to_regclass('pg_temp.pgdedup_estimated_for') IS NULL THEN
        RETURN false;
    END IF;
    RETURN EXISTS (SELECT 1 FROM pg_temp.pgdedup_estimated_for f
                   WHERE f.collection_id = p_collection_id AND f.max_bucket = p_max_bucket
                     AND f.started = transaction_timestamp());
END $$;

-- As in revision 40, with the same guard.
CREATE OR REPLACE FUNCTION pgdedup.rank_rows(p_collection_id integer, p_keep_order text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    ord text := pgdedup.keep_order_sql(p_collection_id, p_keep_order);
BEGIN
    PERFORM pgdedup.guard_temp_tables();
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = p_collection_id;
    -- (pgdedup_estimated_for exists from the ranking of an auto run's candidates to the end of that run)
    IF current_setting('pgdedup.reuse_estimated', true) = 'on' AND to_regclass('pg_temp.pgdedup_ranked_for') IS NOT NULL
       AND to_regclass('pg_temp.pgdedup_estimated_for') IS NOT NULL
       AND to_regclass('pg_temp.pgdedup_rows') IS NOT NULL AND to_regclass('pg_temp.pgdedup_rank') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pg_temp.pgdedup_ranked_for f
                   WHERE f.collection_id = p_collection_id AND f.keep_order = ord AND f.index_version = c.index_version
                     AND f.rows_table = 'pg_temp.pgdedup_rows'::regclass
                     AND f.rank_table = 'pg_temp.pgdedup_rank'::regclass)
           AND EXISTS (SELECT 1 FROM pg_temp.pgdedup_estimated_for e WHERE e.started = transaction_timestamp()) THEN
            RETURN ord;
        END IF;
    END IF;
    DROP TABLE IF EXISTS pg_temp.pgdedup_rows, pg_temp.pgdedup_rank, pg_temp.pgdedup_ranked_for;
    EXECUTE format(
        'CREATE TEMP TABLE pgdedup_rows ON COMMIT DROP AS
         SELECT g.row_id, g.row_key, g.text_hash, row_number() OVER (ORDER BY %s) AS rnk
         FROM %I.%I s JOIN pgdedup.signatures g ON g.collection_id = $1 AND g.row_key = s.%I::text
         WHERE g.feature_count > 0',
        ord, c.source_schema, c.source_table, c.key_column) USING p_collection_id;
    CREATE TEMP TABLE pgdedup_rank ON COMMIT DROP AS
        SELECT text_hash, min(rnk) AS rnk FROM pgdedup_rows GROUP BY text_hash;
    ANALYZE pgdedup_rank;
    CREATE TEMP TABLE pgdedup_ranked_for ON COMMIT DROP AS
        SELECT p_collection_id AS collection_id, ord AS keep_order, c.index_version,
               'pg_temp.pgdedup_rows'::regclass AS rows_table, 'pg_temp.pgdedup_rank'::regclass AS rank_table;
    RETURN ord;
END $$;

-- As in revision 40, with the same guard.
CREATE OR REPLACE FUNCTION pgdedup.closure_state() RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    tables oid[] := ARRAY[to_regclass('pg_temp.pgdedup_redone'), to_regclass('pg_temp.pgdedup_lost'),
                          to_regclass('pg_temp.pgdedup_touched'), to_regclass('pg_temp.pgdedup_members'),
                          to_regclass('pg_temp.pgdedup_leaders'), to_regclass('pg_temp.pgdedup_was'),
                          to_regclass('pg_temp.pgdedup_moved'), to_regclass('pg_temp.pgdedup_seeds'),
                          to_regclass('pg_temp.pgdedup_region'), to_regclass('pg_temp.pgdedup_frontier'),
                          to_regclass('pg_temp.pgdedup_edges'), to_regclass('pg_temp.pgdedup_step_pairs')]::oid[];
BEGIN
    PERFORM pgdedup.guard_temp_tables();
    IF array_position(tables, NULL) IS NOT NULL THEN
        RETURN NULL;
    END IF;
    RETURN transaction_timestamp()::text || ';'
        || (SELECT string_agg(format('%s:%s/%s/%s', t, pg_stat_get_xact_tuples_inserted(t),
                                     pg_stat_get_xact_tuples_updated(t), pg_stat_get_xact_tuples_deleted(t)),
                              ',' ORDER BY n)
            FROM unnest(tables) WITH ORDINALITY AS u(t, n))
        || ';' || (SELECT count(*) FROM pg_temp.pgdedup_edges);
END $$;

-- As in revision 6 (write_marks' body, write_marks_unlocked since revision 28), pgdedup.marking
-- put back as the caller had it.
CREATE OR REPLACE FUNCTION pgdedup.write_marks_unlocked(p_collection_id integer, p_only_redone boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    only_redone text := '';
    callers text := current_setting('pgdedup.marking', true);
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = p_collection_id;
    IF p_only_redone THEN
        only_redone := format(' AND s.%I IN (SELECT k.row_key::%s FROM pg_temp.pgdedup_redone k)',
                              c.key_column, pgdedup.key_type_sql(c.key_type));
    END IF;
    PERFORM set_config('pgdedup.marking', 'on', true);
    EXECUTE format(
        'UPDATE %1$I.%2$I s SET %3$I = NULL
         WHERE s.%3$I IS NOT NULL AND NOT EXISTS (
             SELECT 1 FROM pgdedup.duplicates d
             WHERE d.collection_id = $1 AND d.target = ''column'' AND d.row_key = s.%4$I::text)',
        c.source_schema, c.source_table, c.mark_column, c.key_column) || only_redone USING c.collection_id;
    EXECUTE format(
        'UPDATE %1$I.%2$I s SET %3$I = d.duplicate_of::%5$s
         FROM pgdedup.duplicates d
         WHERE d.collection_id = $1 AND d.target = ''column'' AND d.row_key = s.%4$I::text
           AND s.%3$I IS DISTINCT FROM d.duplicate_of::%5$s',
        c.source_schema, c.source_table, c.mark_column, c.key_column, pgdedup.key_type_sql(c.key_type))
        || only_redone USING c.collection_id;
    PERFORM set_config('pgdedup.marking', coalesce(callers, ''), true);
END $$;

-- As in revision 22 (unmark's body, unmark_unchecked since revision 24), pgdedup.marking put
-- back as the caller had it.
CREATE OR REPLACE FUNCTION pgdedup.unmark_unchecked(p_collection text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    rel oid;
    attnum smallint;
    cleared bigint := 0;
    callers text := current_setting('pgdedup.marking', true);
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.lock_collection(c.collection_id);
    rel := pgdedup.relation_of(c.source_schema, c.source_table);
    SELECT a.attnum INTO attnum FROM pg_attribute a
    WHERE a.attrelid = rel AND a.attname = c.mark_column AND a.attnum > 0 AND NOT a.attisdropped;
    IF attnum IS NOT NULL THEN
        IF (rel IS DISTINCT FROM c.mark_relid OR attnum IS DISTINCT FROM c.mark_attnum)
           AND NOT pgdedup.holds_only_its_marks(c, c.mark_column) THEN
            RAISE EXCEPTION 'refusing to clear column %.%.%: it is not the column pgdedup marked (the table or the column was made again since) and it holds values pgdedup did not write; nothing was changed',
                c.source_schema, c.source_table, c.mark_column USING ERRCODE = 'PD006';
        END IF;
        PERFORM set_config('pgdedup.marking', 'on', true);
        EXECUTE format('UPDATE %I.%I SET %I = NULL WHERE %I IS NOT NULL',
                       c.source_schema, c.source_table, c.mark_column, c.mark_column);
        GET DIAGNOSTICS cleared = ROW_COUNT;
        PERFORM set_config('pgdedup.marking', coalesce(callers, ''), true);
    END IF;
    DELETE FROM pgdedup.duplicates WHERE collection_id = c.collection_id AND target = 'column';
    DELETE FROM pgdedup.results WHERE collection_id = c.collection_id AND target = 'column';
    RETURN cleared;
END $$;

SELECT pgdedup.pin_search_paths();
