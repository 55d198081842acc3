-- pgdedup schema, version 6: living collections. Change tracking on the source table (a queue
-- filled by triggers in the writer's transaction), a log of what each index run changed, and a
-- dedupe that re-walks only what those changes can affect and gives exactly a full run's marks.
-- Applied by migration 0006. Released files are never edited: a change is a new file + migration.

-- Tracking ---------------------------------------------------------------------------------------

ALTER TABLE pgdedup.collections ADD COLUMN tracked boolean NOT NULL DEFAULT false;

-- Keys written since they were last signed, in the writers' own transactions. row_key NULL
-- means "compare every row" (after a TRUNCATE, or when tracking starts).
CREATE TABLE pgdedup.queue (
    seq             bigserial PRIMARY KEY,
    collection_id   integer NOT NULL REFERENCES pgdedup.collections ON DELETE CASCADE,
    row_key         text,
    queued_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX queue_collection ON pgdedup.queue (collection_id, seq);

-- What index runs changed since the results were computed: one row per signed, re-signed,
-- removed or touched key, with the text and buckets it had before (NULL for a new row).
-- Written in the transaction that changes the signature; read and pruned by dedupe.
CREATE TABLE pgdedup.changes (
    seq             bigserial PRIMARY KEY,
    collection_id   integer NOT NULL REFERENCES pgdedup.collections ON DELETE CASCADE,
    row_key         text NOT NULL,
    old_text_hash   bigint,
    old_buckets     bigint[]
);
CREATE INDEX changes_collection ON pgdedup.changes (collection_id, seq);

-- The last change each result has taken in (NULL: computed before changes were logged).
ALTER TABLE pgdedup.results ADD COLUMN change_seq bigint;

REVOKE ALL ON pgdedup.queue, pgdedup.changes FROM PUBLIC;
ALTER TABLE pgdedup.queue ENABLE ROW LEVEL SECURITY;
ALTER TABLE pgdedup.changes ENABLE ROW LEVEL SECURITY;
CREATE POLICY readable_collection ON pgdedup.queue
    USING (collection_id IN (SELECT c.collection_id FROM pgdedup.collections c));
CREATE POLICY readable_collection ON pgdedup.changes
    USING (collection_id IN (SELECT c.collection_id FROM pgdedup.collections c));

-- The trigger function: queue the keys a statement wrote, and NOTIFY channel 'pgdedup' with
-- the collection's name. SECURITY DEFINER (owned by pgdedup's owner), so roles that write the
-- source table need no grant on pgdedup's tables. It serves only the table the collection
-- reads: on any other (the source renamed, or a trigger made by hand) it does nothing, so the
-- writer's statement never fails because of pgdedup. It skips pgdedup's own marking writes
-- (setting pgdedup.marking).
CREATE FUNCTION pgdedup.capture() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    c pgdedup.collections;
BEGIN
    IF current_setting('pgdedup.marking', true) = 'on' THEN
        RETURN NULL;
    END IF;
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = TG_ARGV[0]::integer;
    IF NOT FOUND OR to_regclass(format('%I.%I', c.source_schema, c.source_table)) IS DISTINCT FROM TG_RELID THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'TRUNCATE' THEN
        INSERT INTO pgdedup.queue (collection_id, row_key) VALUES (c.collection_id, NULL);
    ELSIF TG_OP = 'INSERT' THEN
        EXECUTE format('INSERT INTO pgdedup.queue (collection_id, row_key)
                        SELECT $1, n.%1$I::text FROM pgdedup_new n WHERE n.%1$I IS NOT NULL', c.key_column)
            USING c.collection_id;
    ELSIF TG_OP = 'DELETE' THEN
        EXECUTE format('INSERT INTO pgdedup.queue (collection_id, row_key)
                        SELECT $1, o.%1$I::text FROM pgdedup_old o WHERE o.%1$I IS NOT NULL', c.key_column)
            USING c.collection_id;
    ELSE
        EXECUTE format('INSERT INTO pgdedup.queue (collection_id, row_key)
                        SELECT $1, k FROM (SELECT n.%1$I::text FROM pgdedup_new n
                                           UNION SELECT o.%1$I::text FROM pgdedup_old o) AS u(k)
                        WHERE k IS NOT NULL', c.key_column)
            USING c.collection_id;
    END IF;
    PERFORM pg_notify('pgdedup', c.name);
    RETURN NULL;
END $$;

-- Start (p_on) or stop tracking a collection's source table. Needs the right to create
-- triggers on it (its owner, or TRIGGER privilege). Starting queues "compare every row" once,
-- so the next index catches up with what happened before tracking began; stopping empties the
-- queue (an untracked collection compares every row on each index run).
CREATE FUNCTION pgdedup.track(p_collection text, p_on boolean DEFAULT true) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    rel regclass;
    kind "char";
    prefix text;
    trig record;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.lock_collection(c.collection_id);
    IF current_setting('lock_timeout') = '0' THEN
        PERFORM set_config('lock_timeout', '5s', true);  -- CREATE/DROP TRIGGER lock the table briefly
    END IF;
    prefix := format('pgdedup_track_%s_', c.collection_id);
    rel := to_regclass(format('%I.%I', c.source_schema, c.source_table));
    IF p_on AND rel IS NOT NULL AND NOT has_table_privilege(rel, 'TRIGGER') THEN
        RAISE EXCEPTION 'tracking %.% needs its owner (or the TRIGGER privilege on it); role "%" has neither',
            c.source_schema, c.source_table, current_user USING ERRCODE = '42501';
    END IF;
    -- the collection's triggers wherever they are (a renamed source keeps them)
    FOR trig IN SELECT t.tgname, t.tgrelid FROM pg_trigger t
                WHERE t.tgfoid = 'pgdedup.capture()'::regprocedure AND starts_with(t.tgname, prefix) LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', trig.tgname, trig.tgrelid::regclass);
    END LOOP;
    IF rel IS NULL OR NOT p_on THEN
        UPDATE pgdedup.collections SET tracked = false WHERE collection_id = c.collection_id;
        DELETE FROM pgdedup.queue WHERE collection_id = c.collection_id;
        IF NOT p_on THEN
            RETURN false;
        END IF;
        RAISE EXCEPTION 'the source table %.% of collection "%" does not exist (renamed or dropped?)',
            c.source_schema, c.source_table, c.name USING ERRCODE = 'PD006';
    END IF;
    SELECT relkind INTO kind FROM pg_class WHERE oid = rel;
    IF kind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '%.% is not a table, so it cannot be tracked (triggers need a table)',
            c.source_schema, c.source_table USING ERRCODE = 'PD006';
    END IF;
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS pgdedup_new
                    FOR EACH STATEMENT EXECUTE FUNCTION pgdedup.capture(%s)', prefix || 'insert', rel, c.collection_id);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s REFERENCING OLD TABLE AS pgdedup_old NEW TABLE AS pgdedup_new
                    FOR EACH STATEMENT EXECUTE FUNCTION pgdedup.capture(%s)', prefix || 'update', rel, c.collection_id);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS pgdedup_old
                    FOR EACH STATEMENT EXECUTE FUNCTION pgdedup.capture(%s)', prefix || 'delete', rel, c.collection_id);
    EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %s
                    FOR EACH STATEMENT EXECUTE FUNCTION pgdedup.capture(%s)', prefix || 'truncate', rel, c.collection_id);
    IF NOT c.tracked THEN
        INSERT INTO pgdedup.queue (collection_id, row_key) VALUES (c.collection_id, NULL);
    END IF;
    UPDATE pgdedup.collections SET tracked = true WHERE collection_id = c.collection_id;
    RETURN true;
END $$;

-- Forget a collection, as in revision 4, removing its tracking triggers first.
CREATE OR REPLACE FUNCTION pgdedup.drop_collection(p_collection text, p_unmark boolean DEFAULT false) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    forgotten bigint;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.lock_collection(c.collection_id);
    PERFORM pgdedup.track(p_collection, false);
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

-- The change log ---------------------------------------------------------------------------------

-- Log that the rows with these keys are about to change (their current text and buckets, NULL
-- for rows not signed yet). Call it in the transaction that changes them, before the change.
-- Nothing is logged while the collection has no dedupe result to keep current.
CREATE FUNCTION pgdedup.log_changes(p_collection_id integer, p_keys text[]) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO pgdedup.changes (collection_id, row_key, old_text_hash, old_buckets)
    SELECT p_collection_id, k.key, g.text_hash, g.buckets
    FROM unnest(p_keys) AS k(key)
    LEFT JOIN pgdedup.signatures g ON g.collection_id = p_collection_id AND g.row_key = k.key
    WHERE EXISTS (SELECT 1 FROM pgdedup.results r
                  WHERE r.collection_id = p_collection_id AND r.target IN ('view', 'column'))
$$;

-- The walk, shared by the full and the incremental dedupe ------------------------------------------

-- Walk the rows of pg_temp.pgdedup_rows (row_id, row_key, text_hash, rnk) that have an edge in
-- pg_temp.pgdedup_edges (h1, h2, similarity: both directions; the self edge of each text held by
-- several rows is added here) in keep order; a row with an edge to an already kept text is a duplicate of the
-- most similar such text's kept row (ties: the earliest kept), otherwise it is kept. Decisions go
-- to pg_temp.pgdedup_marks (row_key, duplicate_of, similarity): every duplicate points at a kept
-- row with similarity >= the threshold, never at another duplicate.
CREATE FUNCTION pgdedup.walk() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    best record;
    seqscan text := current_setting('enable_seqscan');
BEGIN
    DROP TABLE IF EXISTS pg_temp.pgdedup_walk, pg_temp.pgdedup_kept, pg_temp.pgdedup_marks;
    INSERT INTO pg_temp.pgdedup_edges
        SELECT text_hash, text_hash, 1.0 FROM pg_temp.pgdedup_rows GROUP BY text_hash HAVING count(*) > 1;
    CREATE INDEX ON pg_temp.pgdedup_edges (h1);
    ANALYZE pg_temp.pgdedup_edges;
    CREATE TEMP TABLE pgdedup_walk ON COMMIT DROP AS
        SELECT * FROM pg_temp.pgdedup_rows WHERE text_hash IN (SELECT h1 FROM pg_temp.pgdedup_edges);
    CREATE TEMP TABLE pgdedup_kept (text_hash bigint, row_id bigint, row_key text, rnk bigint) ON COMMIT DROP;
    CREATE INDEX ON pg_temp.pgdedup_kept (text_hash);
    CREATE TEMP TABLE pgdedup_marks (row_key text, duplicate_of text, similarity double precision) ON COMMIT DROP;
    -- The loop's two statements are planned once, while pgdedup_kept is still tiny; with
    -- sequential scans allowed that plan would scan the growing table on every row (quadratic).
    PERFORM set_config('enable_seqscan', 'off', true);
    FOR r IN SELECT * FROM pg_temp.pgdedup_walk ORDER BY rnk LOOP
        SELECT k.row_key, e.similarity INTO best
        FROM pg_temp.pgdedup_edges e JOIN pg_temp.pgdedup_kept k ON k.text_hash = e.h2
        WHERE e.h1 = r.text_hash
        ORDER BY e.similarity DESC, k.rnk
        LIMIT 1;
        IF FOUND THEN
            INSERT INTO pg_temp.pgdedup_marks VALUES (r.row_key, best.row_key, best.similarity);
        ELSE
            INSERT INTO pg_temp.pgdedup_kept VALUES (r.text_hash, r.row_id, r.row_key, r.rnk);
        END IF;
    END LOOP;
    PERFORM set_config('enable_seqscan', seqscan, true);
END $$;

-- The full decision, as in revision 4, with the walk above.
CREATE OR REPLACE FUNCTION pgdedup.decide(p_collection_id integer, p_threshold double precision, p_keep_order text,
                                          p_max_bucket integer, p_verify text) RETURNS text
LANGUAGE plpgsql SET work_mem = '256MB' AS $$
DECLARE
    cid integer := p_collection_id;
    ord text;
BEGIN
    PERFORM pgdedup.check_args(p_threshold, p_max_bucket, p_verify);
    PERFORM pgdedup.keep_order_sql(cid, p_keep_order);
    PERFORM pgdedup.lock_collection(cid);
    ord := pgdedup.rank_rows(cid, p_keep_order);
    IF p_verify = 'exact' THEN
        PERFORM pgdedup.check_exact_pairs(cid, p_threshold, p_max_bucket, true, ord);
    END IF;
    DROP TABLE IF EXISTS pg_temp.pgdedup_edges;
    -- text-level edges, both directions
    CREATE TEMP TABLE pgdedup_edges ON COMMIT DROP AS
        SELECT sa.text_hash AS h1, sb.text_hash AS h2, v.similarity
        FROM pgdedup.edges(cid, p_threshold, p_max_bucket, p_verify, true) v
        JOIN pgdedup.signatures sa ON sa.collection_id = cid AND sa.row_id = v.row_a
        JOIN pgdedup.signatures sb ON sb.collection_id = cid AND sb.row_id = v.row_b;
    INSERT INTO pg_temp.pgdedup_edges SELECT h2, h1, similarity FROM pg_temp.pgdedup_edges;
    PERFORM pgdedup.walk();
    RETURN ord;
END $$;

-- The incremental decision -------------------------------------------------------------------------

-- Decide again only what the changes logged after p_since can affect, into pg_temp.pgdedup_marks,
-- and list in pg_temp.pgdedup_redone (row_key) every key whose stored decision it replaces.
--
-- Why this equals a full run: a row's decision depends only on its edges to rows earlier in
-- keep order, so the full walk restricted to a set of texts closed under edges (a union of
-- connected components) decides those rows exactly as the full walk does. The seeds are every
-- text of a changed row and every text sharing a bucket (old or new) with a changed row: that
-- covers new and vanished edges, texts whose rows changed, and capped buckets whose leaders may
-- have moved. The closure then follows edges, built with the full run's rules (all pairs in a
-- bucket of at most p_max_bucket texts; in a larger one, pairs with its first p_max_bucket texts
-- in keep order), until no new text appears. Returns (texts re-walked, rows re-examined).
CREATE FUNCTION pgdedup.decide_changes(p_collection_id integer, p_threshold double precision, p_keep_order text,
                                       p_max_bucket integer, p_since bigint,
                                       OUT texts bigint, OUT rows_examined bigint)
LANGUAGE plpgsql SET work_mem = '256MB' AS $$
DECLARE
    cid integer := p_collection_id;
    c pgdedup.collections;
    t double precision;
    ord text := pgdedup.keep_order_sql(p_collection_id, p_keep_order);
    key_type text;
    added bigint;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = cid;
    t := coalesce(p_threshold, c.threshold);
    key_type := pgdedup.key_type_sql(c.key_type);
    DROP TABLE IF EXISTS pg_temp.pgdedup_redone, pg_temp.pgdedup_region, pg_temp.pgdedup_frontier,
        pg_temp.pgdedup_members, pg_temp.pgdedup_leaders, pg_temp.pgdedup_edges, pg_temp.pgdedup_rows;
    CREATE TEMP TABLE pgdedup_redone ON COMMIT DROP AS
        SELECT DISTINCT ch.row_key FROM pgdedup.changes ch WHERE ch.collection_id = cid AND ch.seq > p_since;
    -- the buckets the changed rows were in, and are in now
    CREATE TEMP TABLE pgdedup_members (band smallint, bucket bigint, text_hash bigint, row_id bigint) ON COMMIT DROP;
    CREATE INDEX ON pg_temp.pgdedup_members (band, bucket, text_hash);
    INSERT INTO pg_temp.pgdedup_members (band, bucket)
        SELECT DISTINCT (u.band - 1)::smallint, u.bucket
        FROM pgdedup.changes ch, unnest(ch.old_buckets) WITH ORDINALITY AS u(bucket, band)
        WHERE ch.collection_id = cid AND ch.seq > p_since
        UNION
        SELECT (u.band - 1)::smallint, u.bucket
        FROM pg_temp.pgdedup_redone k
        JOIN pgdedup.signatures g ON g.collection_id = cid AND g.row_key = k.row_key,
             unnest(g.buckets) WITH ORDINALITY AS u(bucket, band);
    -- seeds: their texts, and the texts of changed rows
    CREATE TEMP TABLE pgdedup_region (text_hash bigint PRIMARY KEY, row_id bigint NOT NULL) ON COMMIT DROP;
    CREATE TEMP TABLE pgdedup_frontier (text_hash bigint, row_id bigint) ON COMMIT DROP;
    CREATE TEMP TABLE pgdedup_leaders (band smallint, bucket bigint, text_hash bigint,
                                       PRIMARY KEY (band, bucket, text_hash)) ON COMMIT DROP;
    CREATE TEMP TABLE pgdedup_edges (h1 bigint, h2 bigint, similarity double precision) ON COMMIT DROP;
    PERFORM pgdedup.fill_buckets(cid, ord, key_type, p_max_bucket);
    INSERT INTO pg_temp.pgdedup_region
        SELECT text_hash, min(row_id) FROM (
            SELECT m.text_hash, m.row_id FROM pg_temp.pgdedup_members m WHERE m.text_hash IS NOT NULL
            UNION ALL
            SELECT g.text_hash, g.row_id FROM pg_temp.pgdedup_redone k
            JOIN pgdedup.signatures g ON g.collection_id = cid AND g.row_key = k.row_key AND g.feature_count > 0
        ) s GROUP BY text_hash;
    -- a text's representative is the lowest row id of all its rows
    UPDATE pg_temp.pgdedup_region r SET row_id = g.row_id
    FROM (SELECT r2.text_hash, (SELECT min(s.row_id) FROM pgdedup.signatures s
                                WHERE s.collection_id = cid AND s.text_hash = r2.text_hash) AS row_id
          FROM pg_temp.pgdedup_region r2) g
    WHERE g.text_hash = r.text_hash AND g.row_id <> r.row_id;
    INSERT INTO pg_temp.pgdedup_frontier SELECT text_hash, row_id FROM pg_temp.pgdedup_region;
    -- closure: the edges of the frontier's texts; texts they reach that are new form the next frontier
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
        INSERT INTO pg_temp.pgdedup_edges
            SELECT p.fh, p.mh, pgdedup.similarity(gf.signature, gm.signature)
            FROM (
                SELECT f.text_hash AS fh, f.row_id AS frow, m.text_hash AS mh, m.row_id AS mrow
                FROM pg_temp.pgdedup_frontier f
                JOIN pgdedup.signatures g ON g.collection_id = cid AND g.row_id = f.row_id
                CROSS JOIN LATERAL unnest(g.buckets) WITH ORDINALITY AS u(bucket, band)
                JOIN pg_temp.pgdedup_members m ON m.band = u.band - 1 AND m.bucket = u.bucket
                WHERE m.text_hash <> f.text_hash
                  AND (NOT EXISTS (SELECT 1 FROM pg_temp.pgdedup_leaders l WHERE l.band = m.band AND l.bucket = m.bucket)
                       OR EXISTS (SELECT 1 FROM pg_temp.pgdedup_leaders l
                                  WHERE l.band = m.band AND l.bucket = m.bucket AND l.text_hash = f.text_hash))
                UNION
                SELECT f.text_hash, f.row_id, m.text_hash, m.row_id
                FROM pg_temp.pgdedup_frontier f
                JOIN pgdedup.signatures g ON g.collection_id = cid AND g.row_id = f.row_id
                CROSS JOIN LATERAL unnest(g.buckets) WITH ORDINALITY AS u(bucket, band)
                JOIN pg_temp.pgdedup_leaders l ON l.band = u.band - 1 AND l.bucket = u.bucket AND l.text_hash <> f.text_hash
                JOIN pg_temp.pgdedup_members m ON m.band = l.band AND m.bucket = l.bucket AND m.text_hash = l.text_hash
            ) p
            JOIN pgdedup.signatures gf ON gf.collection_id = cid AND gf.row_id = p.frow
            JOIN pgdedup.signatures gm ON gm.collection_id = cid AND gm.row_id = p.mrow;
        DELETE FROM pg_temp.pgdedup_edges WHERE similarity < t;
        TRUNCATE pg_temp.pgdedup_frontier;
        INSERT INTO pg_temp.pgdedup_frontier
            SELECT DISTINCT e.h2, m.row_id
            FROM pg_temp.pgdedup_edges e
            JOIN LATERAL (SELECT min(s.row_id) AS row_id FROM pgdedup.signatures s
                          WHERE s.collection_id = cid AND s.text_hash = e.h2) m ON true
            WHERE NOT EXISTS (SELECT 1 FROM pg_temp.pgdedup_region r WHERE r.text_hash = e.h2);
        GET DIAGNOSTICS added = ROW_COUNT;
        EXIT WHEN added = 0;
        INSERT INTO pg_temp.pgdedup_region SELECT text_hash, row_id FROM pg_temp.pgdedup_frontier;
    END LOOP;
    -- the region's rows in keep order (only their relative order matters), then the walk
    EXECUTE format(
        'CREATE TEMP TABLE pgdedup_rows ON COMMIT DROP AS
         SELECT g.row_id, g.row_key, g.text_hash, row_number() OVER (ORDER BY %s) AS rnk
         FROM pg_temp.pgdedup_region r
         JOIN pgdedup.signatures g ON g.collection_id = $1 AND g.text_hash = r.text_hash
         JOIN %I.%I s ON s.%I = g.row_key::%s',
        ord, c.source_schema, c.source_table, c.key_column, key_type) USING cid;
    INSERT INTO pg_temp.pgdedup_redone SELECT row_key FROM pg_temp.pgdedup_rows;
    PERFORM pgdedup.walk();
    texts := (SELECT count(*) FROM pg_temp.pgdedup_region);
    rows_examined := (SELECT count(*) FROM pg_temp.pgdedup_rows);
END $$;

-- Fill in the members (text, representative row) of the buckets in pg_temp.pgdedup_members that
-- have none yet, and the leaders of those with more than p_max_bucket texts: their first
-- p_max_bucket texts by (earliest row in keep order p_ord, representative row id), as the full
-- run's candidate_pairs(p_ranked) orders them. A bucket is one row with text_hash NULL until filled.
CREATE FUNCTION pgdedup.fill_buckets(p_collection_id integer, p_ord text, p_key_type text, p_max_bucket integer)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = p_collection_id;
    DROP TABLE IF EXISTS pg_temp.pgdedup_new_members;
    CREATE TEMP TABLE pgdedup_new_members ON COMMIT DROP AS
        SELECT e.band, e.bucket, g.text_hash, min(g.row_id) AS row_id
        FROM pg_temp.pgdedup_members e
        JOIN pgdedup.band_keys b ON b.collection_id = p_collection_id AND b.band = e.band AND b.bucket = e.bucket
        JOIN pgdedup.signatures g ON g.collection_id = p_collection_id AND g.row_id = b.row_id AND g.feature_count > 0
        WHERE e.text_hash IS NULL
        GROUP BY e.band, e.bucket, g.text_hash;
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

-- Store an incremental decision: replace target p_target's rows for the keys in
-- pg_temp.pgdedup_redone with pg_temp.pgdedup_marks, record the result, log the run.
-- Returns (rows re-examined, duplicates, groups) where duplicates and groups count the whole result.
CREATE FUNCTION pgdedup.store_changes(p_collection_id integer, p_target text, p_threshold double precision,
                                      p_keep_order text, p_max_bucket integer, p_started timestamptz,
                                      p_texts bigint)
RETURNS TABLE (rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t double precision := coalesce(p_threshold,
        (SELECT c.threshold FROM pgdedup.collections c WHERE c.collection_id = p_collection_id));
BEGIN
    DROP TABLE IF EXISTS pg_temp.pgdedup_before;
    CREATE TEMP TABLE pgdedup_before ON COMMIT DROP AS
        SELECT d.row_key, d.duplicate_of FROM pgdedup.duplicates d
        WHERE d.collection_id = p_collection_id AND d.target = p_target
          AND d.row_key IN (SELECT k.row_key FROM pg_temp.pgdedup_redone k);
    DELETE FROM pgdedup.duplicates d
    USING pg_temp.pgdedup_redone k
    WHERE d.collection_id = p_collection_id AND d.target = p_target AND d.row_key = k.row_key;
    INSERT INTO pgdedup.duplicates (collection_id, target, row_key, duplicate_of, similarity)
        SELECT p_collection_id, p_target, m.row_key, m.duplicate_of, m.similarity FROM pg_temp.pgdedup_marks m;
    PERFORM pgdedup.record_result(p_collection_id, p_target, t, p_max_bucket, true, p_keep_order, 'estimate');
    RETURN QUERY
        WITH stats AS (  -- one pass over the target's result for both counts
            SELECT (SELECT count(DISTINCT k.row_key) FROM pg_temp.pgdedup_redone k) AS rows_examined,
                   count(*) AS duplicates, count(DISTINCT d.duplicate_of) AS groups
            FROM pgdedup.duplicates d
            WHERE d.collection_id = p_collection_id AND d.target = p_target
        ), run AS (
            INSERT INTO pgdedup.runs (collection_id, kind, started_at, stats)
            SELECT p_collection_id, 'dedupe', p_started, jsonb_build_object(
                'incremental', true, 'rows_examined', st.rows_examined, 'texts', p_texts,
                'marks_changed', (SELECT count(*) FROM pg_temp.pgdedup_before b FULL JOIN pg_temp.pgdedup_marks m
                                  ON m.row_key = b.row_key
                                  WHERE b.duplicate_of IS DISTINCT FROM m.duplicate_of),
                'duplicates', st.duplicates, 'groups', st.groups, 'threshold', t, 'keep_order', p_keep_order,
                'verify', 'estimate', 'target', p_target,
                'seconds', extract(epoch FROM clock_timestamp() - p_started))
            FROM stats st
        )
        SELECT * FROM stats;
END $$;

-- Record (replace) where a target's result came from: as in revision 4, and the last logged
-- change it has taken in (every one so far: writers of the log hold the collection's lock too).
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
        change_seq = excluded.change_seq, computed_at = now()
$$;

-- Write target 'column' of pgdedup.duplicates into the recorded marking column: the kept row's
-- key for duplicates, NULL for every other row; with p_only_redone just for the keys in
-- pg_temp.pgdedup_redone. Only rows whose mark changes are written, and tracking skips them.
CREATE FUNCTION pgdedup.write_marks(p_collection_id integer, p_only_redone boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    only_redone text := '';
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
    PERFORM set_config('pgdedup.marking', 'off', true);
END $$;

-- Mark duplicates in place (target 'column'), as in revision 4, writing through write_marks.
CREATE OR REPLACE FUNCTION pgdedup.mark_duplicates(p_collection text, p_threshold double precision DEFAULT NULL,
                                                   p_keep_order text DEFAULT NULL, p_column text DEFAULT 'duplicate_of',
                                                   p_max_bucket integer DEFAULT 100, p_verify text DEFAULT 'estimate')
RETURNS TABLE (rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
DECLARE
    cid integer := pgdedup.collection_id(p_collection);
    started timestamptz := clock_timestamp();
    ord text;
BEGIN
    PERFORM pgdedup.check_args(p_threshold, p_max_bucket, p_verify);
    PERFORM pgdedup.keep_order_sql(cid, p_keep_order);
    PERFORM pgdedup.prepare_mark_column(p_collection, p_column);
    ord := pgdedup.decide(cid, p_threshold, p_keep_order, p_max_bucket, p_verify);
    RETURN QUERY SELECT * FROM pgdedup.store_decision(cid, 'column', p_threshold, ord, p_max_bucket, p_verify, started);
    PERFORM pgdedup.write_marks(cid, false);
    PERFORM pgdedup.prune_changes(cid);
END $$;

-- Bring one target up to date: incrementally (decide_changes) when its stored result was
-- computed by estimate with the same threshold, keep order and max_bucket and every change
-- since is logged; otherwise (or with p_full) by a full run. p_alter: the marking column
-- (target 'column', p_column), else the non-invasive result (target 'view').
-- Returns the kind of run ('incremental' | 'full'), rows (re-)examined, duplicates, groups.
CREATE FUNCTION pgdedup.update_duplicates(p_collection text, p_alter boolean DEFAULT true,
                                          p_threshold double precision DEFAULT NULL, p_keep_order text DEFAULT NULL,
                                          p_column text DEFAULT 'duplicate_of', p_max_bucket integer DEFAULT 100,
                                          p_full boolean DEFAULT false)
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
       OR prev.threshold <> coalesce(p_threshold, c.threshold) OR prev.max_bucket <> p_max_bucket
       OR prev.keep_order IS DISTINCT FROM ord THEN
        IF p_alter THEN
            RETURN QUERY SELECT 'full', m.* FROM pgdedup.mark_duplicates(p_collection, p_threshold, p_keep_order,
                                                                        p_column, p_max_bucket) m;
        ELSE
            RETURN QUERY SELECT 'full', f.* FROM pgdedup.find_duplicates(p_collection, p_threshold, p_keep_order,
                                                                        p_max_bucket) f;
            PERFORM pgdedup.prune_changes(cid);
        END IF;
        RETURN;
    END IF;
    region := pgdedup.decide_changes(cid, p_threshold, p_keep_order, p_max_bucket, prev.change_seq);
    RETURN QUERY SELECT 'incremental', s.* FROM pgdedup.store_changes(cid, tgt, p_threshold, ord, p_max_bucket,
                                                                      started, region.texts) s;
    IF p_alter THEN
        PERFORM pgdedup.write_marks(cid, true);
    END IF;
    PERFORM pgdedup.prune_changes(cid);
END $$;

-- Delete the logged changes every result of the collection has taken in.
CREATE FUNCTION pgdedup.prune_changes(p_collection_id integer) RETURNS void
LANGUAGE sql AS $$
    DELETE FROM pgdedup.changes ch
    WHERE ch.collection_id = p_collection_id
      AND ch.seq <= coalesce((SELECT min(coalesce(r.change_seq, 0)) FROM pgdedup.results r
                              WHERE r.collection_id = p_collection_id AND r.target IN ('view', 'column')),
                             (SELECT max(seq) FROM pgdedup.changes));
$$;

-- Keys no run has decided yet: 'queued' (written since they were last signed, on a tracked
-- collection) or 'indexed' (signed, but not yet taken in by every dedupe result). While a key is
-- here, its mark (NULL included) is the one from before its change: NULL does not mean "kept".
CREATE VIEW pgdedup.pending AS
SELECT c.name AS collection, q.row_key, 'queued'::text AS stage, q.queued_at AS since
FROM pgdedup.queue q JOIN pgdedup.collections c USING (collection_id)
UNION ALL
SELECT c.name, ch.row_key, 'indexed', NULL
FROM pgdedup.changes ch JOIN pgdedup.collections c USING (collection_id)
WHERE ch.seq > (SELECT min(coalesce(r.change_seq, 0)) FROM pgdedup.results r
                WHERE r.collection_id = c.collection_id AND r.target IN ('view', 'column'));

-- One row per collection: as in revision 4, plus tracking and what waits.
DROP VIEW pgdedup.status;
CREATE VIEW pgdedup.status AS
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
       to_regclass(format('%I.%I', c.source_schema, c.source_table)) IS NULL AS source_missing,
       c.tracked,
       (SELECT count(*) FROM pgdedup.queue q WHERE q.collection_id = c.collection_id) AS queued,
       (SELECT count(DISTINCT p.row_key) FROM pgdedup.pending p WHERE p.collection = c.name) AS pending
FROM pgdedup.collections c;

DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p WHERE p.pronamespace = 'pgdedup'::regnamespace LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, pg_temp', f);
    END LOOP;
    IF current_setting('server_version_num')::int >= 150000 THEN
        ALTER VIEW pgdedup.status SET (security_invoker = true);
        ALTER VIEW pgdedup.pending SET (security_invoker = true);
    END IF;
END $$;
REVOKE ALL ON FUNCTION pgdedup.capture() FROM PUBLIC;
ALTER FUNCTION pgdedup.decide_changes(integer, double precision, text, integer, bigint) SET client_min_messages = warning;
ALTER FUNCTION pgdedup.decide(integer, double precision, text, integer, text) SET client_min_messages = warning;
ALTER FUNCTION pgdedup.update_duplicates(text, boolean, double precision, text, text, integer, boolean)
    SET client_min_messages = warning;
ALTER FUNCTION pgdedup.mark_duplicates(text, double precision, text, text, integer, text) SET client_min_messages = warning;
-- The incremental path runs many small statements over temp tables without statistics; their
-- cost estimates are large enough to trigger JIT compilation, which then takes most of the time.
ALTER FUNCTION pgdedup.update_duplicates(text, boolean, double precision, text, text, integer, boolean) SET jit = off;
ALTER FUNCTION pgdedup.decide_changes(integer, double precision, text, integer, bigint) SET jit = off;
