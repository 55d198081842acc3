-- pgdedup schema, version 9: an incremental dedupe that follows the keep order forward.
-- Applied by migration 0009. Released files are never edited: a change is a new file + migration.
--
-- Revision 6 re-walked every text connected to a change, and every member of each bucket a
-- changed row shares. In a capped bucket (boilerplate shared by hundreds of texts) that is the
-- whole bucket, and every member meets every leader again: a few rows added to such buckets
-- cost seconds at a million rows. Two facts make most of that work unnecessary:
--   * the walk goes in keep order, so a row's decision depends only on texts before it: a
--     change can alter a decision only downstream of it (later in keep order, along edges);
--   * a capped bucket's edges are its leaders' edges: as long as its leaders are the same
--     texts, a change there adds or removes only the changed row's own edges.
-- So the leaders of every capped bucket are stored with the result, and the region re-walked
-- is what can be reached forward from the changes; texts outside it keep their decisions, and
-- those that are kept take part in the walk as fixed kept rows.

-- The leaders of every capped bucket as of a target's result ---------------------------------------

CREATE TABLE pgdedup.leaders (
    collection_id   integer NOT NULL,
    target          text NOT NULL,
    band            smallint NOT NULL,
    bucket          bigint NOT NULL,
    text_hash       bigint NOT NULL,
    PRIMARY KEY (collection_id, target, band, bucket, text_hash),
    FOREIGN KEY (collection_id, target) REFERENCES pgdedup.results ON DELETE CASCADE
);
REVOKE ALL ON pgdedup.leaders FROM PUBLIC;
ALTER TABLE pgdedup.leaders ENABLE ROW LEVEL SECURITY;
CREATE POLICY readable_collection ON pgdedup.leaders
    USING (collection_id IN (SELECT c.collection_id FROM pgdedup.collections c));

-- Whether pgdedup.leaders holds the leaders of the result as it stands (only update_duplicates
-- keeps them; any other way of recording a result clears it, and the next update is full).
ALTER TABLE pgdedup.results ADD COLUMN leaders boolean NOT NULL DEFAULT false;

-- Record (replace) a result, as in revision 6; its stored leaders no longer apply.
CREATE OR REPLACE FUNCTION pgdedup.record_result(p_collection_id integer, p_target text, p_threshold double precision,
                                                 p_max_bucket integer, p_ranked boolean, p_keep_order text, p_verify text)
RETURNS void
LANGUAGE sql AS $$
    INSERT INTO pgdedup.results (collection_id, target, index_version, threshold, max_bucket, ranked, keep_order,
                                 verify, change_seq)
    SELECT p_collection_id, p_target, c.index_version, p_threshold, p_max_bucket, p_ranked, p_keep_order, p_verify,
           coalesce((SELECT max(ch.seq) FROM pgdedup.changes ch WHERE ch.collection_id = p_collection_id), 0)
    FROM pgdedup.collections c WHERE c.collection_id = p_collection_id
    ON CONFLICT (collection_id, target) DO UPDATE
    SET index_version = excluded.index_version, threshold = excluded.threshold, max_bucket = excluded.max_bucket,
        ranked = excluded.ranked, keep_order = excluded.keep_order, verify = excluded.verify,
        change_seq = excluded.change_seq, computed_at = now(), leaders = false
$$;

-- Store the leaders of every capped bucket for a target just decided in full: each bucket with
-- more than p_max_bucket texts, its first p_max_bucket texts in keep order (pg_temp.pgdedup_rank,
-- from rank_rows), ties by representative row id, as candidate_pairs(p_ranked) chooses them.
-- Buckets are sized on the band table alone, so only the capped ones meet the signatures.
CREATE FUNCTION pgdedup.store_leaders(p_collection_id integer, p_target text, p_max_bucket integer) RETURNS void
LANGUAGE plpgsql SET work_mem = '256MB' AS $$
BEGIN
    DELETE FROM pgdedup.leaders l WHERE l.collection_id = p_collection_id AND l.target = p_target;
    INSERT INTO pgdedup.leaders (collection_id, target, band, bucket, text_hash)
    SELECT p_collection_id, p_target, m.band, m.bucket, unnest(m.texts[1:p_max_bucket])
    FROM (
        SELECT t.band, t.bucket, array_agg(t.text_hash ORDER BY k.rnk, t.row_id) AS texts
        FROM (
            SELECT b.band, b.bucket, g.text_hash, min(g.row_id) AS row_id
            FROM (SELECT b.band, b.bucket FROM pgdedup.band_keys b WHERE b.collection_id = p_collection_id
                  GROUP BY b.band, b.bucket HAVING count(*) > p_max_bucket) big
            JOIN pgdedup.band_keys b ON b.collection_id = p_collection_id AND b.band = big.band AND b.bucket = big.bucket
            JOIN pgdedup.signatures g ON g.collection_id = p_collection_id AND g.row_id = b.row_id AND g.feature_count > 0
            GROUP BY b.band, b.bucket, g.text_hash
        ) t
        JOIN pg_temp.pgdedup_rank k ON k.text_hash = t.text_hash
        GROUP BY t.band, t.bucket
        HAVING count(*) > p_max_bucket
    ) m;
    UPDATE pgdedup.results r SET leaders = true WHERE r.collection_id = p_collection_id AND r.target = p_target;
END $$;

-- The walk, as in revision 6, with fixed rows: pg_temp.pgdedup_fixed (row_id, row_key, text_hash,
-- rnk), if the caller made it, holds kept rows decided before and not walked again; each joins
-- the kept rows when the walk reaches its rank. The table is dropped on the way out.
CREATE OR REPLACE FUNCTION pgdedup.walk() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    best record;
    seqscan text := current_setting('enable_seqscan');
BEGIN
    DROP TABLE IF EXISTS pg_temp.pgdedup_walk, pg_temp.pgdedup_kept, pg_temp.pgdedup_marks;
    CREATE TEMP TABLE IF NOT EXISTS pgdedup_fixed (row_id bigint, row_key text, text_hash bigint, rnk bigint)
        ON COMMIT DROP;
    INSERT INTO pg_temp.pgdedup_edges
        SELECT text_hash, text_hash, 1.0 FROM pg_temp.pgdedup_rows GROUP BY text_hash HAVING count(*) > 1;
    CREATE INDEX ON pg_temp.pgdedup_edges (h1);
    ANALYZE pg_temp.pgdedup_edges;
    CREATE TEMP TABLE pgdedup_walk ON COMMIT DROP AS
        SELECT row_id, row_key, text_hash, rnk, false AS fixed FROM pg_temp.pgdedup_rows
        WHERE text_hash IN (SELECT h1 FROM pg_temp.pgdedup_edges)
        UNION ALL
        SELECT row_id, row_key, text_hash, rnk, true FROM pg_temp.pgdedup_fixed;
    CREATE TEMP TABLE pgdedup_kept (text_hash bigint, row_id bigint, row_key text, rnk bigint) ON COMMIT DROP;
    CREATE INDEX ON pg_temp.pgdedup_kept (text_hash);
    CREATE TEMP TABLE pgdedup_marks (row_key text, duplicate_of text, similarity double precision) ON COMMIT DROP;
    -- The loop's two statements are planned once, while pgdedup_kept is still tiny; with
    -- sequential scans allowed that plan would scan the growing table on every row (quadratic).
    PERFORM set_config('enable_seqscan', 'off', true);
    FOR r IN SELECT * FROM pg_temp.pgdedup_walk ORDER BY rnk LOOP
        IF NOT r.fixed THEN
            SELECT k.row_key, e.similarity INTO best
            FROM pg_temp.pgdedup_edges e JOIN pg_temp.pgdedup_kept k ON k.text_hash = e.h2
            WHERE e.h1 = r.text_hash
            ORDER BY e.similarity DESC, k.rnk
            LIMIT 1;
        END IF;
        IF NOT r.fixed AND FOUND THEN
            INSERT INTO pg_temp.pgdedup_marks VALUES (r.row_key, best.row_key, best.similarity);
        ELSE
            INSERT INTO pg_temp.pgdedup_kept VALUES (r.text_hash, r.row_id, r.row_key, r.rnk);
        END IF;
    END LOOP;
    PERFORM set_config('enable_seqscan', seqscan, true);
    DROP TABLE pg_temp.pgdedup_fixed;
END $$;

-- The lowest estimate a candidate pair can have and still be an edge: the threshold, by
-- estimate. (A later revision lowers it for other verify modes.)
CREATE FUNCTION pgdedup.edge_floor(p_collection_id integer, p_threshold double precision, p_verify text)
RETURNS double precision
LANGUAGE sql STABLE AS $$ SELECT p_threshold $$;

-- Turn the candidate pairs of one closure step (pg_temp.pgdedup_step_pairs: frontier text fh and
-- its representative row frow, neighbour text mh and mrow, estimate) into edges (appended to
-- pg_temp.pgdedup_edges as h1 = fh, h2 = mh, similarity): by estimate, those at or above the
-- threshold. A later revision judges other verify modes here.
CREATE FUNCTION pgdedup.judge_pairs(p_collection_id integer, p_threshold double precision, p_verify text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pg_temp.pgdedup_edges
        SELECT s.fh, s.mh, s.estimate FROM pg_temp.pgdedup_step_pairs s WHERE s.estimate >= p_threshold;
END $$;

-- Report a finished stage of a long run as an INFO message "pgdedup: <what> (<seconds> s)", only
-- while the session's setting pgdedup.progress is 'on' (the CLI sets it on a terminal); INFO
-- reaches the client whatever client_min_messages says. Returns the time the next stage starts.
CREATE FUNCTION pgdedup.stage(p_what text, p_started timestamptz) RETURNS timestamptz
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('pgdedup.progress', true) = 'on' THEN
        RAISE INFO 'pgdedup: % (% s)', p_what, round(extract(epoch FROM clock_timestamp() - p_started)::numeric, 1);
    END IF;
    RETURN clock_timestamp();
END $$;

-- The incremental decision ----------------------------------------------------------------------

-- Decide again only what the changes logged after p_since can alter, into pg_temp.pgdedup_marks,
-- and list in pg_temp.pgdedup_redone (row_key) every key whose stored decision (of target
-- p_target) it replaces. Returns (texts re-walked, rows re-examined).
--
-- Why this equals a full run. In the walk a row's decision depends only on the texts before it
-- that it has edges to (and whether they were kept); so text B depends on text A only through
-- an edge and only if some row of B comes after A's first row. The region is closed under that
-- relation from the seeds, and the seeds are every text whose edges or rows changed:
--   * the texts changed rows have now, and had (if other rows still have them);
--   * the texts that may have lost an edge to a changed row's old text: in a bucket it left
--     that was not capped, or whose leaders it was one of, every member; in a capped bucket
--     it was not a leader of, its edges went to the leaders only, and those come before it:
--     only a leader held by several rows can have a later row depending on it;
--   * where a bucket's leaders changed (stored with the result for capped buckets; every
--     member for one that was not), the texts that joined or left the leaders, and the members
--     whose estimate with a text that left reaches edge_floor (the lowest estimate an edge can
--     have in this verify mode).
-- Texts outside the region depend on nothing that changed, so their decisions stand; those
-- kept that the region has edges to are walked again as fixed kept rows, in keep order. Edges
-- follow the full run's rules (every pair in a bucket of at most p_max_bucket texts; in a larger
-- one, pairs with its first p_max_bucket texts in keep order).
DROP FUNCTION pgdedup.decide_changes(integer, double precision, text, integer, bigint);
CREATE FUNCTION pgdedup.decide_changes(p_collection_id integer, p_target text, p_threshold double precision,
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
                SELECT p.fh, p.frow, p.mh, p.mrow, pgdedup.similarity(gf.signature, gm.signature) AS estimate
                FROM (
                    SELECT f.text_hash AS fh, f.row_id AS frow, m.text_hash AS mh, m.row_id AS mrow
                    FROM pg_temp.pgdedup_frontier f
                    JOIN pgdedup.signatures g ON g.collection_id = cid AND g.row_id = f.row_id
                    CROSS JOIN LATERAL unnest(g.buckets) WITH ORDINALITY AS u(bucket, band)
                    JOIN pg_temp.pgdedup_members m ON m.band = u.band - 1 AND m.bucket = u.bucket
                    WHERE m.text_hash <> f.text_hash
                      AND (NOT EXISTS (SELECT 1 FROM pg_temp.pgdedup_leaders l
                                       WHERE l.band = m.band AND l.bucket = m.bucket)
                           OR EXISTS (SELECT 1 FROM pg_temp.pgdedup_leaders l
                                      WHERE l.band = m.band AND l.bucket = m.bucket AND l.text_hash = f.text_hash))
                    UNION
                    SELECT f.text_hash, f.row_id, m.text_hash, m.row_id
                    FROM pg_temp.pgdedup_frontier f
                    JOIN pgdedup.signatures g ON g.collection_id = cid AND g.row_id = f.row_id
                    CROSS JOIN LATERAL unnest(g.buckets) WITH ORDINALITY AS u(bucket, band)
                    JOIN pg_temp.pgdedup_leaders l ON l.band = u.band - 1 AND l.bucket = u.bucket
                                                    AND l.text_hash <> f.text_hash
                    JOIN pg_temp.pgdedup_members m ON m.band = l.band AND m.bucket = l.bucket
                                                    AND m.text_hash = l.text_hash
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

-- Bring one target up to date, as in revision 6: incrementally when its stored result was
-- computed by estimate with the same threshold, keep order and max_bucket, its leaders are
-- stored, and every change since is logged; otherwise (or with p_full) in full. Either way the
-- leaders of the result's capped buckets are stored with it.
CREATE OR REPLACE FUNCTION pgdedup.update_duplicates(p_collection text, p_alter boolean DEFAULT true,
                                                     p_threshold double precision DEFAULT NULL,
                                                     p_keep_order text DEFAULT NULL,
                                                     p_column text DEFAULT 'duplicate_of',
                                                     p_max_bucket integer DEFAULT 100, p_full boolean DEFAULT false)
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
BEGIN
    PERFORM pgdedup.check_args(p_threshold, p_max_bucket, 'estimate');
    ord := pgdedup.keep_order_sql(cid, p_keep_order);
    IF p_alter THEN
        PERFORM pgdedup.prepare_mark_column(p_collection, p_column);
    END IF;
    PERFORM pgdedup.lock_collection(cid);
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = cid;
    SELECT * INTO prev FROM pgdedup.results r WHERE r.collection_id = cid AND r.target = tgt;
    IF p_full OR prev IS NULL OR prev.change_seq IS NULL OR prev.verify <> 'estimate' OR NOT prev.ranked
       OR NOT prev.leaders OR prev.threshold <> coalesce(p_threshold, c.threshold)
       OR prev.max_bucket <> p_max_bucket OR prev.keep_order IS DISTINCT FROM ord THEN
        IF p_alter THEN
            RETURN QUERY SELECT 'full', m.* FROM pgdedup.mark_duplicates(p_collection, p_threshold, p_keep_order,
                                                                        p_column, p_max_bucket) m;
        ELSE
            RETURN QUERY SELECT 'full', f.* FROM pgdedup.find_duplicates(p_collection, p_threshold, p_keep_order,
                                                                        p_max_bucket) f;
            PERFORM pgdedup.prune_changes(cid);
        END IF;
        PERFORM pgdedup.store_leaders(cid, tgt, p_max_bucket);
        RETURN;
    END IF;
    region := pgdedup.decide_changes(cid, tgt, p_threshold, p_keep_order, p_max_bucket, prev.change_seq);
    RETURN QUERY SELECT 'incremental', s.* FROM pgdedup.store_changes(cid, tgt, p_threshold, ord, p_max_bucket,
                                                                      started, region.texts) s;
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
END $$;

-- Pin the search_path of every function in schema pgdedup (the security model: objects planted in
-- other schemas never run inside pgdedup). Each migration that adds functions calls it last.
CREATE FUNCTION pgdedup.pin_search_paths() RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p WHERE p.pronamespace = 'pgdedup'::regnamespace LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, pg_temp', f);
    END LOOP;
END $$;
SELECT pgdedup.pin_search_paths();
ALTER FUNCTION pgdedup.decide_changes(integer, text, double precision, text, integer, bigint, text)
    SET client_min_messages = warning;
-- The incremental path runs many small statements over temp tables without statistics; their
-- cost estimates are large enough to trigger JIT compilation, which then takes most of the time.
ALTER FUNCTION pgdedup.decide_changes(integer, text, double precision, text, integer, bigint, text) SET jit = off;
-- CREATE OR REPLACE reset update_duplicates' settings of revision 6: put them back
ALTER FUNCTION pgdedup.update_duplicates(text, boolean, double precision, text, text, integer, boolean)
    SET client_min_messages = warning;
ALTER FUNCTION pgdedup.update_duplicates(text, boolean, double precision, text, text, integer, boolean) SET jit = off;
