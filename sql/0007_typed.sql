-- pgdedup schema, version 7: keys in SQL in their own type. similar() and similarity() take a
-- key of the collection's key type and similar() returns keys of that type, so they join to
-- the source by its primary key without casts; a key given as text is read as the key type
-- first (an uppercase uuid is the same key). Row ids stay internal.
-- Applied by migration 0007. Released files are never edited: a change is a new file + migration.

-- The stored (text) form of a key given as text: read as the collection's key type and printed
-- back, as the loader stores it. A text that is no key of that type is no row: PD002.
CREATE FUNCTION pgdedup.key_text(p_collection_id integer, p_key text) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    c pgdedup.collections;
    canonical text;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = p_collection_id;
    EXECUTE format('SELECT $1::%s::text', pgdedup.key_type_sql(c.key_type)) INTO canonical USING p_key;
    RETURN canonical;
EXCEPTION WHEN invalid_text_representation OR numeric_value_out_of_range THEN
    RAISE EXCEPTION 'collection "%" has no row with key "%" (not a %)', c.name, p_key, c.key_type
        USING ERRCODE = 'PD002';
END $$;

-- Rows like the row with key p_key, most similar first: as in revision 3, with the key read as
-- the collection's key type.
CREATE OR REPLACE FUNCTION pgdedup.similar(p_collection text, p_key text, p_threshold double precision DEFAULT NULL,
                                           p_limit integer DEFAULT 10)
RETURNS TABLE (row_key text, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    cid integer := pgdedup.collection_id(p_collection);
    k text;
    sig integer[];
    bks bigint[];
BEGIN
    PERFORM pgdedup.check_args(p_threshold, 100, 'estimate', p_limit);
    k := pgdedup.key_text(cid, p_key);
    SELECT s.signature, s.buckets INTO sig, bks FROM pgdedup.signatures s
    WHERE s.collection_id = cid AND s.row_key = k;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'collection "%" has no row with key "%"', p_collection, p_key USING ERRCODE = 'PD002';
    END IF;
    RETURN QUERY SELECT * FROM pgdedup.similar_to(p_collection, sig, bks, p_threshold, p_limit, k);
END $$;

-- The same with the key in its own type, and keys of that type back:
--   SELECT f.*, s.similarity FROM pgdedup.similar('feed_items', '…'::uuid) s
--   JOIN feed_items f ON f.feed_item_id = s.row_key;
CREATE FUNCTION pgdedup.similar(p_collection text, p_key anyelement, p_threshold double precision DEFAULT NULL,
                                p_limit integer DEFAULT 10)
RETURNS TABLE (row_key anyelement, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    c pgdedup.collections;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    IF pg_typeof(p_key)::text <> pgdedup.key_type_sql(c.key_type) THEN
        RAISE EXCEPTION 'collection "%" has keys of type %, not %', c.name, c.key_type, pg_typeof(p_key)
            USING ERRCODE = 'PD003';
    END IF;
    RETURN QUERY EXECUTE format('SELECT s.row_key::%s, s.similarity FROM pgdedup.similar($1, $2::text, $3, $4) s',
                                pgdedup.key_type_sql(c.key_type))
        USING p_collection, p_key, p_threshold, p_limit;
END $$;

-- Estimated similarity of two rows by key, keys in their own type (or as text, read as the key type).
CREATE FUNCTION pgdedup.similarity(p_collection text, p_key_a anyelement, p_key_b anyelement)
RETURNS double precision
LANGUAGE sql STABLE AS $$
    SELECT pgdedup.similarity(a.signature, b.signature)
    FROM pgdedup.signatures a, pgdedup.signatures b
    WHERE a.collection_id = pgdedup.collection_id(p_collection)
      AND a.row_key = pgdedup.key_text(a.collection_id, p_key_a::text)
      AND b.collection_id = a.collection_id AND b.row_key = pgdedup.key_text(a.collection_id, p_key_b::text)
$$;

DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p WHERE p.pronamespace = 'pgdedup'::regnamespace LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, pg_temp', f);
    END LOOP;
END $$;
