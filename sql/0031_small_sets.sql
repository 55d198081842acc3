-- pgdedup schema, version 31: verify "auto" and texts with fewer features than positions.
-- auto_band assumes that a pair's estimate spreads as a Binomial(num_perm, J) count. When one of
-- the two texts has fewer features than the signature has positions, most of its positions are
-- copies (densification) and bins hide features from one another, so the estimate spreads
-- wider and lumpier: simulated at 0.8 and 128 positions, 8 features a text, a pair at J = 0.78
-- reached the top of the band 1 % of the time (0.1 % promised); at 0.5, 3 features, a pair at
-- J = 0.5 fell under its bottom 1.1 % of the time. Such a pair (a "small" pair: the fewer
-- features of its two texts, below num_perm) is now never accepted by its estimate: it is checked
-- exactly whenever its estimate reaches small_lo, the bottom of the band computed for a quarter
-- of the positions (a standard error twice as wide; in the same simulation, thresholds 0.3-0.95,
-- 3-127 features, no pair at or above the threshold fell below it more than 0.03 % of the time;
-- two-feature texts at J = 1/3 and threshold 0.3, 0.8 %).
-- Applied by migration 0031. Released files are never edited: a change is a new file + migration.

-- The bands of verify "auto" at p_threshold with p_num_perm positions: a pair of two texts of at
-- least p_num_perm features each is accepted by an estimate of hi or more, dropped below lo and
-- checked exactly between (auto_band); a small pair is checked exactly from small_lo up
-- (<= lo) and dropped below it.
CREATE FUNCTION pgdedup.auto_bands(p_threshold double precision, p_num_perm integer,
                                   OUT lo double precision, OUT hi double precision,
                                   OUT small_lo double precision)
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT b.lo, b.hi, least(b.lo, s.lo)
    FROM pgdedup.auto_band(p_threshold, p_num_perm) b, pgdedup.auto_band(p_threshold, greatest(p_num_perm / 4, 1)) s
$$;

-- Every candidate pair with its estimate, the two texts' hashes and the fewer features of the
-- two (fewest), as in revision 20.
DROP FUNCTION pgdedup.estimated_pairs(integer, integer, boolean);
CREATE FUNCTION pgdedup.estimated_pairs(p_collection_id integer, p_max_bucket integer, p_ranked boolean)
RETURNS TABLE (row_a bigint, row_b bigint, text_a bigint, text_b bigint, estimate double precision,
               fewest integer)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    IF NOT (p_ranked AND pgdedup.reusing(p_collection_id, p_max_bucket)
            AND has_table_privilege('pgdedup.candidates', 'SELECT')
            AND has_table_privilege('pgdedup.candidates', 'INSERT')
            AND has_table_privilege('pgdedup.candidates', 'DELETE')) THEN
        RETURN QUERY
            SELECT p.row_a, p.row_b, a.text_hash, b.text_hash, pgdedup.similarity(a.signature, b.signature),
                   least(a.feature_count, b.feature_count)
            FROM pgdedup.candidate_pairs(p_collection_id, p_max_bucket, p_ranked) p
            JOIN pgdedup.signatures a ON a.collection_id = p_collection_id AND a.row_id = p.row_a
            JOIN pgdedup.signatures b ON b.collection_id = p_collection_id AND b.row_id = p.row_b;
        RETURN;
    END IF;
    INSERT INTO pgdedup.candidates (collection_id, row_a, row_b)
        SELECT p_collection_id, p.row_a, p.row_b FROM pgdedup.candidate_pairs(p_collection_id, p_max_bucket, true) p;
    RETURN QUERY
        SELECT p.row_a, p.row_b, a.text_hash, b.text_hash, pgdedup.similarity(a.signature, b.signature),
               least(a.feature_count, b.feature_count)
        FROM pgdedup.candidates p
        JOIN pgdedup.signatures a ON a.collection_id = p_collection_id AND a.row_id = p.row_a
        JOIN pgdedup.signatures b ON b.collection_id = p_collection_id AND b.row_id = p.row_b
        WHERE p.collection_id = p_collection_id;
    DELETE FROM pgdedup.candidates c WHERE c.collection_id = p_collection_id;
END $$;
ALTER FUNCTION pgdedup.estimated_pairs(integer, integer, boolean) SET min_parallel_table_scan_size = 0;

-- Candidate pairs that verify "auto" accepts, as in revision 15, with small pairs always decided
-- by their exact Jaccard (from small_lo up).
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
    SELECT b.lo, b.hi, b.small_lo, c.num_perm INTO band
    FROM pgdedup.collections c, pgdedup.auto_bands(p_threshold, c.num_perm) b
    WHERE c.collection_id = p_collection_id;
    RETURN QUERY EXECUTE format(
        'SELECT v.row_a, v.row_b, v.similarity FROM (
             SELECT e.row_a, e.row_b,
                    CASE WHEN e.fewest >= $8 AND e.estimate >= $6 THEN e.estimate
                         ELSE coalesce((SELECT ch.similarity FROM pgdedup.checked ch
                                        WHERE ch.collection_id = $1 AND ch.text_a = least(e.text_a, e.text_b)
                                          AND ch.text_b = greatest(e.text_a, e.text_b)),
                                       pgdedup.no_exact_check($1)) END AS similarity
             FROM %s e
             WHERE e.estimate >= CASE WHEN e.fewest < $8 THEN $7 ELSE $5 END
         ) v
         WHERE v.similarity >= $2', source)
        USING p_collection_id, p_threshold, p_max_bucket, p_ranked, band.lo, band.hi, band.small_lo, band.num_perm;
END $$;

-- The candidate pairs verify "auto" must check exactly that have no check yet, as in revision 11,
-- small pairs included.
CREATE OR REPLACE FUNCTION pgdedup.unchecked_pairs(p_collection_id integer, p_threshold double precision,
                                                   p_max_bucket integer, p_ranked boolean)
RETURNS TABLE (row_a bigint, row_b bigint, text_a bigint, text_b bigint)
LANGUAGE sql STABLE AS $$
    SELECT e.row_a, e.row_b, least(e.text_a, e.text_b), greatest(e.text_a, e.text_b)
    FROM pgdedup.collections c, pgdedup.auto_bands(p_threshold, c.num_perm) band,
         pgdedup.estimated_pairs(p_collection_id, p_max_bucket, p_ranked) e
    WHERE c.collection_id = p_collection_id
      AND CASE WHEN e.fewest < c.num_perm THEN e.estimate >= band.small_lo
               ELSE e.estimate >= band.lo AND e.estimate < band.hi END
      AND NOT EXISTS (SELECT 1 FROM pgdedup.checked ch
                      WHERE ch.collection_id = p_collection_id
                        AND ch.text_a = least(e.text_a, e.text_b) AND ch.text_b = greatest(e.text_a, e.text_b))
$$;

-- The pairs without an exact check that an incremental auto run is likely to meet, as in
-- revision 11, small pairs included.
CREATE OR REPLACE FUNCTION pgdedup.probable_unchecked(p_collection_id integer, p_target text, p_threshold double precision,
                                                      p_max_bucket integer)
RETURNS TABLE (row_a bigint, row_b bigint, text_a bigint, text_b bigint)
LANGUAGE sql STABLE AS $$
    WITH changed AS (
        SELECT DISTINCT g.row_id, g.text_hash, g.signature, g.buckets, g.feature_count
        FROM pgdedup.results r
        JOIN pgdedup.changes ch ON ch.collection_id = r.collection_id AND ch.seq > coalesce(r.change_seq, 0)
        JOIN pgdedup.signatures g ON g.collection_id = r.collection_id AND g.row_key = ch.row_key
                                 AND g.feature_count > 0
        WHERE r.collection_id = p_collection_id AND r.target = p_target
    ), mates AS (
        SELECT DISTINCT c.row_id AS ra, c.text_hash AS ha, c.signature AS sa, c.feature_count AS fa, k.row_id AS rb
        FROM changed c
        CROSS JOIN LATERAL unnest(c.buckets) WITH ORDINALITY AS u(bucket, band)
        JOIN pgdedup.band_keys k ON k.collection_id = p_collection_id AND k.band = u.band - 1
                                AND k.bucket = u.bucket AND k.row_id <> c.row_id
        WHERE (SELECT count(*) FROM pgdedup.band_keys k2
               WHERE k2.collection_id = p_collection_id AND k2.band = u.band - 1 AND k2.bucket = u.bucket)
              <= p_max_bucket
    )
    SELECT DISTINCT ON (least(m.ha, g.text_hash), greatest(m.ha, g.text_hash))
           m.ra, m.rb, least(m.ha, g.text_hash), greatest(m.ha, g.text_hash)
    FROM mates m
    JOIN pgdedup.signatures g ON g.collection_id = p_collection_id AND g.row_id = m.rb
                             AND g.text_hash <> m.ha AND g.feature_count > 0
    CROSS JOIN LATERAL (SELECT pgdedup.similarity(m.sa, g.signature) AS estimate,
                               least(m.fa, g.feature_count) AS fewest) e,
         pgdedup.collections c, pgdedup.auto_bands(p_threshold, c.num_perm) band
    WHERE c.collection_id = p_collection_id
      AND CASE WHEN e.fewest < c.num_perm THEN e.estimate >= band.small_lo
               ELSE e.estimate >= band.lo AND e.estimate < band.hi END
      AND NOT EXISTS (SELECT 1 FROM pgdedup.checked ch
                      WHERE ch.collection_id = p_collection_id
                        AND ch.text_a = least(m.ha, g.text_hash) AND ch.text_b = greatest(m.ha, g.text_hash))
    ORDER BY least(m.ha, g.text_hash), greatest(m.ha, g.text_hash)
$$;

-- The lowest estimate an edge can have, as in revision 11: with verify "auto", the bottom of
-- the small pairs' band (an incremental run looks that far for the neighbours of a text that
-- left; for a collection without small pairs, a little further than it needs).
CREATE OR REPLACE FUNCTION pgdedup.edge_floor(p_collection_id integer, p_threshold double precision,
                                              p_verify text)
RETURNS double precision
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN p_verify = 'auto'
                THEN (SELECT b.small_lo FROM pgdedup.collections c, pgdedup.auto_bands(p_threshold, c.num_perm) b
                      WHERE c.collection_id = p_collection_id)
                ELSE p_threshold END
$$;

-- The incremental decision's judgement of a closure step, as in revision 11, with small pairs
-- always decided by their exact Jaccard (the step's pairs carry no feature counts: read here).
CREATE OR REPLACE FUNCTION pgdedup.judge_pairs(p_collection_id integer, p_threshold double precision,
                                               p_verify text)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    band record;
BEGIN
    IF p_verify <> 'auto' THEN
        INSERT INTO pg_temp.pgdedup_edges
            SELECT s.fh, s.mh, s.estimate FROM pg_temp.pgdedup_step_pairs s WHERE s.estimate >= p_threshold;
        RETURN;
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
    INSERT INTO pg_temp.pgdedup_edges
        SELECT s.fh, s.mh, CASE WHEN s.verdict = 'accept' THEN s.estimate ELSE ch.similarity END
        FROM pg_temp.pgdedup_judged s
        LEFT JOIN pgdedup.checked ch ON ch.collection_id = p_collection_id AND s.verdict = 'check'
                                    AND ch.text_a = least(s.fh, s.mh) AND ch.text_b = greatest(s.fh, s.mh)
        WHERE s.verdict = 'accept' OR (s.verdict = 'check' AND ch.similarity >= p_threshold);
    DROP TABLE pg_temp.pgdedup_judged;
END $$;

-- The ambiguous pairs of a full auto run without an exact check (pg_temp.pgdedup_estimated, the
-- run's candidates) into pg_temp.pgdedup_unchecked; whether there were any.
CREATE FUNCTION pgdedup.collect_unchecked(p_collection_id integer, p_threshold double precision)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pg_temp.pgdedup_unchecked
        SELECT e.row_a, e.row_b, least(e.text_a, e.text_b), greatest(e.text_a, e.text_b)
        FROM pg_temp.pgdedup_estimated e, pgdedup.collections c, pgdedup.auto_bands(p_threshold, c.num_perm) band
        WHERE c.collection_id = p_collection_id
          AND CASE WHEN e.fewest < c.num_perm THEN e.estimate >= band.small_lo
                   ELSE e.estimate >= band.lo AND e.estimate < band.hi END
          AND NOT EXISTS (SELECT 1 FROM pgdedup.checked ch
                          WHERE ch.collection_id = p_collection_id AND ch.text_a = least(e.text_a, e.text_b)
                            AND ch.text_b = greatest(e.text_a, e.text_b));
    RETURN FOUND;
END $$;

-- What the stored signatures say about two rows, as in revision 12, with the ambiguous band of
-- their kind of pair (a small pair's reaches 2: never accepted by its estimate).
CREATE OR REPLACE FUNCTION pgdedup.explain(p_collection text, p_key_a anyelement, p_key_b anyelement)
RETURNS TABLE (estimate double precision, feature_count_a integer, feature_count_b integer,
               bands integer, shared_bands integer[], ambiguous_from double precision,
               ambiguous_to double precision, threshold double precision)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    cid integer := pgdedup.collection_id(p_collection);
    c pgdedup.collections;
    a pgdedup.signatures;
    b pgdedup.signatures;
    band record;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = cid;
    SELECT * INTO a FROM pgdedup.signatures s
    WHERE s.collection_id = cid AND s.row_key = pgdedup.key_text(cid, p_key_a::text);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'collection "%" has no row with key "%"', p_collection, p_key_a USING ERRCODE = 'PD002';
    END IF;
    SELECT * INTO b FROM pgdedup.signatures s
    WHERE s.collection_id = cid AND s.row_key = pgdedup.key_text(cid, p_key_b::text);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'collection "%" has no row with key "%"', p_collection, p_key_b USING ERRCODE = 'PD002';
    END IF;
    SELECT * INTO band FROM pgdedup.auto_bands(c.threshold, c.num_perm);
    RETURN QUERY SELECT
        pgdedup.similarity(a.signature, b.signature), a.feature_count, b.feature_count, c.bands,
        coalesce(ARRAY(SELECT i FROM generate_series(1, least(cardinality(a.buckets), cardinality(b.buckets))) i
                       WHERE a.buckets[i] = b.buckets[i] ORDER BY i), '{}'),
        CASE WHEN least(a.feature_count, b.feature_count) < c.num_perm THEN band.small_lo ELSE band.lo END,
        CASE WHEN least(a.feature_count, b.feature_count) < c.num_perm THEN 2 ELSE band.hi END,
        c.threshold;
END $$;

-- The dedupe of a collection, as in revision 15 (update_duplicates' body since revision 24),
-- with the ambiguous pairs of a full auto run collected by collect_unchecked.
CREATE OR REPLACE FUNCTION pgdedup.update_duplicates_unchecked(p_collection text, p_alter boolean DEFAULT true,
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
            IF pgdedup.collect_unchecked(cid, coalesce(p_threshold, c.threshold)) THEN
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
-- CREATE OR REPLACE reset its settings of revisions 11 and 15: put them back
ALTER FUNCTION pgdedup.update_duplicates_unchecked(text, boolean, double precision, text, text, integer, boolean, text)
    SET client_min_messages = warning;
ALTER FUNCTION pgdedup.update_duplicates_unchecked(text, boolean, double precision, text, text, integer, boolean, text)
    SET jit = off;
