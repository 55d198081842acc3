-- pgdedup schema, version 35: an incremental decision looks up fewer rows.
-- At a million generated feed items, a change batch of 1,200 keys touches ~18,600 buckets, and
-- fill_buckets looked up the signature of each of their ~26,000 rows for its text: ~17,600 of
-- those rows are the changed rows themselves (in their own buckets, mostly alone), whose texts
-- one look-up per changed key gives. Now only the other rows' signatures are read
-- (the first fill: ~300-450 -> ~225-330 ms). And each closure step's candidate pairs with the
-- leaders of capped buckets were planned with the members first: a look-up of every bucket of
-- the frontier in the members (~29,000 at the first step, ~75 ms) before keeping those of the
-- ~200 leaders; the leaders now come first, and the frontier's buckets are unnested once.
-- Applied by migration 0035. Released files are never edited: a change is a new file + migration.

-- Fill in bucket members and leaders, as in revision 6; the text of a changed row (a key in
-- pg_temp.pgdedup_redone) comes from one look-up per changed key, not one per bucket it is in.
CREATE OR REPLACE FUNCTION pgdedup.fill_buckets(p_collection_id integer, p_ord text, p_key_type text, p_max_bucket integer)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = p_collection_id;
    DROP TABLE IF EXISTS pg_temp.pgdedup_new_members;
    CREATE TEMP TABLE pgdedup_new_members ON COMMIT DROP AS
        WITH changed AS MATERIALIZED (
            SELECT g.row_id, g.text_hash, g.feature_count
            FROM pg_temp.pgdedup_redone k
            JOIN pgdedup.signatures g ON g.collection_id = p_collection_id AND g.row_key = k.row_key
        )
        SELECT e.band, e.bucket, x.text_hash, min(b.row_id) AS row_id
        FROM pg_temp.pgdedup_members e
        JOIN pgdedup.band_keys b ON b.collection_id = p_collection_id AND b.band = e.band AND b.bucket = e.bucket
        LEFT JOIN changed w ON w.row_id = b.row_id
        CROSS JOIN LATERAL (
            SELECT w.text_hash WHERE w.row_id IS NOT NULL AND w.feature_count > 0
            UNION ALL
            SELECT g.text_hash FROM pgdedup.signatures g
            WHERE w.row_id IS NULL AND g.collection_id = p_collection_id AND g.row_id = b.row_id AND g.feature_count > 0
        ) x
        WHERE e.text_hash IS NULL
        GROUP BY e.band, e.bucket, x.text_hash;
    DELETE FROM pg_temp.pgdedup_members WHERE text_hash IS NULL;
    INSERT INTO pg_temp.pgdedup_members SELECT band, bucket, text_hash, row_id FROM pg_temp.pgdedup_new_members;
    -- leaders of the new capped buckets: rank their rows by the keep order
    EXECUTE format(
        'INSERT INTO pg_temp.pgdedup_leaders
         SELECT band, bucket, text_hash FROM (
             SELECT band, bucket, text_hash,
                    row_number() OVER (PARTITION BY band, bucket ORDER BY first_rank, row_id) AS position
             FROM (
                 SELECT m.band, m.bucket, m.text_hash, m.row_id, min(o.rnk) AS first_rank
                 FROM pg_temp.pgdedup_new_members m
                 JOIN (SELECT g.text_hash, row_number() OVER (ORDER BY %s) AS rnk
                       FROM (SELECT DISTINCT text_hash FROM pg_temp.pgdedup_new_members n
                             WHERE (n.band, n.bucket) IN (SELECT band, bucket FROM pg_temp.pgdedup_new_members
                                                          GROUP BY band, bucket HAVING count(*) > $2)) x
                       JOIN pgdedup.signatures g ON g.collection_id = $1 AND g.text_hash = x.text_hash
                       JOIN %I.%I s ON s.%I = g.row_key::%s) o ON o.text_hash = m.text_hash
                 WHERE (m.band, m.bucket) IN (SELECT band, bucket FROM pg_temp.pgdedup_new_members
                                              GROUP BY band, bucket HAVING count(*) > $2)
                 GROUP BY m.band, m.bucket, m.text_hash, m.row_id
             ) ranked
         ) p WHERE position <= $2',
        p_ord, c.source_schema, c.source_table, c.key_column, p_key_type) USING p_collection_id, p_max_bucket;
END $$;

-- Decide again what the changes can alter, as in revision 9, with the candidate pairs of each
-- closure step found with fewer look-ups.
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
    t0 timestamptz := clock_timestamp();
    floor_estimate double precision;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = cid;
    t := coalesce(p_threshold, c.threshold);
    floor_estimate := pgdedup.edge_floor(cid, t, p_verify);
    key_type := pgdedup.key_type_sql(c.key_type);
    DROP TABLE IF EXISTS pg_temp.pgdedup_redone, pg_temp.pgdedup_lost, pg_temp.pgdedup_touched,
        pg_temp.pgdedup_members, pg_temp.pgdedup_leaders, pg_temp.pgdedup_was, pg_temp.pgdedup_moved,
        pg_temp.pgdedup_seeds, pg_temp.pgdedup_region, pg_temp.pgdedup_frontier, pg_temp.pgdedup_edges,
        pg_temp.pgdedup_rows, pg_temp.pgdedup_fixed, pg_temp.pgdedup_ranked;
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
    -- closure: the edges of the frontier's texts; the texts they reach that have a row after the
    -- frontier text's first row, and are new, form the next frontier
    LOOP
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
        -- (with their representative rows and estimates), judged into edges by judge_pairs
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
        PERFORM pgdedup.judge_pairs(cid, t, p_verify);
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
SELECT pgdedup.pin_search_paths();
-- CREATE OR REPLACE reset its settings of revision 9: put them back
ALTER FUNCTION pgdedup.decide_changes(integer, text, double precision, text, integer, bigint, text)
    SET client_min_messages = warning;
ALTER FUNCTION pgdedup.decide_changes(integer, text, double precision, text, integer, bigint, text) SET jit = off;
