-- pgdedup schema, version 39: an incremental auto decision that meets ambiguous pairs without an
-- exact check stops at that closure step, and the call after the checks goes on from there.
-- Before, the decision ran every closure step (treating unchecked pairs as no edge), returned
-- "unchecked", and the call after the checks decided the whole region again from the start:
-- filling the touched buckets again (~0.3 s at a million rows for a batch of 1,200 changes) and
-- every step. To make that rare, the Python side first predicted the changed rows' ambiguous
-- pairs (probable_unchecked) and checked them: one more read of every bucket of every changed
-- row (~0.29 s a batch), and still a second pass whenever the prediction missed a pair.
-- Now decide_changes keeps its tables (ON COMMIT DROP, as before) and leaves a marker,
-- pg_temp.pgdedup_resume, saying which decision stopped at which step; the next call goes on from
-- that step if it makes the very same decision (same arguments, index version and last logged
-- change) and finds the tables it left (closure_state: the same relations, the same number of
-- edges), else it starts afresh as before. The edges are the same either way: a step's pairs
-- are judged only once all of its ambiguous pairs have a check, so what the region grows into no
-- longer depends on how many calls it took. probable_unchecked is no longer called and is
-- dropped, judge_pairs gives way to judge_step.
-- Applied by migration 0039. Released files are never edited: a change is a new file + migration.

-- What identifies the tables an incremental decision keeps between its calls: their relation
-- ids (a table dropped and made again by anything else gets a new one) and the number of edges;
-- NULL when one of them is missing.
CREATE FUNCTION pgdedup.closure_state() RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    tables oid[] := ARRAY[to_regclass('pg_temp.pgdedup_redone'), to_regclass('pg_temp.pgdedup_lost'),
                          to_regclass('pg_temp.pgdedup_touched'), to_regclass('pg_temp.pgdedup_members'),
                          to_regclass('pg_temp.pgdedup_leaders'), to_regclass('pg_temp.pgdedup_was'),
                          to_regclass('pg_temp.pgdedup_moved'), to_regclass('pg_temp.pgdedup_seeds'),
                          to_regclass('pg_temp.pgdedup_region'), to_regclass('pg_temp.pgdedup_frontier'),
                          to_regclass('pg_temp.pgdedup_edges'), to_regclass('pg_temp.pgdedup_step_pairs')]::oid[];
BEGIN
    IF array_position(tables, NULL) IS NOT NULL THEN
        RETURN NULL;
    END IF;
    RETURN array_to_string(tables, ',') || ';' || (SELECT count(*) FROM pg_temp.pgdedup_edges);
END $$;

-- The judgement of a closure step, as judge_pairs of revision 31, except that ambiguous pairs
-- without a check leave the step unjudged: they go to pg_temp.pgdedup_unchecked, no edge is
-- added, and the result is false.
CREATE FUNCTION pgdedup.judge_step(p_collection_id integer, p_threshold double precision, p_verify text)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    band record;
BEGIN
    IF p_verify <> 'auto' THEN
        INSERT INTO pg_temp.pgdedup_edges
            SELECT s.fh, s.mh, s.estimate FROM pg_temp.pgdedup_step_pairs s WHERE s.estimate >= p_threshold;
        RETURN true;
    END IF;
    SELECT b.lo, b.hi, b.small_lo, c.num_perm INTO band
    FROM pgdedup.collections c, pgdedup.auto_bands(p_threshold, c.num_perm) b
    WHERE c.collection_id = p_collection_id;
    DROP TABLE IF EXISTS pg_temp.pgdedup_judged;
    CREATE TEMP TABLE pgdedup_judged ON COMMIT DROP AS
        SELECT s.frow, s.mrow, s.fh, s.mh, s.estimate,
               CASE WHEN least(gf.feature_count, gm.feature_count) < band.num_perm
                    THEN CASE WHEN s.estimate >= band.small_lo THEN 'check' ELSE 'drop' END
                    WHEN s.estimate >= band.hi THEN 'accept'
                    WHEN s.estimate >= band.lo THEN 'check' ELSE 'drop' END AS verdict
        FROM pg_temp.pgdedup_step_pairs s
        JOIN pgdedup.signatures gf ON gf.collection_id = p_collection_id AND gf.row_id = s.frow
        JOIN pgdedup.signatures gm ON gm.collection_id = p_collection_id AND gm.row_id = s.mrow;
    INSERT INTO pg_temp.pgdedup_unchecked
        SELECT s.frow, s.mrow, least(s.fh, s.mh), greatest(s.fh, s.mh) FROM pg_temp.pgdedup_judged s
        WHERE s.verdict = 'check'
          AND NOT EXISTS (SELECT 1 FROM pgdedup.checked ch
                          WHERE ch.collection_id = p_collection_id
                            AND ch.text_a = least(s.fh, s.mh) AND ch.text_b = greatest(s.fh, s.mh));
    IF FOUND THEN
        DROP TABLE pg_temp.pgdedup_judged;
        RETURN false;
    END IF;
    INSERT INTO pg_temp.pgdedup_edges
        SELECT s.fh, s.mh, CASE WHEN s.verdict = 'accept' THEN s.estimate ELSE ch.similarity END
        FROM pg_temp.pgdedup_judged s
        LEFT JOIN pgdedup.checked ch ON ch.collection_id = p_collection_id AND s.verdict = 'check'
                                    AND ch.text_a = least(s.fh, s.mh) AND ch.text_b = greatest(s.fh, s.mh)
        WHERE s.verdict = 'accept' OR (s.verdict = 'check' AND ch.similarity >= p_threshold);
    DROP TABLE pg_temp.pgdedup_judged;
    RETURN true;
END $$;

-- Decide again what the changes can alter, as in revision 35, stopping at a step with unchecked
-- ambiguous pairs and going on from it in the next call (see above).
CREATE OR REPLACE FUNCTION pgdedup.decide_changes(p_collection_id integer, p_target text, p_threshold double precision,
                                       p_keep_order text, p_max_bucket integer, p_since bigint,
                                       p_verify text DEFAULT 'estimate',
                                       OUT texts bigint, OUT rows_examined bigint)
LANGUAGE plpgsql SET work_mem = '256MB' AS $$
DECLARE
    cid integer := p_collection_id;
    c pgdedup.collections;
    t double precision;
    ord text := pgdedup.keep_order_sql(p_collection_id, p_keep_order);
    key_type text;
    added bigint;
    step integer := 0;
    resuming boolean := false;
    t0 timestamptz := clock_timestamp();
    floor_estimate double precision;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = cid;
    t := coalesce(p_threshold, c.threshold);
    floor_estimate := pgdedup.edge_floor(cid, t, p_verify);
    key_type := pgdedup.key_type_sql(c.key_type);
    -- a call after one that stopped for exact checks goes on from the closure step it stopped at:
    -- if that call made this very decision (same arguments, index version and last logged
    -- change) and its tables are the ones it left (closure_state)
    IF to_regclass('pg_temp.pgdedup_resume') IS NOT NULL THEN
        SELECT r.step INTO step FROM pg_temp.pgdedup_resume r
        WHERE r.collection_id = cid AND r.target = p_target AND r.threshold = t AND r.keep_order = ord
          AND r.max_bucket = p_max_bucket AND r.since IS NOT DISTINCT FROM p_since AND r.verify = p_verify
          AND r.index_version = c.index_version
          AND r.change_seq IS NOT DISTINCT FROM (SELECT max(ch.seq) FROM pgdedup.changes ch WHERE ch.collection_id = cid)
          AND r.state = pgdedup.closure_state();
        resuming := FOUND;
        DROP TABLE pg_temp.pgdedup_resume;
    END IF;
    DROP TABLE IF EXISTS pg_temp.pgdedup_rows, pg_temp.pgdedup_fixed, pg_temp.pgdedup_ranked;
    IF resuming THEN
        t0 := pgdedup.stage(format('going on from closure step %s', step + 1), t0);
    ELSE
        step := 0;
        DROP TABLE IF EXISTS pg_temp.pgdedup_redone, pg_temp.pgdedup_lost, pg_temp.pgdedup_touched,
            pg_temp.pgdedup_members, pg_temp.pgdedup_leaders, pg_temp.pgdedup_was, pg_temp.pgdedup_moved,
            pg_temp.pgdedup_seeds, pg_temp.pgdedup_region, pg_temp.pgdedup_frontier, pg_temp.pgdedup_edges,
            pg_temp.pgdedup_step_pairs;
        CREATE TEMP TABLE pgdedup_redone ON COMMIT DROP AS
            SELECT DISTINCT ch.row_key FROM pgdedup.changes ch WHERE ch.collection_id = cid AND ch.seq > p_since;
        -- the buckets changed rows were in (with the text they had there) and are in now
        CREATE TEMP TABLE pgdedup_lost ON COMMIT DROP AS
            SELECT DISTINCT (u.band - 1)::smallint AS band, u.bucket, ch.old_text_hash
            FROM pgdedup.changes ch, unnest(ch.old_buckets) WITH ORDINALITY AS u(bucket, band)
            WHERE ch.collection_id = cid AND ch.seq > p_since;
        CREATE TEMP TABLE pgdedup_touched ON COMMIT DROP AS
            SELECT band, bucket FROM pg_temp.pgdedup_lost
            UNION
            SELECT (u.band - 1)::smallint, u.bucket
            FROM pg_temp.pgdedup_redone k
            JOIN pgdedup.signatures g ON g.collection_id = cid AND g.row_key = k.row_key,
                 unnest(g.buckets) WITH ORDINALITY AS u(bucket, band);
        CREATE TEMP TABLE pgdedup_members (band smallint, bucket bigint, text_hash bigint, row_id bigint) ON COMMIT DROP;
        CREATE INDEX ON pg_temp.pgdedup_members (band, bucket, text_hash);
        CREATE TEMP TABLE pgdedup_leaders (band smallint, bucket bigint, text_hash bigint,
                                           PRIMARY KEY (band, bucket, text_hash)) ON COMMIT DROP;
        INSERT INTO pg_temp.pgdedup_members (band, bucket) SELECT band, bucket FROM pg_temp.pgdedup_touched;
        PERFORM pgdedup.fill_buckets(cid, ord, key_type, p_max_bucket);
        ANALYZE pg_temp.pgdedup_members;
        -- the leaders each touched bucket had (its present members, for one that was not capped)
        -- and has (its members, for one that is not capped)
        CREATE TEMP TABLE pgdedup_was ON COMMIT DROP AS
            SELECT l.band, l.bucket, l.text_hash
            FROM pgdedup.leaders l JOIN pg_temp.pgdedup_touched k ON k.band = l.band AND k.bucket = l.bucket
            WHERE l.collection_id = cid AND l.target = p_target;
        CREATE TEMP TABLE pgdedup_moved ON COMMIT DROP AS
            WITH led_now AS (
                SELECT m.band, m.bucket, m.text_hash FROM pg_temp.pgdedup_members m
                WHERE NOT EXISTS (SELECT 1 FROM pg_temp.pgdedup_leaders l WHERE l.band = m.band AND l.bucket = m.bucket)
                   OR EXISTS (SELECT 1 FROM pg_temp.pgdedup_leaders l
                              WHERE l.band = m.band AND l.bucket = m.bucket AND l.text_hash = m.text_hash)
            ), led_before AS (
                SELECT m.band, m.bucket, m.text_hash FROM pg_temp.pgdedup_members m
                WHERE NOT EXISTS (SELECT 1 FROM pg_temp.pgdedup_was w WHERE w.band = m.band AND w.bucket = m.bucket)
                   OR EXISTS (SELECT 1 FROM pg_temp.pgdedup_was w
                              WHERE w.band = m.band AND w.bucket = m.bucket AND w.text_hash = m.text_hash)
            )
            SELECT *, true AS joined FROM (SELECT * FROM led_now EXCEPT SELECT * FROM led_before) j
            UNION ALL
            SELECT *, false FROM (SELECT * FROM led_before EXCEPT SELECT * FROM led_now) l;
        -- the seeds (see above)
        CREATE TEMP TABLE pgdedup_seeds ON COMMIT DROP AS
            SELECT g.text_hash FROM pg_temp.pgdedup_redone k
            JOIN pgdedup.signatures g ON g.collection_id = cid AND g.row_key = k.row_key AND g.feature_count > 0
            UNION
            SELECT o.old_text_hash FROM pg_temp.pgdedup_lost o
            WHERE EXISTS (SELECT 1 FROM pgdedup.signatures g
                          WHERE g.collection_id = cid AND g.text_hash = o.old_text_hash AND g.feature_count > 0)
            UNION
            SELECT m.text_hash FROM pg_temp.pgdedup_members m
            WHERE (m.band, m.bucket) IN (
                SELECT o.band, o.bucket FROM pg_temp.pgdedup_lost o
                WHERE NOT EXISTS (SELECT 1 FROM pg_temp.pgdedup_was w WHERE w.band = o.band AND w.bucket = o.bucket)
                   OR EXISTS (SELECT 1 FROM pg_temp.pgdedup_was w
                              WHERE w.band = o.band AND w.bucket = o.bucket AND w.text_hash = o.old_text_hash))
            UNION
            SELECT w.text_hash FROM pg_temp.pgdedup_was w
            WHERE (w.band, w.bucket) IN (SELECT o.band, o.bucket FROM pg_temp.pgdedup_lost o)
              AND (SELECT count(*) FROM pgdedup.signatures g WHERE g.collection_id = cid AND g.text_hash = w.text_hash) > 1
            UNION
            SELECT v.text_hash FROM pg_temp.pgdedup_moved v
            UNION
            SELECT m.text_hash
            FROM pg_temp.pgdedup_moved v
            JOIN pg_temp.pgdedup_members vm ON vm.band = v.band AND vm.bucket = v.bucket AND vm.text_hash = v.text_hash
            JOIN pgdedup.signatures gv ON gv.collection_id = cid AND gv.row_id = vm.row_id
            JOIN pg_temp.pgdedup_members m ON m.band = v.band AND m.bucket = v.bucket AND m.text_hash <> v.text_hash
            JOIN pgdedup.signatures gm ON gm.collection_id = cid AND gm.row_id = m.row_id
            WHERE NOT v.joined AND pgdedup.similarity(gv.signature, gm.signature) >= floor_estimate;
        -- each text by its representative, the lowest row id of all its rows
        CREATE TEMP TABLE pgdedup_region (text_hash bigint PRIMARY KEY, row_id bigint NOT NULL) ON COMMIT DROP;
        INSERT INTO pg_temp.pgdedup_region
            SELECT s.text_hash, (SELECT min(g.row_id) FROM pgdedup.signatures g
                                 WHERE g.collection_id = cid AND g.text_hash = s.text_hash)
            FROM pg_temp.pgdedup_seeds s;
        CREATE TEMP TABLE pgdedup_frontier ON COMMIT DROP AS SELECT * FROM pg_temp.pgdedup_region;
        t0 := pgdedup.stage(format('%s changed keys, %s touched buckets, %s texts to start from',
                                   (SELECT count(*) FROM pg_temp.pgdedup_redone), (SELECT count(*) FROM pg_temp.pgdedup_touched),
                                   (SELECT count(*) FROM pg_temp.pgdedup_region)), t0);
        CREATE TEMP TABLE pgdedup_edges (h1 bigint, h2 bigint, similarity double precision) ON COMMIT DROP;
    END IF;
    -- closure: the edges of the frontier's texts; the texts they reach that have a row after the
    -- frontier text's first row, and are new, form the next frontier
    LOOP
        IF NOT resuming THEN  -- (resuming: this step's candidate pairs are there already)
            INSERT INTO pg_temp.pgdedup_members (band, bucket)
                SELECT DISTINCT (u.band - 1)::smallint, u.bucket
                FROM pg_temp.pgdedup_frontier f
                JOIN pgdedup.signatures g ON g.collection_id = cid AND g.row_id = f.row_id,
                     unnest(g.buckets) WITH ORDINALITY AS u(bucket, band)
                WHERE NOT EXISTS (SELECT 1 FROM pg_temp.pgdedup_members m
                                  WHERE m.band = u.band - 1 AND m.bucket = u.bucket);
            PERFORM pgdedup.fill_buckets(cid, ord, key_type, p_max_bucket);
            ANALYZE pg_temp.pgdedup_members;
            ANALYZE pg_temp.pgdedup_leaders;
            -- candidate pairs of the frontier's texts, each once: in a bucket of at most p_max_bucket
            -- texts every member; in a larger one every member for a leader, else only the leaders
            -- (with their representative rows and estimates), judged into edges by judge_step
            DROP TABLE IF EXISTS pg_temp.pgdedup_step_pairs;
            CREATE TEMP TABLE pgdedup_step_pairs ON COMMIT DROP AS
                    WITH fb AS MATERIALIZED (  -- the frontier's buckets, once for both halves
                        SELECT f.text_hash AS fh, f.row_id AS frow, (u.band - 1)::smallint AS band, u.bucket
                        FROM pg_temp.pgdedup_frontier f
                        JOIN pgdedup.signatures g ON g.collection_id = cid AND g.row_id = f.row_id
                        CROSS JOIN LATERAL unnest(g.buckets) WITH ORDINALITY AS u(bucket, band)
                    )
                    SELECT p.fh, p.frow, p.mh, p.mrow, pgdedup.similarity(gf.signature, gm.signature) AS estimate
                    FROM (
                        SELECT fb.fh, fb.frow, m.text_hash AS mh, m.row_id AS mrow
                        FROM fb
                        JOIN pg_temp.pgdedup_members m ON m.band = fb.band AND m.bucket = fb.bucket
                        WHERE m.text_hash <> fb.fh
                          AND (NOT EXISTS (SELECT 1 FROM pg_temp.pgdedup_leaders l
                                           WHERE l.band = m.band AND l.bucket = m.bucket)
                               OR EXISTS (SELECT 1 FROM pg_temp.pgdedup_leaders l
                                          WHERE l.band = m.band AND l.bucket = m.bucket AND l.text_hash = fb.fh))
                        UNION
                        SELECT fl.fh, fl.frow, m.text_hash, m.row_id
                        -- the frontier's capped buckets first (OFFSET 0): planned with the members
                        -- first, this half looked up a member for each of the frontier's buckets
                        FROM (SELECT fb.fh, fb.frow, l.band, l.bucket, l.text_hash
                              FROM fb
                              JOIN pg_temp.pgdedup_leaders l ON l.band = fb.band AND l.bucket = fb.bucket
                                                              AND l.text_hash <> fb.fh
                              OFFSET 0) fl
                        JOIN pg_temp.pgdedup_members m ON m.band = fl.band AND m.bucket = fl.bucket
                                                        AND m.text_hash = fl.text_hash
                    ) p
                    JOIN pgdedup.signatures gf ON gf.collection_id = cid AND gf.row_id = p.frow
                    JOIN pgdedup.signatures gm ON gm.collection_id = cid AND gm.row_id = p.mrow;
        END IF;
        resuming := false;
        IF NOT pgdedup.judge_step(cid, t, p_verify) THEN
            -- ambiguous pairs without an exact check (in pgdedup_unchecked): stop, to go on from
            -- this step once they are checked
            CREATE TEMP TABLE pgdedup_resume ON COMMIT DROP AS
                SELECT cid AS collection_id, p_target AS target, t AS threshold, ord AS keep_order,
                       p_max_bucket AS max_bucket, p_since AS since, p_verify AS verify, c.index_version,
                       (SELECT max(ch.seq) FROM pgdedup.changes ch WHERE ch.collection_id = cid) AS change_seq,
                       step, pgdedup.closure_state() AS state;
            t0 := pgdedup.stage(format('closure step %s: %s candidate pairs, %s ambiguous ones without an exact check',
                                       step + 1, (SELECT count(*) FROM pg_temp.pgdedup_step_pairs),
                                       (SELECT count(*) FROM pg_temp.pgdedup_unchecked)), t0);
            RETURN;
        END IF;
        -- where the frontier's new neighbours stand in keep order (ranks among these texts' rows)
        DROP TABLE IF EXISTS pg_temp.pgdedup_step, pg_temp.pgdedup_span;
        CREATE TEMP TABLE pgdedup_step ON COMMIT DROP AS
            SELECT DISTINCT e.h1, e.h2 FROM pg_temp.pgdedup_edges e
            JOIN pg_temp.pgdedup_frontier f ON f.text_hash = e.h1
            WHERE NOT EXISTS (SELECT 1 FROM pg_temp.pgdedup_region r WHERE r.text_hash = e.h2);
        EXECUTE format(
            'CREATE TEMP TABLE pgdedup_span ON COMMIT DROP AS
             SELECT o.text_hash, min(o.rnk) AS first_rank, max(o.rnk) AS last_rank
             FROM (SELECT g.text_hash, row_number() OVER (ORDER BY %s) AS rnk
                   FROM (SELECT h1 AS h FROM pg_temp.pgdedup_step UNION SELECT h2 FROM pg_temp.pgdedup_step) x
                   JOIN pgdedup.signatures g ON g.collection_id = $1 AND g.text_hash = x.h
                   JOIN %I.%I s ON s.%I = g.row_key::%s) o
             GROUP BY o.text_hash',
            ord, c.source_schema, c.source_table, c.key_column, key_type) USING cid;
        TRUNCATE pg_temp.pgdedup_frontier;
        INSERT INTO pg_temp.pgdedup_frontier
            SELECT n.h2, (SELECT min(g.row_id) FROM pgdedup.signatures g
                          WHERE g.collection_id = cid AND g.text_hash = n.h2)
            FROM (SELECT DISTINCT st.h2 FROM pg_temp.pgdedup_step st
                  JOIN pg_temp.pgdedup_span a ON a.text_hash = st.h1
                  JOIN pg_temp.pgdedup_span b ON b.text_hash = st.h2
                  WHERE b.last_rank > a.first_rank) n;
        GET DIAGNOSTICS added = ROW_COUNT;
        step := step + 1;
        t0 := pgdedup.stage(format('closure step %s: %s candidate pairs, %s later texts reached',
                                   step, (SELECT count(*) FROM pg_temp.pgdedup_step_pairs), added), t0);
        EXIT WHEN added = 0;
        INSERT INTO pg_temp.pgdedup_region SELECT text_hash, row_id FROM pg_temp.pgdedup_frontier;
    END LOOP;
    -- the region's rows and the kept rows of the texts outside it that it has edges to, in keep
    -- order (only their relative order matters), then the walk
    EXECUTE format(
        'CREATE TEMP TABLE pgdedup_ranked ON COMMIT DROP AS
         SELECT g.row_id, g.row_key, g.text_hash, row_number() OVER (ORDER BY %s) AS rnk, g.fixed
         FROM (SELECT g.row_id, g.row_key, g.text_hash, false AS fixed
               FROM pg_temp.pgdedup_region r
               JOIN pgdedup.signatures g ON g.collection_id = $1 AND g.text_hash = r.text_hash
               UNION ALL
               SELECT g.row_id, g.row_key, g.text_hash, true
               FROM (SELECT DISTINCT e.h2 FROM pg_temp.pgdedup_edges e
                     WHERE NOT EXISTS (SELECT 1 FROM pg_temp.pgdedup_region r WHERE r.text_hash = e.h2)) v
               JOIN pgdedup.signatures g ON g.collection_id = $1 AND g.text_hash = v.h2 AND g.feature_count > 0
               WHERE NOT EXISTS (SELECT 1 FROM pgdedup.duplicates d
                                 WHERE d.collection_id = $1 AND d.target = $2 AND d.row_key = g.row_key)) g
         JOIN %I.%I s ON s.%I = g.row_key::%s',
        ord, c.source_schema, c.source_table, c.key_column, key_type) USING cid, p_target;
    CREATE TEMP TABLE pgdedup_rows ON COMMIT DROP AS
        SELECT row_id, row_key, text_hash, rnk FROM pg_temp.pgdedup_ranked WHERE NOT fixed;
    CREATE TEMP TABLE pgdedup_fixed ON COMMIT DROP AS
        SELECT row_id, row_key, text_hash, rnk FROM pg_temp.pgdedup_ranked WHERE fixed;
    INSERT INTO pg_temp.pgdedup_redone SELECT row_key FROM pg_temp.pgdedup_rows;
    PERFORM pgdedup.walk();
    texts := (SELECT count(*) FROM pg_temp.pgdedup_region);
    rows_examined := (SELECT count(*) FROM pg_temp.pgdedup_rows);
    t0 := pgdedup.stage(format('%s rows decided again', rows_examined), t0);
END $$;
DROP FUNCTION pgdedup.judge_pairs(integer, double precision, text);
DROP FUNCTION pgdedup.probable_unchecked(integer, text, double precision, integer);

SELECT pgdedup.pin_search_paths();
-- CREATE OR REPLACE reset decide_changes' settings of revision 9: put them back
ALTER FUNCTION pgdedup.decide_changes(integer, text, double precision, text, integer, bigint, text)
    SET client_min_messages = warning;
ALTER FUNCTION pgdedup.decide_changes(integer, text, double precision, text, integer, bigint, text) SET jit = off;
