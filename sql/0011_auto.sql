-- pgdedup schema, version 11: verify "auto". A candidate pair's estimate decides it when it is
-- far enough from the threshold; only the ambiguous band around the threshold is decided by
-- exact Jaccard, computed by the Python side from the source text and kept per pair of texts.
-- Applied by migration 0011. Released files are never edited: a change is a new file + migration.

-- Exact Jaccard of two texts of a collection (by text hash, text_a < text_b), for the pairs
-- whose estimate was ambiguous. It depends on the two texts and the feature settings only, so
-- it stays true for as long as the collection keeps its settings (a re-index with others
-- clears it), whatever happens to other rows.
CREATE TABLE pgdedup.checked (
    collection_id   integer NOT NULL REFERENCES pgdedup.collections ON DELETE CASCADE,
    text_a          bigint NOT NULL,
    text_b          bigint NOT NULL,
    similarity      double precision NOT NULL,
    PRIMARY KEY (collection_id, text_a, text_b),
    CHECK (text_a < text_b)
);
REVOKE ALL ON pgdedup.checked FROM PUBLIC;
ALTER TABLE pgdedup.checked ENABLE ROW LEVEL SECURITY;
CREATE POLICY readable_collection ON pgdedup.checked
    USING (collection_id IN (SELECT c.collection_id FROM pgdedup.collections c));

-- The ambiguous band of estimates at threshold p_threshold with p_num_perm hash functions: a
-- pair estimated at hi or above is accepted, one below lo dropped, one in [lo, hi) checked
-- exactly. The estimate of a pair whose Jaccard is J counts agreeing positions out of k, a
-- Binomial(k, J) variable; hi is the smallest estimate that a pair exactly at the threshold
-- (hence any pair below it, less likely still) reaches with probability at most 1e-3, and lo
-- the largest that such a pair (hence any pair above it) stays below with probability at most
-- 1e-3. hi is 2 (nothing accepted unchecked) when even an estimate of 1 is not that rare.
CREATE FUNCTION pgdedup.auto_band(p_threshold double precision, p_num_perm integer,
                                  OUT lo double precision, OUT hi double precision)
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    alpha constant double precision := 1e-3;
    k integer := p_num_perm;
    t double precision := p_threshold;
    lp double precision[];  -- lp[m + 1] = ln P(count = m)
    tail double precision;
BEGIN
    IF t >= 1 THEN  -- only exact copies count: every candidate is checked
        lo := 1;
        hi := 2;
        RETURN;
    END IF;
    lp := array_fill(0::double precision, ARRAY[k + 1]);
    lp[1] := k * ln(1 - t);
    FOR m IN 0 .. k - 1 LOOP
        lp[m + 2] := lp[m + 1] + ln((k - m)::double precision / (m + 1)) + ln(t / (1 - t));
    END LOOP;
    hi := 2;
    tail := 0;
    FOR m IN REVERSE k .. 0 LOOP
        tail := tail + exp(greatest(lp[m + 1], -700));  -- exp() raises on underflow
        EXIT WHEN tail > alpha;
        hi := m::double precision / k;
    END LOOP;
    lo := 0;
    tail := 0;
    FOR m IN 0 .. k LOOP
        tail := tail + exp(greatest(lp[m + 1], -700));  -- exp() raises on underflow
        EXIT WHEN tail > alpha;
        lo := (m + 1)::double precision / k;
    END LOOP;
END $$;

-- Raised by auto edges for an ambiguous pair that has no exact check yet (SQL cannot shingle).
CREATE FUNCTION pgdedup.no_exact_check(p_collection_id integer) RETURNS double precision
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RAISE EXCEPTION 'collection "%" has candidate pairs whose estimate is too close to the threshold to decide and that have not been checked exactly yet',
        (SELECT c.name FROM pgdedup.collections c WHERE c.collection_id = p_collection_id)
        USING ERRCODE = 'PD004',
              HINT = 'pgdedup dedupe/pairs --verify auto checks them (the SQL functions cannot: exact Jaccard needs the Python shingler)';
END $$;

-- Every candidate pair with its estimate and the two texts' hashes.
CREATE FUNCTION pgdedup.estimated_pairs(p_collection_id integer, p_max_bucket integer, p_ranked boolean)
RETURNS TABLE (row_a bigint, row_b bigint, text_a bigint, text_b bigint, estimate double precision)
LANGUAGE sql STABLE AS $$
    SELECT p.row_a, p.row_b, a.text_hash, b.text_hash, pgdedup.similarity(a.signature, b.signature)
    FROM pgdedup.candidate_pairs(p_collection_id, p_max_bucket, p_ranked) p
    JOIN pgdedup.signatures a ON a.collection_id = p_collection_id AND a.row_id = p.row_a
    JOIN pgdedup.signatures b ON b.collection_id = p_collection_id AND b.row_id = p.row_b
$$;

-- Candidate pairs that verify "auto" accepts: the estimate where it is outside the ambiguous
-- band, else the stored exact Jaccard (pgdedup.no_exact_check raises where there is none); at
-- or above p_threshold. The candidates and their estimates come from pg_temp.pgdedup_estimated
-- when update_duplicates has just computed them there for the decision it is running (it sets
-- pgdedup.reuse_estimated for that call only), else afresh.
CREATE FUNCTION pgdedup.auto_pairs(p_collection_id integer, p_threshold double precision,
                                   p_max_bucket integer, p_ranked boolean)
RETURNS TABLE (row_a bigint, row_b bigint, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    band record;
    source text := 'pgdedup.estimated_pairs($1, $3, $4)';
BEGIN
    -- only inside update_duplicates' own decision, which sets pgdedup.reuse_estimated around it
    IF p_ranked AND current_setting('pgdedup.reuse_estimated', true) = 'on'
       AND to_regclass('pg_temp.pgdedup_estimated_for') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pg_temp.pgdedup_estimated_for f
                   WHERE f.collection_id = p_collection_id AND f.max_bucket = p_max_bucket) THEN
            source := 'pg_temp.pgdedup_estimated';
        END IF;
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

-- The ambiguous candidate pairs that have no exact check yet: what verify "auto" must check
-- (by the Python side) before auto_pairs can answer.
CREATE FUNCTION pgdedup.unchecked_pairs(p_collection_id integer, p_threshold double precision,
                                        p_max_bucket integer, p_ranked boolean)
RETURNS TABLE (row_a bigint, row_b bigint, text_a bigint, text_b bigint)
LANGUAGE sql STABLE AS $$
    SELECT e.row_a, e.row_b, least(e.text_a, e.text_b), greatest(e.text_a, e.text_b)
    FROM pgdedup.collections c, pgdedup.auto_band(p_threshold, c.num_perm) band,
         pgdedup.estimated_pairs(p_collection_id, p_max_bucket, p_ranked) e
    WHERE c.collection_id = p_collection_id AND e.estimate >= band.lo AND e.estimate < band.hi
      AND NOT EXISTS (SELECT 1 FROM pgdedup.checked ch
                      WHERE ch.collection_id = p_collection_id
                        AND ch.text_a = least(e.text_a, e.text_b) AND ch.text_b = greatest(e.text_a, e.text_b))
$$;

-- The ambiguous pairs without an exact check that an incremental auto run of target p_target is
-- likely to meet: the text each row changed since that result has now, with every other text
-- in its buckets of at most p_max_bucket rows. Checked before the run starts, they spare it
-- the second pass that an 'unchecked' answer costs; what they miss, the run still asks for.
CREATE FUNCTION pgdedup.probable_unchecked(p_collection_id integer, p_target text, p_threshold double precision,
                                           p_max_bucket integer)
RETURNS TABLE (row_a bigint, row_b bigint, text_a bigint, text_b bigint)
LANGUAGE sql STABLE AS $$
    WITH changed AS (
        SELECT DISTINCT g.row_id, g.text_hash, g.signature, g.buckets
        FROM pgdedup.results r
        JOIN pgdedup.changes ch ON ch.collection_id = r.collection_id AND ch.seq > coalesce(r.change_seq, 0)
        JOIN pgdedup.signatures g ON g.collection_id = r.collection_id AND g.row_key = ch.row_key
                                 AND g.feature_count > 0
        WHERE r.collection_id = p_collection_id AND r.target = p_target
    ), mates AS (
        SELECT DISTINCT c.row_id AS ra, c.text_hash AS ha, c.signature AS sa, k.row_id AS rb
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
    CROSS JOIN LATERAL (SELECT pgdedup.similarity(m.sa, g.signature) AS estimate) e,
         pgdedup.collections c, pgdedup.auto_band(p_threshold, c.num_perm) band
    WHERE c.collection_id = p_collection_id AND e.estimate >= band.lo AND e.estimate < band.hi
      AND NOT EXISTS (SELECT 1 FROM pgdedup.checked ch
                      WHERE ch.collection_id = p_collection_id
                        AND ch.text_a = least(m.ha, g.text_hash) AND ch.text_b = greatest(m.ha, g.text_hash))
    ORDER BY least(m.ha, g.text_hash), greatest(m.ha, g.text_hash)
$$;

-- The arguments the dedupe functions share, as in revision 3, with verify "auto".
CREATE OR REPLACE FUNCTION pgdedup.check_args(p_threshold double precision, p_max_bucket integer DEFAULT 100,
                                              p_verify text DEFAULT 'estimate', p_limit integer DEFAULT 1)
RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF p_threshold IS NOT NULL AND NOT (p_threshold > 0 AND p_threshold <= 1) THEN  -- NaN fails too
        RAISE EXCEPTION 'threshold must be in (0, 1], not %', p_threshold USING ERRCODE = 'PD003';
    END IF;
    IF p_max_bucket IS NULL OR p_max_bucket < 1 THEN
        RAISE EXCEPTION 'max_bucket must be a positive integer, not %', coalesce(p_max_bucket::text, 'NULL')
            USING ERRCODE = 'PD003';
    END IF;
    IF p_verify IS NULL OR p_verify NOT IN ('estimate', 'auto', 'exact') THEN
        RAISE EXCEPTION 'verify must be estimate, auto or exact, not %', coalesce(p_verify, 'NULL')
            USING ERRCODE = 'PD003';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'limit must be a positive integer, not %', coalesce(p_limit::text, 'NULL')
            USING ERRCODE = 'PD003';
    END IF;
END $$;

-- Edges, as in revision 4, with verify "auto" (auto_pairs).
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

-- The lowest estimate an edge can have, as in revision 9, with verify "auto": the bottom of the
-- ambiguous band (a pair estimated in the band is an edge when its exact Jaccard says so).
CREATE OR REPLACE FUNCTION pgdedup.edge_floor(p_collection_id integer, p_threshold double precision,
                                              p_verify text)
RETURNS double precision
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN p_verify = 'auto'
                THEN (SELECT b.lo FROM pgdedup.collections c, pgdedup.auto_band(p_threshold, c.num_perm) b
                      WHERE c.collection_id = p_collection_id)
                ELSE p_threshold END
$$;

-- The incremental decision's judgement of a closure step, as in revision 9, with verify "auto":
-- an estimate at or above the band's top is an edge; one in the band is an edge if the pair's
-- stored exact Jaccard reaches the threshold, and a pair with no exact check yet goes to
-- pg_temp.pgdedup_unchecked (row_a, row_b, text_a, text_b) for the Python side to check
-- (update_duplicates then stops and asks for them).
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
    SELECT b.lo, b.hi INTO band FROM pgdedup.collections c, pgdedup.auto_band(p_threshold, c.num_perm) b
    WHERE c.collection_id = p_collection_id;
    INSERT INTO pg_temp.pgdedup_unchecked
        SELECT s.frow, s.mrow, least(s.fh, s.mh), greatest(s.fh, s.mh) FROM pg_temp.pgdedup_step_pairs s
        WHERE s.estimate >= band.lo AND s.estimate < band.hi
          AND NOT EXISTS (SELECT 1 FROM pgdedup.checked ch
                          WHERE ch.collection_id = p_collection_id
                            AND ch.text_a = least(s.fh, s.mh) AND ch.text_b = greatest(s.fh, s.mh));
    INSERT INTO pg_temp.pgdedup_edges
        SELECT s.fh, s.mh, CASE WHEN s.estimate >= band.hi THEN s.estimate ELSE ch.similarity END
        FROM pg_temp.pgdedup_step_pairs s
        LEFT JOIN pgdedup.checked ch ON ch.collection_id = p_collection_id AND s.estimate < band.hi
                                    AND ch.text_a = least(s.fh, s.mh) AND ch.text_b = greatest(s.fh, s.mh)
        WHERE s.estimate >= band.hi OR (s.estimate >= band.lo AND ch.similarity >= p_threshold);
END $$;

-- Bring one target up to date, as in revision 9, by estimate or by verify "auto". An auto run
-- needs the exact Jaccard of the ambiguous pairs it meets: when some have none yet, it writes
-- nothing, leaves them in pg_temp.pgdedup_unchecked (row_a, row_b, text_a, text_b) and returns
-- the single row ('unchecked', their number, 0, 0); the caller checks them (pgdedup.checked)
-- and calls again in the same transaction. A result is incremental only for the same verify mode.
DROP FUNCTION pgdedup.update_duplicates(text, boolean, double precision, text, text, integer, boolean);
CREATE FUNCTION pgdedup.update_duplicates(p_collection text, p_alter boolean DEFAULT true,
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
        IF p_verify = 'auto' THEN  -- candidates once: kept for the call after the checks, and the decision
            -- the candidates of an earlier call in this transaction, if made for this very decision:
            -- same collection, cap, keep order, index version and last logged change
            reuse := to_regclass('pg_temp.pgdedup_estimated_for') IS NOT NULL;
            IF reuse THEN  -- (a separate statement: the table may not exist)
                reuse := EXISTS (SELECT 1 FROM pg_temp.pgdedup_estimated_for f
                                 WHERE f.collection_id = cid AND f.max_bucket = p_max_bucket AND f.keep_order = ord
                                   AND f.index_version = c.index_version
                                   AND f.change_seq IS NOT DISTINCT FROM
                                       (SELECT max(ch.seq) FROM pgdedup.changes ch WHERE ch.collection_id = cid));
            END IF;
            IF NOT reuse THEN
                DROP TABLE IF EXISTS pg_temp.pgdedup_estimated, pg_temp.pgdedup_estimated_for;
                PERFORM pgdedup.rank_rows(cid, p_keep_order);
                CREATE TEMP TABLE pgdedup_estimated ON COMMIT DROP AS
                    SELECT * FROM pgdedup.estimated_pairs(cid, p_max_bucket, true);
                CREATE TEMP TABLE pgdedup_estimated_for ON COMMIT DROP AS
                    SELECT cid AS collection_id, p_max_bucket AS max_bucket, ord AS keep_order,
                           c.index_version, (SELECT max(ch.seq) FROM pgdedup.changes ch
                                             WHERE ch.collection_id = cid) AS change_seq;
                t0 := pgdedup.stage(format('%s candidate pairs estimated', (SELECT count(*) FROM pg_temp.pgdedup_estimated)), t0);
            END IF;
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
        DROP TABLE IF EXISTS pg_temp.pgdedup_estimated, pg_temp.pgdedup_estimated_for;  -- used up
        RETURN;
    END IF;
    DROP TABLE IF EXISTS pg_temp.pgdedup_estimated, pg_temp.pgdedup_estimated_for;  -- a full run's only
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
ALTER FUNCTION pgdedup.update_duplicates(text, boolean, double precision, text, text, integer, boolean, text)
    SET client_min_messages = warning;
-- many small statements over temp tables without statistics: JIT would take most of the time
ALTER FUNCTION pgdedup.update_duplicates(text, boolean, double precision, text, text, integer, boolean, text)
    SET jit = off;
