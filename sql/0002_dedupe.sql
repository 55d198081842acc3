-- pgdedup schema, version 2: similarity, candidate pairs, verified pairs, similar rows, marking.
-- Applied by migration 0002. Released files are never edited: a change is a new file + migration.

-- Where non-invasive dedupe results live (and where in-place marking records what it did).
CREATE TABLE pgdedup.duplicates (
    collection_id   integer NOT NULL REFERENCES pgdedup.collections ON DELETE CASCADE,
    row_key         text NOT NULL,          -- the duplicate row
    duplicate_of    text NOT NULL,          -- the kept row it points at
    similarity      double precision NOT NULL,
    PRIMARY KEY (collection_id, row_key)
);

-- Pairs of representatives re-checked with exact Jaccard from the source text (filled by the
-- Python side, which reads and re-shingles the text: `pgdedup dedupe/pairs --verify exact`).
CREATE TABLE pgdedup.exact_pairs (
    collection_id   integer NOT NULL REFERENCES pgdedup.collections ON DELETE CASCADE,
    row_a           bigint NOT NULL,
    row_b           bigint NOT NULL,
    similarity      double precision NOT NULL,  -- exact Jaccard of the feature sets
    PRIMARY KEY (collection_id, row_a, row_b)
);

-- Estimated Jaccard similarity of two signatures: the fraction of agreeing positions.
-- An empty signature (empty feature set) is similar to nothing.
CREATE FUNCTION pgdedup.similarity(a integer[], b integer[]) RETURNS double precision
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    n integer := cardinality(a);
    same integer := 0;
BEGIN
    IF n = 0 OR cardinality(b) = 0 THEN
        RETURN 0;
    END IF;
    IF n <> cardinality(b) THEN
        RAISE EXCEPTION 'pgdedup.similarity: signatures of different lengths (% and %)', n, cardinality(b);
    END IF;
    FOR i IN 1 .. n LOOP
        IF a[i] = b[i] THEN
            same := same + 1;
        END IF;
    END LOOP;
    RETURN same::double precision / n;
END $$;

-- The id of a collection by name, or a clear error.
CREATE FUNCTION pgdedup.collection_id(p_name text) RETURNS integer
LANGUAGE plpgsql STABLE AS $$
DECLARE
    cid integer;
BEGIN
    SELECT collection_id INTO cid FROM pgdedup.collections WHERE name = p_name;
    IF cid IS NULL THEN
        RAISE EXCEPTION 'pgdedup: no collection named "%"; run pgdedup index first', p_name;
    END IF;
    RETURN cid;
END $$;

-- Estimated similarity of two rows of a collection, by key.
CREATE FUNCTION pgdedup.similarity(p_collection text, p_key_a text, p_key_b text) RETURNS double precision
LANGUAGE sql STABLE AS $$
    SELECT pgdedup.similarity(a.signature, b.signature)
    FROM pgdedup.signatures a, pgdedup.signatures b
    WHERE a.collection_id = pgdedup.collection_id(p_collection) AND a.row_key = p_key_a
      AND b.collection_id = a.collection_id AND b.row_key = p_key_b
$$;

-- One representative row per distinct normalised text (the lowest row id); empty texts excluded.
-- Exact duplicates share every bucket, so collapsing them first keeps them out of the band join.
CREATE FUNCTION pgdedup.representatives(p_collection_id integer)
RETURNS TABLE (row_id bigint, text_hash bigint)
LANGUAGE sql STABLE SET work_mem = '256MB' AS $$
    SELECT DISTINCT ON (s.text_hash) s.row_id, s.text_hash
    FROM pgdedup.signatures s
    WHERE s.collection_id = p_collection_id AND s.feature_count > 0
    ORDER BY s.text_hash, s.row_id
$$;

-- Representatives in buckets that hold two or more rows, by band and bucket. Buckets are found
-- on the band table alone first (most are singletons), so only rows of shared buckets meet the
-- representatives; work_mem is raised so the aggregates stay in memory at a million rows.
CREATE FUNCTION pgdedup.bucket_members(p_collection_id integer)
RETURNS TABLE (band smallint, bucket bigint, row_id bigint, text_hash bigint)
LANGUAGE sql STABLE SET work_mem = '256MB' AS $$
    WITH shared AS (
        SELECT b.band, b.bucket, array_agg(b.row_id) AS ids
        FROM pgdedup.band_keys b
        WHERE b.collection_id = p_collection_id
        GROUP BY b.band, b.bucket
        HAVING count(*) > 1
    )
    SELECT s.band, s.bucket, r.row_id, r.text_hash
    FROM shared s
    CROSS JOIN LATERAL unnest(s.ids) AS u(row_id)
    JOIN pgdedup.representatives(p_collection_id) r ON r.row_id = u.row_id
$$;

-- The pairs (row_a < row_b) one bucket contributes: every member with each of the bucket's first
-- p_max_bucket members (its order decides which members lead).
CREATE FUNCTION pgdedup.bucket_pairs(ids bigint[], p_max_bucket integer)
RETURNS TABLE (row_a bigint, row_b bigint)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT least(ids[i], ids[j]), greatest(ids[i], ids[j])
    FROM generate_series(1, least(cardinality(ids) - 1, p_max_bucket)) AS i,
         generate_series(i + 1, cardinality(ids)) AS j
$$;

-- Candidate pairs (row_a < row_b) of representatives sharing a bucket in at least one band.
-- A bucket of m members yields all m(m-1)/2 pairs when m <= p_max_bucket; a larger bucket
-- (boilerplate shared by thousands of rows) pairs each member with the bucket's first
-- p_max_bucket members only ("leaders"), so its cost is O(m · p_max_bucket), never quadratic.
-- Leaders are the lowest row ids, or with p_ranked the earliest texts in keep order (from the
-- temp table pgdedup_rank that find_duplicates builds): those are the rows dedupe keeps, so
-- every other member still gets its edge to a kept row.
CREATE FUNCTION pgdedup.candidate_pairs(p_collection_id integer, p_max_bucket integer DEFAULT 100,
                                        p_ranked boolean DEFAULT false)
RETURNS TABLE (row_a bigint, row_b bigint)
LANGUAGE plpgsql STABLE SET work_mem = '256MB' AS $$
BEGIN
    IF p_ranked THEN
        RETURN QUERY
        WITH buckets AS (
            SELECT array_agg(m.row_id ORDER BY k.rnk, m.row_id) AS ids
            FROM pgdedup.bucket_members(p_collection_id) m
            JOIN pg_temp.pgdedup_rank k ON k.text_hash = m.text_hash
            GROUP BY m.band, m.bucket
            HAVING count(*) > 1
        )
        SELECT DISTINCT p.row_a, p.row_b FROM buckets, pgdedup.bucket_pairs(ids, p_max_bucket) p;
    ELSE
        RETURN QUERY
        WITH buckets AS (
            SELECT array_agg(m.row_id ORDER BY m.row_id) AS ids
            FROM pgdedup.bucket_members(p_collection_id) m
            GROUP BY m.band, m.bucket
            HAVING count(*) > 1
        )
        SELECT DISTINCT p.row_a, p.row_b FROM buckets, pgdedup.bucket_pairs(ids, p_max_bucket) p;
    END IF;
END $$;

-- Candidate pairs whose estimated similarity is >= p_threshold (default: the collection's).
CREATE FUNCTION pgdedup.verified_pairs(p_collection_id integer, p_threshold double precision DEFAULT NULL,
                                       p_max_bucket integer DEFAULT 100, p_ranked boolean DEFAULT false)
RETURNS TABLE (row_a bigint, row_b bigint, similarity double precision)
LANGUAGE sql STABLE AS $$
    SELECT * FROM (
        SELECT p.row_a, p.row_b, pgdedup.similarity(a.signature, b.signature) AS similarity
        FROM pgdedup.candidate_pairs(p_collection_id, p_max_bucket, p_ranked) p
        JOIN pgdedup.signatures a ON a.collection_id = p_collection_id AND a.row_id = p.row_a
        JOIN pgdedup.signatures b ON b.collection_id = p_collection_id AND b.row_id = p.row_b
    ) v
    WHERE v.similarity >= coalesce(p_threshold,
        (SELECT c.threshold FROM pgdedup.collections c WHERE c.collection_id = p_collection_id))
$$;

-- The edges dedupe and pairs work with: verified pairs of representatives, by estimate
-- (p_verify 'estimate') or from pgdedup.exact_pairs (p_verify 'exact').
CREATE FUNCTION pgdedup.edges(p_collection_id integer, p_threshold double precision DEFAULT NULL,
                              p_max_bucket integer DEFAULT 100, p_verify text DEFAULT 'estimate',
                              p_ranked boolean DEFAULT false)
RETURNS TABLE (row_a bigint, row_b bigint, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    t double precision := coalesce(p_threshold,
        (SELECT c.threshold FROM pgdedup.collections c WHERE c.collection_id = p_collection_id));
BEGIN
    IF p_verify = 'estimate' THEN
        RETURN QUERY SELECT * FROM pgdedup.verified_pairs(p_collection_id, t, p_max_bucket, p_ranked);
    ELSIF p_verify = 'exact' THEN
        RETURN QUERY SELECT e.row_a, e.row_b, e.similarity FROM pgdedup.exact_pairs e
                     WHERE e.collection_id = p_collection_id AND e.similarity >= t;
    ELSE
        RAISE EXCEPTION 'pgdedup: verify must be estimate or exact, not "%"', p_verify;
    END IF;
END $$;

-- Every pair of rows (by key) with estimated similarity >= the threshold: verified pairs of
-- representatives expanded to all rows with their texts, plus exact duplicates (similarity 1).
-- An exact-duplicate group of g rows yields g(g-1)/2 pairs: the answer is quadratic by nature.
-- Each pair is listed once, key_a < key_b (as text), ordered by key_a, key_b.
CREATE FUNCTION pgdedup.pairs(p_collection text, p_threshold double precision DEFAULT NULL,
                              p_verify text DEFAULT 'estimate')
RETURNS TABLE (key_a text, key_b text, similarity double precision)
LANGUAGE sql STABLE AS $$
    WITH c AS (SELECT pgdedup.collection_id(p_collection) AS id),
    members AS (
        SELECT r.row_id AS rep, s.row_id, s.row_key
        FROM c, pgdedup.representatives(c.id) r
        JOIN pgdedup.signatures s ON s.collection_id = (SELECT id FROM c) AND s.text_hash = r.text_hash
    ),
    near AS (
        SELECT ma.row_id AS ra, ma.row_key AS ka, mb.row_id AS rb, mb.row_key AS kb, v.similarity
        FROM c, pgdedup.edges(c.id, p_threshold, 100, p_verify, false) v
        JOIN members ma ON ma.rep = v.row_a
        JOIN members mb ON mb.rep = v.row_b
    ),
    exact AS (
        SELECT a.row_id AS ra, a.row_key AS ka, b.row_id AS rb, b.row_key AS kb, 1.0::double precision
        FROM members a JOIN members b ON a.rep = b.rep AND a.row_id < b.row_id
    )
    SELECT least(ka, kb), greatest(ka, kb), similarity
    FROM (SELECT * FROM near UNION ALL SELECT * FROM exact) p
    ORDER BY 1, 2
$$;

-- Rows whose signatures share a bucket with the given signature, with similarity >= p_threshold,
-- most similar first. Used with a stored row (pgdedup.similar) or a freshly signed text (CLI).
CREATE FUNCTION pgdedup.similar_to(p_collection text, p_signature integer[], p_buckets bigint[],
                                   p_threshold double precision DEFAULT NULL, p_limit integer DEFAULT 10,
                                   p_exclude text DEFAULT NULL)
RETURNS TABLE (row_key text, similarity double precision)
LANGUAGE sql STABLE AS $$
    WITH c AS (
        SELECT collection_id AS id, threshold FROM pgdedup.collections
        WHERE collection_id = pgdedup.collection_id(p_collection)
    ),
    hits AS (
        SELECT DISTINCT b.row_id
        FROM c, unnest(p_buckets) WITH ORDINALITY AS u(bucket, band)
        JOIN pgdedup.band_keys b ON b.collection_id = (SELECT id FROM c) AND b.band = u.band - 1 AND b.bucket = u.bucket
    )
    SELECT s.row_key, pgdedup.similarity(s.signature, p_signature) AS sim
    FROM c, hits h
    JOIN pgdedup.signatures s ON s.collection_id = (SELECT id FROM c) AND s.row_id = h.row_id
    WHERE s.row_key IS DISTINCT FROM p_exclude
      AND pgdedup.similarity(s.signature, p_signature) >= coalesce(p_threshold, c.threshold)
    ORDER BY sim DESC, s.row_key
    LIMIT p_limit
$$;

-- Rows similar to the row with key p_key ("rows like this one").
CREATE FUNCTION pgdedup.similar(p_collection text, p_key text, p_threshold double precision DEFAULT NULL,
                                p_limit integer DEFAULT 10)
RETURNS TABLE (row_key text, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    sig integer[];
    bks bigint[];
BEGIN
    SELECT s.signature, s.buckets INTO sig, bks FROM pgdedup.signatures s
    WHERE s.collection_id = pgdedup.collection_id(p_collection) AND s.row_key = p_key;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'pgdedup: collection "%" has no row with key "%"', p_collection, p_key;
    END IF;
    RETURN QUERY SELECT * FROM pgdedup.similar_to(p_collection, sig, bks, p_threshold, p_limit, p_key);
END $$;

-- Turn 'published_at DESC, feed_item_id' into a safe ORDER BY list over alias "s": every column
-- must exist in the source table and is quoted; only ASC/DESC and NULLS FIRST/LAST are allowed.
CREATE FUNCTION pgdedup.keep_order_sql(p_collection_id integer, p_keep_order text) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    c pgdedup.collections;
    item text;
    m text[];
    col text;
    parts text[] := '{}';
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = p_collection_id;
    FOREACH item IN ARRAY coalesce(string_to_array(nullif(trim(p_keep_order), ''), ','), '{}') LOOP
        m := regexp_match(item, '^\s*("(?:[^"]|"")+"|[^\s"]+)\s*(asc|desc)?\s*(nulls\s+(?:first|last))?\s*$', 'i');
        IF m IS NULL THEN
            RAISE EXCEPTION 'pgdedup: cannot read keep order item "%" (expected: column [ASC|DESC] [NULLS FIRST|LAST])', trim(item);
        END IF;
        col := CASE WHEN left(m[1], 1) = '"' THEN replace(substr(m[1], 2, length(m[1]) - 2), '""', '"') ELSE m[1] END;
        IF NOT EXISTS (SELECT 1 FROM pg_attribute
                       WHERE attrelid = format('%I.%I', c.source_schema, c.source_table)::regclass
                         AND attname = col AND attnum > 0 AND NOT attisdropped) THEN
            RAISE EXCEPTION 'pgdedup: keep order column "%" does not exist in %.%', col, c.source_schema, c.source_table;
        END IF;
        parts := parts || format('s.%I %s %s', col, coalesce(upper(m[2]), 'ASC'), coalesce(upper(m[3]), ''));
    END LOOP;
    parts := parts || format('s.%I ASC', c.key_column);  -- the key breaks every tie: deterministic
    RETURN array_to_string(parts, ', ');
END $$;

-- Decide duplicates: walk rows in keep order; a row with a verified edge to an already kept row
-- is a duplicate of the most similar such row (ties: the earliest kept), otherwise it is kept.
-- So every duplicate points at a kept row with similarity >= the threshold, never at another
-- duplicate, and nothing chains through non-transitive links. Results go to pgdedup.duplicates.
-- Returns (rows examined, duplicates, groups).
CREATE FUNCTION pgdedup.find_duplicates(p_collection text, p_threshold double precision DEFAULT NULL,
                                        p_keep_order text DEFAULT NULL, p_max_bucket integer DEFAULT 100,
                                        p_verify text DEFAULT 'estimate')
RETURNS TABLE (rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql SET work_mem = '256MB' AS $$
#variable_conflict use_column
DECLARE
    cid integer := pgdedup.collection_id(p_collection);
    c pgdedup.collections;
    ord text;
    r record;
    best record;
    started timestamptz := clock_timestamp();
    seqscan text := current_setting('enable_seqscan');
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = cid;
    ord := pgdedup.keep_order_sql(cid, p_keep_order);
    -- serialise concurrent runs on one collection
    PERFORM pg_advisory_xact_lock(1885824100, cid);

    DROP TABLE IF EXISTS pg_temp.pgdedup_rows, pg_temp.pgdedup_rank, pg_temp.pgdedup_edges,
        pg_temp.pgdedup_walk, pg_temp.pgdedup_kept, pg_temp.pgdedup_marks;
    -- every non-empty row ranked by the keep order, and each text by its earliest row
    EXECUTE format(
        'CREATE TEMP TABLE pgdedup_rows ON COMMIT DROP AS
         SELECT g.row_id, g.row_key, g.text_hash, row_number() OVER (ORDER BY %s) AS rnk
         FROM %I.%I s JOIN pgdedup.signatures g ON g.collection_id = %s AND g.row_key = s.%I::text
         WHERE g.feature_count > 0',
        ord, c.source_schema, c.source_table, cid, c.key_column);
    CREATE TEMP TABLE pgdedup_rank ON COMMIT DROP AS
        SELECT text_hash, min(rnk) AS rnk FROM pgdedup_rows GROUP BY text_hash;
    ANALYZE pgdedup_rank;
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

    DELETE FROM pgdedup.duplicates d WHERE d.collection_id = cid;
    INSERT INTO pgdedup.duplicates (collection_id, row_key, duplicate_of, similarity)
        SELECT cid, m.row_key, m.duplicate_of, m.similarity FROM pgdedup_marks m;
    RETURN QUERY
        WITH stats AS (
            SELECT (SELECT count(*) FROM pgdedup.signatures WHERE collection_id = cid) AS rows_examined,
                   (SELECT count(*) FROM pgdedup_marks) AS duplicates,
                   (SELECT count(DISTINCT m.duplicate_of) FROM pgdedup_marks m) AS groups
        ), run AS (
            INSERT INTO pgdedup.runs (collection_id, kind, started_at, stats)
            SELECT cid, 'dedupe', started, jsonb_build_object(
                'rows_examined', st.rows_examined, 'duplicates', st.duplicates, 'groups', st.groups,
                'threshold', coalesce(p_threshold, c.threshold), 'keep_order', ord, 'verify', p_verify,
                'seconds', extract(epoch FROM clock_timestamp() - started))
            FROM stats st
        )
        SELECT * FROM stats;
END $$;

-- A view of the source table with each row's duplicate_of and similarity (non-invasive mode).
CREATE FUNCTION pgdedup.create_duplicates_view(p_collection text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    view_name text;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    view_name := c.name || '_duplicates';
    EXECUTE format(
        'CREATE OR REPLACE VIEW pgdedup.%I AS
         SELECT s.*, d.duplicate_of::%s AS duplicate_of, d.similarity AS duplicate_similarity
         FROM %I.%I s LEFT JOIN pgdedup.duplicates d ON d.collection_id = %s AND d.row_key = s.%I::text',
        view_name, c.key_type, c.source_schema, c.source_table, c.collection_id, c.key_column);
    RETURN format('pgdedup.%I', view_name);
END $$;

-- Mark duplicates in place: add column p_column (the key's own type) to the source table if it is
-- absent, then set it to the kept row's key for duplicates and NULL for every other row. Only rows
-- whose mark changes are written, so a rerun on unchanged data writes nothing.
CREATE FUNCTION pgdedup.mark_duplicates(p_collection text, p_threshold double precision DEFAULT NULL,
                                        p_keep_order text DEFAULT NULL, p_column text DEFAULT 'duplicate_of',
                                        p_max_bucket integer DEFAULT 100, p_verify text DEFAULT 'estimate')
RETURNS TABLE (rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    c pgdedup.collections;
    found_type text;
    result record;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    SELECT a.atttypid::regtype::text INTO found_type FROM pg_attribute a
    WHERE a.attrelid = format('%I.%I', c.source_schema, c.source_table)::regclass
      AND a.attname = p_column AND a.attnum > 0 AND NOT a.attisdropped;
    IF found_type IS NULL THEN
        EXECUTE format('ALTER TABLE %I.%I ADD COLUMN %I %s', c.source_schema, c.source_table, p_column, c.key_type);
    ELSIF found_type <> c.key_type THEN
        RAISE EXCEPTION 'pgdedup: column "%" of %.% has type %, but the key % has type %',
            p_column, c.source_schema, c.source_table, found_type, c.key_column, c.key_type;
    END IF;
    SELECT * INTO result FROM pgdedup.find_duplicates(p_collection, p_threshold, p_keep_order, p_max_bucket, p_verify);
    EXECUTE format(
        'UPDATE %1$I.%2$I s SET %3$I = NULL
         WHERE s.%3$I IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM pgdedup.duplicates d WHERE d.collection_id = %4$s AND d.row_key = s.%5$I::text)',
        c.source_schema, c.source_table, p_column, c.collection_id, c.key_column);
    EXECUTE format(
        'UPDATE %1$I.%2$I s SET %3$I = d.duplicate_of::%6$s
         FROM pgdedup.duplicates d
         WHERE d.collection_id = %4$s AND d.row_key = s.%5$I::text AND s.%3$I IS DISTINCT FROM d.duplicate_of::%6$s',
        c.source_schema, c.source_table, p_column, c.collection_id, c.key_column, c.key_type);
    RETURN QUERY SELECT result.rows_examined, result.duplicates, result.groups;
END $$;

-- One row per collection: parameters, rows indexed, duplicates found, last runs.
CREATE VIEW pgdedup.status AS
SELECT c.name, format('%I.%I', c.source_schema, c.source_table) AS source, c.key_column, c.text_columns,
       c.unit, c.ngram, c.num_perm, c.bands, c.rows_per_band, c.threshold, c.band_threshold, c.seed,
       c.rows_indexed, (SELECT count(*) FROM pgdedup.duplicates d WHERE d.collection_id = c.collection_id) AS duplicates,
       c.indexed_at,
       (SELECT max(finished_at) FROM pgdedup.runs r WHERE r.collection_id = c.collection_id AND r.kind = 'dedupe') AS deduped_at,
       (SELECT r.stats FROM pgdedup.runs r WHERE r.collection_id = c.collection_id AND r.kind = 'index'
        ORDER BY r.finished_at DESC LIMIT 1) AS last_index,
       (SELECT r.stats FROM pgdedup.runs r WHERE r.collection_id = c.collection_id AND r.kind = 'dedupe'
        ORDER BY r.finished_at DESC LIMIT 1) AS last_dedupe
FROM pgdedup.collections c;
