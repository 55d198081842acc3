-- pgdedup schema, version 15: candidate pairs in one pass over the band table, and once per
-- full dedupe. Measured at a million rows (16 bands): revision 2's candidate_pairs grouped every
-- band key by bucket, unnested the shared buckets, joined each member with the representatives
-- (a sort of all rows by text), grouped again in keep order and called a SQL function per
-- bucket for its pairs (functions with a pinned search_path are never inlined): 30 s, then
-- verified_pairs computed each passing pair's estimate twice, and store_leaders grouped the
-- band table a second time (9 s). Now rows that do not stand for their text are filtered out
-- while the band table is read in key order (a hashed set), only buckets above the cap are put
-- in keep order (the pairs of a smaller bucket do not depend on its order), the pairs are
-- generated inline, and a full dedupe keeps the shared buckets it made for its leaders.
-- The candidate pairs, their estimates and the leaders are the same as revision 2's.
-- Applied by migration 0015. Released files are never edited: a change is a new file + migration.

-- The rows that do not stand for their text in the band join: every row but the lowest row id
-- of its normalised text (exact duplicates share every bucket), and with p_ranked every row
-- whose text is not in pg_temp.pgdedup_rank (rank_rows: rows gone from the source). Rows with
-- an empty feature set have no band keys; they may be listed or not. Declared ROWS 1000 so the
-- planner always probes it as a hashed set (linear), whatever the collection's size.
CREATE FUNCTION pgdedup.other_rows(p_collection_id integer, p_ranked boolean) RETURNS SETOF bigint
LANGUAGE plpgsql STABLE ROWS 1000 AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'SELECT x.row_id FROM (
             SELECT s.row_id, s.text_hash, min(s.row_id) OVER (PARTITION BY s.text_hash) AS first_row
             FROM pgdedup.signatures s WHERE s.collection_id = $1) x
         WHERE x.row_id <> x.first_row %s',
        CASE WHEN p_ranked
             THEN 'OR NOT EXISTS (SELECT 1 FROM pg_temp.pgdedup_rank k WHERE k.text_hash = x.text_hash)'
             ELSE '' END)
        USING p_collection_id;
END $$;

-- The buckets two or more representatives share (band, bucket, their row ids). A bucket of at
-- most p_max_bucket members lists them in no particular order; a larger one in leader order:
-- by row id, or with p_ranked by keep order (pg_temp.pgdedup_rank), ties by row id, so that
-- its first p_max_bucket members are the leaders revision 2's candidate_pairs chose.
CREATE FUNCTION pgdedup.shared_buckets(p_collection_id integer, p_max_bucket integer, p_ranked boolean)
RETURNS TABLE (band smallint, bucket bigint, ids bigint[])
LANGUAGE plpgsql STABLE SET work_mem = '256MB' AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'WITH shared AS MATERIALIZED (
             SELECT b.band, b.bucket, array_agg(b.row_id) AS ids
             FROM pgdedup.band_keys b
             WHERE b.collection_id = $1 AND b.row_id NOT IN (SELECT pgdedup.other_rows($1, $3))
             GROUP BY b.band, b.bucket
             HAVING count(*) > 1
         )
         SELECT s.band, s.bucket, s.ids FROM shared s WHERE cardinality(s.ids) <= $2
         UNION ALL
         SELECT s.band, s.bucket, ARRAY(%s) FROM shared s WHERE cardinality(s.ids) > $2',
        CASE WHEN p_ranked
             THEN 'SELECT u.id FROM unnest(s.ids) AS u(id)
                   JOIN pgdedup.signatures g ON g.collection_id = $1 AND g.row_id = u.id
                   JOIN pg_temp.pgdedup_rank k ON k.text_hash = g.text_hash
                   ORDER BY k.rnk, u.id'
             ELSE 'SELECT u.id FROM unnest(s.ids) AS u(id) ORDER BY u.id' END)
        USING p_collection_id, p_max_bucket, p_ranked;
END $$;

-- Whether this call runs inside update_duplicates' own full run (it sets pgdedup.reuse_estimated
-- around it) and that run has made its candidates for this collection and cap: then they are
-- read from pg_temp.pgdedup_shared and pg_temp.pgdedup_estimated instead of being made again.
CREATE FUNCTION pgdedup.reusing(p_collection_id integer, p_max_bucket integer) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF current_setting('pgdedup.reuse_estimated', true) IS DISTINCT FROM 'on'
       OR to_regclass('pg_temp.pgdedup_estimated_for') IS NULL THEN
        RETURN false;
    END IF;
    RETURN EXISTS (SELECT 1 FROM pg_temp.pgdedup_estimated_for f
                   WHERE f.collection_id = p_collection_id AND f.max_bucket = p_max_bucket);
END $$;

-- Candidate pairs (row_a < row_b) of representatives sharing a bucket in at least one band, as
-- in revision 2: every pair of a bucket of at most p_max_bucket members, each member with the
-- first p_max_bucket members (its leaders) of a larger one.
CREATE OR REPLACE FUNCTION pgdedup.candidate_pairs(p_collection_id integer, p_max_bucket integer DEFAULT 100,
                                                   p_ranked boolean DEFAULT false)
RETURNS TABLE (row_a bigint, row_b bigint)
LANGUAGE plpgsql STABLE SET work_mem = '256MB' AS $$
DECLARE
    source text := 'pgdedup.shared_buckets($1, $2, $3)';
BEGIN
    IF p_ranked AND pgdedup.reusing(p_collection_id, p_max_bucket) AND to_regclass('pg_temp.pgdedup_shared') IS NOT NULL THEN
        source := 'pg_temp.pgdedup_shared';
    END IF;
    -- most shared buckets hold two members: their one pair needs no series
    RETURN QUERY EXECUTE format(
        'WITH s AS MATERIALIZED (SELECT b.ids FROM %s b)
         SELECT DISTINCT p.row_a, p.row_b FROM (
             SELECT least(s.ids[1], s.ids[2]) AS row_a, greatest(s.ids[1], s.ids[2]) AS row_b
             FROM s WHERE cardinality(s.ids) = 2
             UNION ALL
             SELECT least(s.ids[i], s.ids[j]), greatest(s.ids[i], s.ids[j])
             FROM s, generate_series(1, least(cardinality(s.ids) - 1, $2)) AS i,
                  generate_series(i + 1, cardinality(s.ids)) AS j
             WHERE cardinality(s.ids) > 2
         ) p', source)
        USING p_collection_id, p_max_bucket, p_ranked;
END $$;

-- Candidate pairs whose estimated similarity is >= p_threshold, as in revision 2, with each
-- estimate computed once (OFFSET 0 keeps the planner from repeating the call in the filter).
CREATE OR REPLACE FUNCTION pgdedup.verified_pairs(p_collection_id integer, p_threshold double precision DEFAULT NULL,
                                                  p_max_bucket integer DEFAULT 100, p_ranked boolean DEFAULT false)
RETURNS TABLE (row_a bigint, row_b bigint, similarity double precision)
LANGUAGE sql STABLE AS $$
    SELECT * FROM (
        SELECT p.row_a, p.row_b, pgdedup.similarity(a.signature, b.signature) AS similarity
        FROM pgdedup.candidate_pairs(p_collection_id, p_max_bucket, p_ranked) p
        JOIN pgdedup.signatures a ON a.collection_id = p_collection_id AND a.row_id = p.row_a
        JOIN pgdedup.signatures b ON b.collection_id = p_collection_id AND b.row_id = p.row_b
        OFFSET 0
    ) v
    WHERE v.similarity >= coalesce(p_threshold,
        (SELECT c.threshold FROM pgdedup.collections c WHERE c.collection_id = p_collection_id))
$$;

-- The edges of a decision, as in revision 11; inside update_duplicates' full run, the estimated
-- pairs it has made (verify "estimate" too).
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
    IF p_verify = 'estimate' AND p_ranked AND pgdedup.reusing(p_collection_id, p_max_bucket) THEN
        RETURN QUERY SELECT e.row_a, e.row_b, e.estimate FROM pg_temp.pgdedup_estimated e WHERE e.estimate >= t;
    ELSIF p_verify = 'estimate' THEN
        RETURN QUERY SELECT * FROM pgdedup.verified_pairs(p_collection_id, t, p_max_bucket, p_ranked);
    ELSIF p_verify = 'auto' THEN
        RETURN QUERY SELECT * FROM pgdedup.auto_pairs(p_collection_id, t, p_max_bucket, p_ranked);
    ELSE
        IF NOT p_ranked THEN  -- decide() checks the ranked ones against its keep order
            PERFORM pgdedup.check_exact_pairs(p_collection_id, p_threshold, p_max_bucket, false, NULL);
        END IF;
        RETURN QUERY SELECT e.row_a, e.row_b, e.similarity FROM pgdedup.exact_pairs e
                     WHERE e.collection_id = p_collection_id AND e.similarity >= t;
    END IF;
END $$;

-- Candidate pairs verify "auto" accepts, as in revision 11, reusing the run's estimates by
-- pgdedup.reusing.
CREATE OR REPLACE FUNCTION pgdedup.auto_pairs(p_collection_id integer, p_threshold double precision,
                                              p_max_bucket integer, p_ranked boolean)
RETURNS TABLE (row_a bigint, row_b bigint, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    band record;
    source text := 'pgdedup.estimated_pairs($1, $3, $4)';
BEGIN
    IF p_ranked AND pgdedup.reusing(p_collection_id, p_max_bucket) THEN
        source := 'pg_temp.pgdedup_estimated';
    END IF;
    SELECT b.lo, b.hi INTO band FROM pgdedup.collections c, pgdedup.auto_band(p_threshold, c.num_perm) b
    WHERE c.collection_id = p_collection_id;
    RETURN QUERY EXECUTE format(
        'SELECT v.row_a, v.row_b, v.similarity FROM (
             SELECT e.row_a, e.row_b,
                    CASE WHEN e.estimate >= $6 THEN e.estimate
                         ELSE coalesce((SELECT ch.similarity FROM pgdedup.checked ch
                                        WHERE ch.collection_id = $1 AND ch.text_a = least(e.text_a, e.text_b)
                                          AND ch.text_b = greatest(e.text_a, e.text_b)),
                                       pgdedup.no_exact_check($1)) END AS similarity
             FROM %s e
             WHERE e.estimate >= $5
         ) v
         WHERE v.similarity >= $2', source)
        USING p_collection_id, p_threshold, p_max_bucket, p_ranked, band.lo, band.hi;
END $$;

-- The leaders of every capped bucket, as in revision 9, from the shared buckets the full run
-- made for its candidates (pg_temp.pgdedup_shared, ranked): the first p_max_bucket members of
-- each bucket above the cap, by text.
CREATE OR REPLACE FUNCTION pgdedup.store_leaders(p_collection_id integer, p_target text, p_max_bucket integer)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM pgdedup.leaders l WHERE l.collection_id = p_collection_id AND l.target = p_target;
    INSERT INTO pgdedup.leaders (collection_id, target, band, bucket, text_hash)
    SELECT p_collection_id, p_target, s.band, s.bucket, g.text_hash
    FROM pg_temp.pgdedup_shared s
    CROSS JOIN LATERAL unnest(s.ids[1:p_max_bucket]) AS u(row_id)
    JOIN pgdedup.signatures g ON g.collection_id = p_collection_id AND g.row_id = u.row_id
    WHERE cardinality(s.ids) > p_max_bucket;
    UPDATE pgdedup.results r SET leaders = true WHERE r.collection_id = p_collection_id AND r.target = p_target;
END $$;

-- The dedupe of a collection, as in revision 11, with the candidates made once per full run for
-- both verify modes (pg_temp.pgdedup_shared and pgdedup_estimated) and the leaders taken from them.
CREATE OR REPLACE FUNCTION pgdedup.update_duplicates(p_collection text, p_alter boolean DEFAULT true,
                                          p_threshold double precision DEFAULT NULL, p_keep_order text DEFAULT NULL,
                                          p_column text DEFAULT 'duplicate_of', p_max_bucket integer DEFAULT 100,
                                          p_full boolean DEFAULT false, p_verify text DEFAULT 'estimate')
RETURNS TABLE (kind text, rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    cid integer := pgdedup.collection_id(p_collection);
    c pgdedup.collections;
    tgt text := CASE WHEN p_alter THEN 'column' ELSE 'view' END;
    prev pgdedup.results;
    started timestamptz := clock_timestamp();
    ord text;
    region record;
    reuse boolean;
    t0 timestamptz := clock_timestamp();
BEGIN
    PERFORM pgdedup.check_args(p_threshold, p_max_bucket, p_verify);
    IF p_verify = 'exact' THEN
        RAISE EXCEPTION 'update_duplicates decides by estimate or auto; an exact run is mark_duplicates or find_duplicates after pgdedup''s exact check'
            USING ERRCODE = 'PD003';
    END IF;
    ord := pgdedup.keep_order_sql(cid, p_keep_order);
    IF p_alter THEN
        PERFORM pgdedup.prepare_mark_column(p_collection, p_column);
    END IF;
    PERFORM pgdedup.lock_collection(cid);
    DROP TABLE IF EXISTS pg_temp.pgdedup_unchecked;
    CREATE TEMP TABLE pgdedup_unchecked (row_a bigint, row_b bigint, text_a bigint, text_b bigint) ON COMMIT DROP;
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = cid;
    SELECT * INTO prev FROM pgdedup.results r WHERE r.collection_id = cid AND r.target = tgt;
    IF p_full OR prev IS NULL OR prev.change_seq IS NULL OR prev.verify <> p_verify OR NOT prev.ranked
       OR NOT prev.leaders OR prev.threshold <> coalesce(p_threshold, c.threshold)
       OR prev.max_bucket <> p_max_bucket OR prev.keep_order IS DISTINCT FROM ord THEN
        -- the candidates once: kept for the call after auto's checks, the decision and the leaders.
        -- Those of an earlier call in this transaction, if made for this very decision: same
        -- collection, cap, keep order, index version and last logged change
        reuse := to_regclass('pg_temp.pgdedup_estimated_for') IS NOT NULL;
        IF reuse THEN  -- (a separate statement: the table may not exist)
            reuse := EXISTS (SELECT 1 FROM pg_temp.pgdedup_estimated_for f
                             WHERE f.collection_id = cid AND f.max_bucket = p_max_bucket AND f.keep_order = ord
                               AND f.index_version = c.index_version
                               AND f.change_seq IS NOT DISTINCT FROM
                                   (SELECT max(ch.seq) FROM pgdedup.changes ch WHERE ch.collection_id = cid));
        END IF;
        IF NOT reuse THEN
            DROP TABLE IF EXISTS pg_temp.pgdedup_estimated, pg_temp.pgdedup_estimated_for, pg_temp.pgdedup_shared;
            PERFORM pgdedup.rank_rows(cid, p_keep_order);
            CREATE TEMP TABLE pgdedup_shared ON COMMIT DROP AS
                SELECT * FROM pgdedup.shared_buckets(cid, p_max_bucket, true);
            CREATE TEMP TABLE pgdedup_estimated_for ON COMMIT DROP AS
                SELECT cid AS collection_id, p_max_bucket AS max_bucket, ord AS keep_order,
                       c.index_version, (SELECT max(ch.seq) FROM pgdedup.changes ch
                                         WHERE ch.collection_id = cid) AS change_seq;
            PERFORM set_config('pgdedup.reuse_estimated', 'on', true);  -- the pairs of pgdedup_shared
            CREATE TEMP TABLE pgdedup_estimated ON COMMIT DROP AS
                SELECT * FROM pgdedup.estimated_pairs(cid, p_max_bucket, true);
            PERFORM set_config('pgdedup.reuse_estimated', 'off', true);
            t0 := pgdedup.stage(format('%s candidate pairs estimated', (SELECT count(*) FROM pg_temp.pgdedup_estimated)), t0);
        END IF;
        IF p_verify = 'auto' THEN
            INSERT INTO pg_temp.pgdedup_unchecked
                SELECT e.row_a, e.row_b, least(e.text_a, e.text_b), greatest(e.text_a, e.text_b)
                FROM pg_temp.pgdedup_estimated e,
                     pgdedup.auto_band(coalesce(p_threshold, c.threshold), c.num_perm) band
                WHERE e.estimate >= band.lo AND e.estimate < band.hi
                  AND NOT EXISTS (SELECT 1 FROM pgdedup.checked ch
                                  WHERE ch.collection_id = cid AND ch.text_a = least(e.text_a, e.text_b)
                                    AND ch.text_b = greatest(e.text_a, e.text_b));
            IF FOUND THEN
                t0 := pgdedup.stage(format('%s ambiguous pairs to check exactly',
                                           (SELECT count(*) FROM pg_temp.pgdedup_unchecked)), t0);
                RETURN QUERY SELECT 'unchecked', count(*), 0::bigint, 0::bigint FROM pg_temp.pgdedup_unchecked;
                RETURN;
            END IF;
        END IF;
        PERFORM set_config('pgdedup.reuse_estimated', 'on', true);
        IF p_alter THEN
            RETURN QUERY SELECT 'full', m.* FROM pgdedup.mark_duplicates(p_collection, p_threshold, p_keep_order,
                                                                        p_column, p_max_bucket, p_verify) m;
        ELSE
            RETURN QUERY SELECT 'full', f.* FROM pgdedup.find_duplicates(p_collection, p_threshold, p_keep_order,
                                                                        p_max_bucket, p_verify) f;
            PERFORM pgdedup.prune_changes(cid);
        END IF;
        PERFORM set_config('pgdedup.reuse_estimated', 'off', true);
        t0 := pgdedup.stage('decided and stored in full', t0);
        PERFORM pgdedup.store_leaders(cid, tgt, p_max_bucket);
        t0 := pgdedup.stage('leaders of the capped buckets stored', t0);
        DROP TABLE IF EXISTS pg_temp.pgdedup_estimated, pg_temp.pgdedup_estimated_for, pg_temp.pgdedup_shared;  -- used up
        RETURN;
    END IF;
    DROP TABLE IF EXISTS pg_temp.pgdedup_estimated, pg_temp.pgdedup_estimated_for, pg_temp.pgdedup_shared;  -- a full run's only
    region := pgdedup.decide_changes(cid, tgt, p_threshold, p_keep_order, p_max_bucket, prev.change_seq, p_verify);
    IF EXISTS (SELECT 1 FROM pg_temp.pgdedup_unchecked) THEN
        t0 := pgdedup.stage(format('%s ambiguous pairs to check exactly',
                                   (SELECT count(*) FROM pg_temp.pgdedup_unchecked)), t0);
        RETURN QUERY SELECT 'unchecked', count(*), 0::bigint, 0::bigint FROM pg_temp.pgdedup_unchecked;
        RETURN;
    END IF;
    RETURN QUERY SELECT 'incremental', s.* FROM pgdedup.store_changes(cid, tgt, p_threshold, ord, p_max_bucket,
                                                                      started, region.texts) s;
    -- store_changes records a result and a run by estimate: record the mode that decided them
    UPDATE pgdedup.results r SET verify = p_verify WHERE r.collection_id = cid AND r.target = tgt;
    UPDATE pgdedup.runs r SET stats = jsonb_set(r.stats, '{verify}', to_jsonb(p_verify))
    WHERE r.run_id = (SELECT max(x.run_id) FROM pgdedup.runs x WHERE x.collection_id = cid AND x.kind = 'dedupe');
    -- only the touched buckets can have other leaders now
    DELETE FROM pgdedup.leaders l USING pg_temp.pgdedup_touched k
    WHERE l.collection_id = cid AND l.target = tgt AND l.band = k.band AND l.bucket = k.bucket;
    INSERT INTO pgdedup.leaders (collection_id, target, band, bucket, text_hash)
        SELECT cid, tgt, l.band, l.bucket, l.text_hash
        FROM pg_temp.pgdedup_leaders l JOIN pg_temp.pgdedup_touched k ON k.band = l.band AND k.bucket = l.bucket;
    UPDATE pgdedup.results r SET leaders = true WHERE r.collection_id = cid AND r.target = tgt;
    IF p_alter THEN
        PERFORM pgdedup.write_marks(cid, true);
    END IF;
    PERFORM pgdedup.prune_changes(cid);
    t0 := pgdedup.stage('stored' || CASE WHEN p_alter THEN ', marks written' ELSE '' END, t0);
END $$;

SELECT pgdedup.pin_search_paths();
-- CREATE OR REPLACE reset update_duplicates' settings of revision 11: put them back
ALTER FUNCTION pgdedup.update_duplicates(text, boolean, double precision, text, text, integer, boolean, text)
    SET client_min_messages = warning;
ALTER FUNCTION pgdedup.update_duplicates(text, boolean, double precision, text, text, integer, boolean, text)
    SET jit = off;
