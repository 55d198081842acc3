-- Undo 0007: drop the typed overloads and key_text, and put back revision 3's similar(text, text).
DROP FUNCTION pgdedup.similarity(text, anyelement, anyelement);
DROP FUNCTION pgdedup.similar(text, anyelement, double precision, integer);
CREATE OR REPLACE FUNCTION pgdedup.similar(p_collection text, p_key text, p_threshold double precision DEFAULT NULL,
                                           p_limit integer DEFAULT 10)
RETURNS TABLE (row_key text, similarity double precision)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    sig integer[];
    bks bigint[];
BEGIN
    PERFORM pgdedup.check_args(p_threshold, 100, 'estimate', p_limit);
    SELECT s.signature, s.buckets INTO sig, bks FROM pgdedup.signatures s
    WHERE s.collection_id = pgdedup.collection_id(p_collection) AND s.row_key = p_key;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'collection "%" has no row with key "%"', p_collection, p_key USING ERRCODE = 'PD002';
    END IF;
    RETURN QUERY SELECT * FROM pgdedup.similar_to(p_collection, sig, bks, p_threshold, p_limit, p_key);
END $$;
DROP FUNCTION pgdedup.key_text(integer, text);
