-- pgdedup schema, version 4: results that belong to the index they came from, one result per
-- target (the in-place column, the non-invasive view), exact verification on the candidates
-- dedupe sees, drop and unmark.
-- Applied by migration 0004. Released files are never edited: a change is a new file + migration.

-- Bumped whenever a collection's signatures change (index runs that sign or forget rows, a
-- re-index): results computed at an older version are stale.
ALTER TABLE pgdedup.collections ADD COLUMN index_version bigint NOT NULL DEFAULT 0;

-- Each target keeps its own decision: 'view' (find_duplicates, the non-invasive view) and
-- 'column' (mark_duplicates: what the marking column holds).
ALTER TABLE pgdedup.duplicates ADD COLUMN target text NOT NULL DEFAULT 'view'
    CHECK (target IN ('view', 'column'));
ALTER TABLE pgdedup.duplicates DROP CONSTRAINT duplicates_pkey;
ALTER TABLE pgdedup.duplicates ADD PRIMARY KEY (collection_id, target, row_key);

-- Where each stored result came from: the index version and the parameters it was computed
-- with. target 'exact' describes pgdedup.exact_pairs (ranked: the candidates of a dedupe in keep
-- order, keep_order then the normalised ORDER BY; not ranked: the candidates of pairs()).
CREATE TABLE pgdedup.results (
    collection_id   integer NOT NULL REFERENCES pgdedup.collections ON DELETE CASCADE,
    target          text NOT NULL CHECK (target IN ('view', 'column', 'exact')),
    index_version   bigint NOT NULL,
    threshold       double precision NOT NULL,
    max_bucket      integer NOT NULL,
    ranked          boolean NOT NULL,
    keep_order      text,
    verify          text NOT NULL,
    computed_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (collection_id, target)
);
REVOKE ALL ON pgdedup.results FROM PUBLIC;
ALTER TABLE pgdedup.results ENABLE ROW LEVEL SECURITY;
CREATE POLICY readable_collection ON pgdedup.results
    USING (collection_id IN (SELECT c.collection_id FROM pgdedup.collections c));

-- Record (replace) where a target's result came from.
CREATE FUNCTION pgdedup.record_result(p_collection_id integer, p_target text, p_threshold double precision,
                                      p_max_bucket integer, p_ranked boolean, p_keep_order text, p_verify text)
RETURNS void
LANGUAGE sql AS $$
    INSERT INTO pgdedup.results (collection_id, target, index_version, threshold, max_bucket, ranked, keep_order, verify)
    SELECT p_collection_id, p_target, c.index_version, p_threshold, p_max_bucket, p_ranked, p_keep_order, p_verify
    FROM pgdedup.collections c WHERE c.collection_id = p_collection_id
    ON CONFLICT (collection_id, target) DO UPDATE
    SET index_version = excluded.index_version, threshold = excluded.threshold, max_bucket = excluded.max_bucket,
        ranked = excluded.ranked, keep_order = excluded.keep_order, verify = excluded.verify, computed_at = now()
$$;

-- Raise PD004 unless pgdedup.exact_pairs were computed from the current index for these
-- candidates (same ranking, max_bucket, and a threshold no higher than p_threshold).
CREATE FUNCTION pgdedup.check_exact_pairs(p_collection_id integer, p_threshold double precision,
                                          p_max_bucket integer, p_ranked boolean, p_keep_order text)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    r pgdedup.results;
    c pgdedup.collections;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = p_collection_id;
    SELECT * INTO r FROM pgdedup.results WHERE collection_id = p_collection_id AND target = 'exact';
    IF r.collection_id IS NULL OR r.index_version <> c.index_version OR r.max_bucket <> p_max_bucket
       OR r.ranked <> p_ranked OR r.keep_order IS DISTINCT FROM p_keep_order
       OR r.threshold > coalesce(p_threshold, c.threshold) THEN
        RAISE EXCEPTION 'the exact pairs of collection "%" are %; compute them with `pgdedup % % --verify exact%`',
            c.name, CASE WHEN r.collection_id IS NULL THEN 'missing'
                         WHEN r.index_version <> c.index_version THEN 'stale (the index changed since)'
                         ELSE 'for other parameters' END,
            CASE WHEN p_ranked THEN 'dedupe' ELSE 'pairs' END, c.name,
            CASE WHEN p_threshold IS NOT NULL THEN format(' --threshold %s', p_threshold) ELSE '' END
            USING ERRCODE = 'PD004';
    END IF;
END $$;

-- Every non-empty row of a collection ranked by the keep order (temp table pgdedup_rows), and
-- each text by its earliest row (pgdedup_rank, which candidate_pairs(p_ranked) reads).
-- Returns the normalised ORDER BY.
CREATE FUNCTION pgdedup.rank_rows(p_collection_id integer, p_keep_order text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    ord text := pgdedup.keep_order_sql(p_collection_id, p_keep_order);
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = p_collection_id;
    DROP TABLE IF EXISTS pg_temp.pgdedup_rows, pg_temp.pgdedup_rank;
    EXECUTE format(
        'CREATE TEMP TABLE pgdedup_rows ON COMMIT DROP AS
         SELECT g.row_id, g.row_key, g.text_hash, row_number() OVER (ORDER BY %s) AS rnk
         FROM %I.%I s JOIN pgdedup.signatures g ON g.collection_id = $1 AND g.row_key = s.%I::text
         WHERE g.feature_count > 0',
        ord, c.source_schema, c.source_table, c.key_column) USING p_collection_id;
    CREATE TEMP TABLE pgdedup_rank ON COMMIT DROP AS
        SELECT text_hash, min(rnk) AS rnk FROM pgdedup_rows GROUP BY text_hash;
    ANALYZE pgdedup_rank;
    RETURN ord;
END $$;

-- Decide duplicates into the temp table pgdedup_marks (row_key, duplicate_of, similarity): walk
-- rows in keep order; a row with an edge to an already kept row is a duplicate of the most
-- similar such row (ties: the earliest kept), otherwise it is kept. So every duplicate points at
-- a kept row with similarity >= the threshold, never at another duplicate. Arguments are checked
-- and the collection's lock taken (failing at once, naming the holder) before anything else.
-- Returns the normalised keep order.
CREATE FUNCTION pgdedup.decide(p_collection_id integer, p_threshold double precision, p_keep_order text,
                               p_max_bucket integer, p_verify text) RETURNS text
LANGUAGE plpgsql SET work_mem = '256MB' AS $$
#variable_conflict use_column
DECLARE
    cid integer := p_collection_id;
    ord text;
    r record;
    best record;
    seqscan text := current_setting('enable_seqscan');
BEGIN
    PERFORM pgdedup.check_args(p_threshold, p_max_bucket, p_verify);
    PERFORM pgdedup.keep_order_sql(cid, p_keep_order);
    PERFORM pgdedup.lock_collection(cid);
    ord := pgdedup.rank_rows(cid, p_keep_order);
    IF p_verify = 'exact' THEN
        PERFORM pgdedup.check_exact_pairs(cid, p_threshold, p_max_bucket, true, ord);
    END IF;
    DROP TABLE IF EXISTS pg_temp.pgdedup_edges, pg_temp.pgdedup_walk, pg_temp.pgdedup_kept, pg_temp.pgdedup_marks;
    -- text-level edges, both directions, plus a self edge for texts held by several rows
    CREATE TEMP TABLE pgdedup_edges ON COMMIT DROP AS
        SELECT sa.text_hash AS h1, sb.text_hash AS h2, v.similarity
        FROM pgdedup.edges(cid, p_threshold, p_max_bucket, p_verify, true) v
        JOIN pgdedup.signatures sa ON sa.collection_id = cid AND sa.row_id = v.row_a
        JOIN pgdedup.signatures sb ON sb.collection_id = cid AND sb.row_id = v.row_b;
    INSERT INTO pgdedup_edges SELECT h2, h1, similarity FROM pgdedup_edges;
    INSERT INTO pgdedup_edges
        SELECT text_hash, text_hash, 1.0 FROM pgdedup_rows GROUP BY text_hash HAVING count(*) > 1;
    CREATE INDEX ON pgdedup_edges (h1);
    ANALYZE pgdedup_edges;
    -- the walk: rows that have any edge, in keep order
    CREATE TEMP TABLE pgdedup_walk ON COMMIT DROP AS
        SELECT * FROM pgdedup_rows WHERE text_hash IN (SELECT h1 FROM pgdedup_edges);
    CREATE TEMP TABLE pgdedup_kept (text_hash bigint, row_id bigint, row_key text, rnk bigint) ON COMMIT DROP;
    CREATE INDEX ON pgdedup_kept (text_hash);
    CREATE TEMP TABLE pgdedup_marks (row_key text, duplicate_of text, similarity double precision) ON COMMIT DROP;
    -- The loop's two statements are planned once, while pgdedup_kept is still tiny; with
    -- sequential scans allowed that plan would scan the growing table on every row (quadratic).
    PERFORM set_config('enable_seqscan', 'off', true);
    FOR r IN SELECT * FROM pgdedup_walk ORDER BY rnk LOOP
        SELECT k.row_key, e.similarity INTO best
        FROM pgdedup_edges e JOIN pgdedup_kept k ON k.text_hash = e.h2
        WHERE e.h1 = r.text_hash
        ORDER BY e.similarity DESC, k.rnk
        LIMIT 1;
        IF FOUND THEN
            INSERT INTO pgdedup_marks VALUES (r.row_key, best.row_key, best.similarity);
        ELSE
            INSERT INTO pgdedup_kept VALUES (r.text_hash, r.row_id, r.row_key, r.rnk);
        END IF;
    END LOOP;
    PERFORM set_config('enable_seqscan', seqscan, true);
    RETURN ord;
END $$;

-- Store the decision in pgdedup_marks as target p_target of pgdedup.duplicates, record where it
-- came from and log the run. Returns (rows examined, duplicates, groups).
CREATE FUNCTION pgdedup.store_decision(p_collection_id integer, p_target text, p_threshold double precision,
                                       p_keep_order text, p_max_bucket integer, p_verify text, p_started timestamptz)
RETURNS TABLE (rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t double precision := coalesce(p_threshold,
        (SELECT c.threshold FROM pgdedup.collections c WHERE c.collection_id = p_collection_id));
BEGIN
    DELETE FROM pgdedup.duplicates d WHERE d.collection_id = p_collection_id AND d.target = p_target;
    INSERT INTO pgdedup.duplicates (collection_id, target, row_key, duplicate_of, similarity)
        SELECT p_collection_id, p_target, m.row_key, m.duplicate_of, m.similarity FROM pg_temp.pgdedup_marks m;
    PERFORM pgdedup.record_result(p_collection_id, p_target, t, p_max_bucket, true, p_keep_order, p_verify);
    RETURN QUERY
        WITH stats AS (
            SELECT (SELECT count(*) FROM pgdedup.signatures s WHERE s.collection_id = p_collection_id) AS rows_examined,
                   (SELECT count(*) FROM pg_temp.pgdedup_marks) AS duplicates,
                   (SELECT count(DISTINCT m.duplicate_of) FROM pg_temp.pgdedup_marks m) AS groups
        ), run AS (
            INSERT INTO pgdedup.runs (collection_id, kind, started_at, stats)
            SELECT p_collection_id, 'dedupe', p_started, jsonb_build_object(
                'rows_examined', st.rows_examined, 'duplicates', st.duplicates, 'groups', st.groups,
                'threshold', t, 'keep_order', p_keep_order, 'verify', p_verify, 'target', p_target,
                'seconds', extract(epoch FROM clock_timestamp() - p_started))
            FROM stats st
        )
        SELECT * FROM stats;
END $$;

-- Decide duplicates for the non-invasive mode (target 'view'): pgdedup.duplicates and the view.
CREATE OR REPLACE FUNCTION pgdedup.find_duplicates(p_collection text, p_threshold double precision DEFAULT NULL,
                                                   p_keep_order text DEFAULT NULL, p_max_bucket integer DEFAULT 100,
                                                   p_verify text DEFAULT 'estimate')
RETURNS TABLE (rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
DECLARE
    cid integer := pgdedup.collection_id(p_collection);
    started timestamptz := clock_timestamp();
    ord text := pgdedup.decide(cid, p_threshold, p_keep_order, p_max_bucket, p_verify);
BEGIN
    RETURN QUERY SELECT * FROM pgdedup.store_decision(cid, 'view', p_threshold, ord, p_max_bucket, p_verify, started);
END $$;

-- Mark duplicates in place (target 'column'): the column is vetted (and if absent added) by
-- prepare_mark_column, then set to the kept row's key for duplicates and NULL for every other
-- row. Only rows whose mark changes are written, so a rerun on unchanged data writes nothing.
CREATE OR REPLACE FUNCTION pgdedup.mark_duplicates(p_collection text, p_threshold double precision DEFAULT NULL,
                                                   p_keep_order text DEFAULT NULL, p_column text DEFAULT 'duplicate_of',
                                                   p_max_bucket integer DEFAULT 100, p_verify text DEFAULT 'estimate')
RETURNS TABLE (rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    c pgdedup.collections;
    started timestamptz := clock_timestamp();
    ord text;
BEGIN
    PERFORM pgdedup.check_args(p_threshold, p_max_bucket, p_verify);
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.keep_order_sql(c.collection_id, p_keep_order);
    PERFORM pgdedup.prepare_mark_column(p_collection, p_column);
    ord := pgdedup.decide(c.collection_id, p_threshold, p_keep_order, p_max_bucket, p_verify);
    RETURN QUERY SELECT * FROM pgdedup.store_decision(c.collection_id, 'column', p_threshold, ord, p_max_bucket,
                                                      p_verify, started);
    EXECUTE format(
        'UPDATE %1$I.%2$I s SET %3$I = NULL
         WHERE s.%3$I IS NOT NULL AND NOT EXISTS (
             SELECT 1 FROM pgdedup.duplicates d
             WHERE d.collection_id = $1 AND d.target = ''column'' AND d.row_key = s.%4$I::text)',
        c.source_schema, c.source_table, p_column, c.key_column) USING c.collection_id;
    EXECUTE format(
        'UPDATE %1$I.%2$I s SET %3$I = d.duplicate_of::%5$s
         FROM pgdedup.duplicates d
         WHERE d.collection_id = $1 AND d.target = ''column'' AND d.row_key = s.%4$I::text
           AND s.%3$I IS DISTINCT FROM d.duplicate_of::%5$s',
        c.source_schema, c.source_table, p_column, c.key_column, pgdedup.key_type_sql(c.key_type)) USING c.collection_id;
END $$;

-- Edges: as in revision 3; exact edges of pairs() (not ranked) must come from the current index.
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
        IF NOT p_ranked THEN  -- decide() checks the ranked ones against its keep order
            PERFORM pgdedup.check_exact_pairs(p_collection_id, p_threshold, p_max_bucket, false, NULL);
        END IF;
        RETURN QUERY SELECT e.row_a, e.row_b, e.similarity FROM pgdedup.exact_pairs e
                     WHERE e.collection_id = p_collection_id AND e.similarity >= t;
    END IF;
END $$;

-- Every pair at or above the threshold, as in revision 2, with the bucket cap as a parameter
-- (it was fixed at 100).
DROP FUNCTION pgdedup.pairs(text, double precision, text);
CREATE FUNCTION pgdedup.pairs(p_collection text, p_threshold double precision DEFAULT NULL,
                              p_verify text DEFAULT 'estimate', p_max_bucket integer DEFAULT 100)
RETURNS TABLE (key_a text, key_b text, similarity double precision)
LANGUAGE sql STABLE AS $$
    WITH c AS (SELECT pgdedup.collection_id(p_collection) AS id),
    members AS (
        SELECT r.row_id AS rep, s.row_id, s.row_key
        FROM c, pgdedup.representatives(c.id) r
        JOIN pgdedup.signatures s ON s.collection_id = (SELECT id FROM c) AND s.text_hash = r.text_hash
    ),
    near AS (
        SELECT ma.row_key AS ka, mb.row_key AS kb, v.similarity
        FROM c, pgdedup.edges(c.id, p_threshold, p_max_bucket, p_verify, false) v
        JOIN members ma ON ma.rep = v.row_a
        JOIN members mb ON mb.rep = v.row_b
    ),
    exact AS (
        SELECT a.row_key AS ka, b.row_key AS kb, 1.0::double precision
        FROM members a JOIN members b ON a.rep = b.rep AND a.row_id < b.row_id
    )
    SELECT least(ka, kb), greatest(ka, kb), similarity
    FROM (SELECT * FROM near UNION ALL SELECT * FROM exact) p
    ORDER BY 1, 2
$$;

-- The non-invasive view: the source rows with the 'view' decision. Source columns that share a
-- name with the view's own (duplicate_of, duplicate_similarity: e.g. the in-place marking
-- column) are left out, so both modes work in any order.
CREATE OR REPLACE FUNCTION pgdedup.create_duplicates_view(p_collection text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    view_name text;
    cols text;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    view_name := c.name || '_duplicates';
    IF octet_length(view_name) > 63 THEN
        RAISE EXCEPTION 'collection name "%" is too long for its view name (at most 52 bytes)', c.name
            USING ERRCODE = 'PD003';
    END IF;
    SELECT string_agg(format('s.%I', a.attname), ', ' ORDER BY a.attnum) INTO cols
    FROM pg_attribute a
    WHERE a.attrelid = format('%I.%I', c.source_schema, c.source_table)::regclass
      AND a.attnum > 0 AND NOT a.attisdropped AND a.attname NOT IN ('duplicate_of', 'duplicate_similarity');
    EXECUTE format('DROP VIEW IF EXISTS pgdedup.%I', view_name);
    EXECUTE format(
        'CREATE VIEW pgdedup.%I %s AS
         SELECT %s, d.duplicate_of::%s AS duplicate_of, d.similarity AS duplicate_similarity
         FROM %I.%I s LEFT JOIN pgdedup.duplicates d
           ON d.collection_id = %s AND d.target = ''view'' AND d.row_key = s.%I::text',
        view_name, CASE WHEN current_setting('server_version_num')::int >= 150000
                        THEN 'WITH (security_invoker = true)' ELSE '' END,
        cols, pgdedup.key_type_sql(c.key_type), c.source_schema, c.source_table, c.collection_id, c.key_column);
    RETURN format('pgdedup.%I', view_name);
END $$;

-- Clear the marking column of a collection (every mark set to NULL); the column stays, and stays
-- recorded. Returns the number of rows cleared.
CREATE FUNCTION pgdedup.unmark(p_collection text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    cleared bigint := 0;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.lock_collection(c.collection_id);
    IF c.mark_column IS NOT NULL AND to_regclass(format('%I.%I', c.source_schema, c.source_table)) IS NOT NULL THEN
        EXECUTE format('UPDATE %I.%I SET %I = NULL WHERE %I IS NOT NULL',
                       c.source_schema, c.source_table, c.mark_column, c.mark_column);
        GET DIAGNOSTICS cleared = ROW_COUNT;
    END IF;
    DELETE FROM pgdedup.duplicates WHERE collection_id = c.collection_id AND target = 'column';
    DELETE FROM pgdedup.results WHERE collection_id = c.collection_id AND target = 'column';
    RETURN cleared;
END $$;

-- Forget a collection: its signatures, band keys, results, runs and view. The source rows are
-- never touched; the marking column only with p_unmark (its marks cleared, the column kept).
-- Returns the number of signatures forgotten.
CREATE FUNCTION pgdedup.drop_collection(p_collection text, p_unmark boolean DEFAULT false) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    forgotten bigint;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.lock_collection(c.collection_id);
    IF p_unmark THEN
        PERFORM pgdedup.unmark(p_collection);
    END IF;
    IF octet_length(c.name || '_duplicates') <= 63 THEN
        EXECUTE format('DROP VIEW IF EXISTS pgdedup.%I', c.name || '_duplicates');
    END IF;
    DELETE FROM pgdedup.band_keys WHERE collection_id = c.collection_id;
    DELETE FROM pgdedup.band_keys_staged WHERE collection_id = c.collection_id;
    DELETE FROM pgdedup.signatures WHERE collection_id = c.collection_id;
    GET DIAGNOSTICS forgotten = ROW_COUNT;
    DELETE FROM pgdedup.collections WHERE collection_id = c.collection_id;  -- the rest cascades
    RETURN forgotten;
END $$;

-- One row per collection: as in revision 2, with the marking column, the marks it holds, and
-- whether stored results are stale. duplicates counts the non-invasive ('view') result.
CREATE OR REPLACE VIEW pgdedup.status AS
SELECT c.name, format('%I.%I', c.source_schema, c.source_table) AS source, c.key_column, c.text_columns,
       c.unit, c.ngram, c.num_perm, c.bands, c.rows_per_band, c.threshold, c.band_threshold, c.seed,
       c.rows_indexed,
       (SELECT count(*) FROM pgdedup.duplicates d WHERE d.collection_id = c.collection_id AND d.target = 'view') AS duplicates,
       c.indexed_at,
       (SELECT max(finished_at) FROM pgdedup.runs r WHERE r.collection_id = c.collection_id AND r.kind = 'dedupe') AS deduped_at,
       (SELECT r.stats FROM pgdedup.runs r WHERE r.collection_id = c.collection_id AND r.kind = 'index'
        ORDER BY r.finished_at DESC LIMIT 1) AS last_index,
       (SELECT r.stats FROM pgdedup.runs r WHERE r.collection_id = c.collection_id AND r.kind = 'dedupe'
        ORDER BY r.finished_at DESC LIMIT 1) AS last_dedupe,
       c.mark_column,
       (SELECT count(*) FROM pgdedup.duplicates d WHERE d.collection_id = c.collection_id AND d.target = 'column') AS marked,
       ARRAY(SELECT r.target FROM pgdedup.results r
             WHERE r.collection_id = c.collection_id AND r.index_version <> c.index_version ORDER BY 1) AS stale,
       to_regclass(format('%I.%I', c.source_schema, c.source_table)) IS NULL AS source_missing
FROM pgdedup.collections c;

DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p WHERE p.pronamespace = 'pgdedup'::regnamespace LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, pg_temp', f);
    END LOOP;
END $$;
ALTER FUNCTION pgdedup.find_duplicates(text, double precision, text, integer, text) SET client_min_messages = warning;
ALTER FUNCTION pgdedup.mark_duplicates(text, double precision, text, text, integer, text) SET client_min_messages = warning;
DO $$
BEGIN
    IF current_setting('server_version_num')::int >= 150000 THEN
        ALTER VIEW pgdedup.status SET (security_invoker = true);
    END IF;
END $$;
