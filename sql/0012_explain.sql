-- pgdedup schema, version 12: explain. What the stored signatures say about two rows: their
-- estimate, feature counts, and the bands in which they share a bucket (so LSH made them a
-- candidate pair). The Python side (pgdedup explain) adds what needs the text: the exact
-- Jaccard, shared and own features, and a word diff.
-- Applied by migration 0012. Released files are never edited: a change is a new file + migration.

CREATE FUNCTION pgdedup.explain(p_collection text, p_key_a anyelement, p_key_b anyelement)
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
    SELECT * INTO band FROM pgdedup.auto_band(c.threshold, c.num_perm);
    RETURN QUERY SELECT
        pgdedup.similarity(a.signature, b.signature), a.feature_count, b.feature_count, c.bands,
        coalesce(ARRAY(SELECT i FROM generate_series(1, least(cardinality(a.buckets), cardinality(b.buckets))) i
                       WHERE a.buckets[i] = b.buckets[i] ORDER BY i), '{}'),
        band.lo, band.hi, c.threshold;
END $$;

SELECT pgdedup.pin_search_paths();
