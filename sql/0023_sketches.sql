-- pgdedup schema, version 23: signatures stored as 16-bit sketches, compared by bit operations.
--
-- * A signature was an int4[] of num_perm 32-bit MinHash values (536 bytes at 128 positions),
--   compared by pgdedup.similarity, a plpgsql loop over positions (~17 us a pair). It is now the
--   low 16 bits of each value, position after position, as one bit string (bit varying of
--   16 x num_perm bits: 264 bytes at 128), and similarity counts the 16-bit lanes in which the
--   two strings agree with a handful of whole-string operations (XOR, four shift-and-OR folds
--   that leave each lane's "differs" bit in its last position, a mask, bit_count): ~4 us a
--   pair, most of it the call itself.
-- * What this costs in accuracy: two different minima agree in their low 16 bits with
--   probability 2^-16 (the values are near-uniform hashes), so a position that disagrees in
--   32 bits is counted as agreeing with that probability: an estimate is raised by
--   (1 - J) * 2^-16 on average (3e-6 at J = 0.8, where the standard error at 128 positions is
--   0.035). Band keys are still made from the full 32-bit values by the loader, so candidate
--   pairs do not change at all.
-- * pgdedup.sketch(integer[]) makes a sketch from 32-bit values: used here to convert the
--   stored signatures once (~20-60 us a row), and by similar_to for a signature a client
--   computed; similar_to_sketch is similar_to on a sketch (what similar uses).
-- * The status view looks the source up in the catalog instead of with to_regclass, which
--   raised for a source schema the querying role may not use (see the view below).
--
-- Applied by migration 0023. Released files are never edited: a change is a new file + migration.

-- The sketch of a signature of 32-bit values: the low 16 bits of each, in order, big-endian.
-- A NULL value has no bits to keep: refused (string_agg would skip it and shift every lane after).
CREATE FUNCTION pgdedup.sketch(p_signature integer[]) RETURNS bit varying
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    IF array_position(p_signature, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'pgdedup.sketch: a signature has no NULL values' USING ERRCODE = 'PD003';
    END IF;
    RETURN ('x' || coalesce((SELECT string_agg(lpad(to_hex(v & 65535), 4, '0'), '' ORDER BY o)
                             FROM unnest(p_signature) WITH ORDINALITY AS u(v, o)), ''))::bit varying;
END $$;

-- Estimated Jaccard similarity of two sketches: the fraction of their 16-bit lanes that agree.
-- x = a XOR b; after x |= x >> 8, x >> 4, x >> 2 and x >> 1, the last bit of each lane is the OR
-- of the lane's 16 bits (the shifts carry bits into the next lane too, which the mask drops), so
-- bit_count of x AND (a 1 at the end of every lane) is the number of lanes that differ.
-- An empty sketch (empty feature set) is similar to nothing; two others must have the same
-- whole number of lanes, at most 1024 (num_perm's limit; the mask's length).
CREATE FUNCTION pgdedup.similarity(a bit varying, b bit varying) RETURNS double precision
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    lanes integer := length(a) / 16;
    x bit varying;
BEGIN
    IF length(a) = 0 OR length(b) = 0 THEN
        RETURN 0;
    ELSIF length(a) <> length(b) OR length(a) % 16 <> 0 OR lanes > 1024 THEN
        RAISE EXCEPTION 'pgdedup.similarity: sketches of % and % bits (expected: the same number of 16-bit lanes, at most 1024)',
            length(a), length(b) USING ERRCODE = 'PD003';
    END IF;
    x := a # b;
    x := x | (x >> 8);
    x := x | (x >> 4);
    x := x | (x >> 2);
    -- the mask: a constant the cached plan folds once (num_perm is at most 1024), cut to length
    RETURN (lanes - bit_count((x | (x >> 1))
                              & substring(repeat('0000000000000001', 1024)::bit varying FROM 1 FOR length(x))))::double precision
           / lanes;
END $$;

ALTER TABLE pgdedup.signatures ALTER COLUMN signature TYPE bit varying USING pgdedup.sketch(signature);
COMMENT ON COLUMN pgdedup.signatures.signature IS
    'the low 16 bits of each of the num_perm MinHash values, in order (empty for an empty feature set)';

-- The int4[] comparison has nothing left to compare.
DROP FUNCTION pgdedup.similarity(integer[], integer[]);

-- Rows similar to a sketch: as revision 3's similar_to, on the stored sketches. (A name of its
-- own: an overload of similar_to would make calls with untyped arguments, '{1,2}' or NULL, ambiguous.)
CREATE FUNCTION pgdedup.similar_to_sketch(p_collection text, p_sketch bit varying, p_buckets bigint[],
                                   p_threshold double precision DEFAULT NULL, p_limit integer DEFAULT 10,
                                   p_exclude text DEFAULT NULL)
RETURNS TABLE (row_key text, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    cid integer := pgdedup.collection_id(p_collection);
    t double precision;
BEGIN
    PERFORM pgdedup.check_args(p_threshold, 100, 'estimate', p_limit);
    SELECT coalesce(p_threshold, c.threshold) INTO t FROM pgdedup.collections c WHERE c.collection_id = cid;
    RETURN QUERY
    WITH hits AS (
        SELECT DISTINCT b.row_id
        FROM unnest(p_buckets) WITH ORDINALITY AS u(bucket, band)
        JOIN pgdedup.band_keys b ON b.collection_id = cid AND b.band = u.band - 1 AND b.bucket = u.bucket
    )
    SELECT s.row_key, e.sim
    FROM hits h
    JOIN pgdedup.signatures s ON s.collection_id = cid AND s.row_id = h.row_id
    CROSS JOIN LATERAL (SELECT pgdedup.similarity(s.signature, p_sketch) AS sim) e
    WHERE s.row_key IS DISTINCT FROM p_exclude AND e.sim >= t
    ORDER BY e.sim DESC, s.row_key
    LIMIT p_limit;
END $$;

-- Rows similar to a signature of 32-bit values (a text signed by the client): its sketch's.
CREATE OR REPLACE FUNCTION pgdedup.similar_to(p_collection text, p_signature integer[], p_buckets bigint[],
                                              p_threshold double precision DEFAULT NULL, p_limit integer DEFAULT 10,
                                              p_exclude text DEFAULT NULL)
RETURNS TABLE (row_key text, similarity double precision)
LANGUAGE sql STABLE AS $$
    SELECT * FROM pgdedup.similar_to_sketch(p_collection, pgdedup.sketch(p_signature), p_buckets, p_threshold,
                                            p_limit, p_exclude)
$$;

-- Rows like the row with key p_key, most similar first: as in revision 7, with its sketch.
CREATE OR REPLACE FUNCTION pgdedup.similar(p_collection text, p_key text, p_threshold double precision DEFAULT NULL,
                                           p_limit integer DEFAULT 10)
RETURNS TABLE (row_key text, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    cid integer := pgdedup.collection_id(p_collection);
    k text;
    sig bit varying;
    bks bigint[];
BEGIN
    PERFORM pgdedup.check_args(p_threshold, 100, 'estimate', p_limit);
    k := pgdedup.key_text(cid, p_key);
    SELECT s.signature, s.buckets INTO sig, bks FROM pgdedup.signatures s
    WHERE s.collection_id = cid AND s.row_key = k;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'collection "%" has no row with key "%"', p_collection, p_key USING ERRCODE = 'PD002';
    END IF;
    RETURN QUERY SELECT * FROM pgdedup.similar_to_sketch(p_collection, sig, bks, p_threshold, p_limit, k);
END $$;

-- The status view, as in revision 6, with the source looked up in the catalog (relation_of, as
-- revision 21 did for the row-level security policy): to_regclass raised "permission denied for
-- schema" for a collection whose source schema the querying role may not use, and a role that
-- sees every collection (the tables' owner, BYPASSRLS) could not read the view at all.
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
       pgdedup.relation_of(c.source_schema, c.source_table) IS NULL AS source_missing,
       c.tracked,
       (SELECT count(*) FROM pgdedup.queue q WHERE q.collection_id = c.collection_id) AS queued,
       (SELECT count(DISTINCT p.row_key) FROM pgdedup.pending p WHERE p.collection = c.name) AS pending
FROM pgdedup.collections c;

SELECT pgdedup.pin_search_paths();
DO $$
BEGIN
    IF current_setting('server_version_num')::int >= 150000 THEN  -- as revision 6 did (CREATE OR REPLACE VIEW reset it)
        ALTER VIEW pgdedup.status SET (security_invoker = true);
    END IF;
END $$;
