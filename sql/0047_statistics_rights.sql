-- pgdedup schema, version 47: from a review of revision 46.
-- * refresh_statistics counted the collection's rows in each of pgdedup's five tables, and a role
--   that may not read one of them (a reader granted SELECT on the schema's tables before
--   checked or leaders existed) had pgdedup's pairs fail with "permission denied" where the SQL
--   pairs function answers: a table the caller may not read is now left alone, as revisions
--   19-20 do for candidates.
-- * analyze_as_owner waits 3 s for a lock, past deadlock_timeout: a lock cycle with another
--   caller's transaction is now left out with the same WARNING as a lock not had, instead of
--   failing the run.
-- * similar_to_sketch computes each probe's band as a smallint since revision 46: more buckets
--   than the collection has bands (at most 32,767 fit) now raise PD003 instead of a cast error
--   or rows matched on bands the collection does not have.
-- Applied by migration 0047. Released files are never edited: a change is a new file + migration.

-- As in revision 46; a deadlock is handled as a lock not had.
CREATE OR REPLACE FUNCTION pgdedup.analyze_as_owner(p_tables text[]) RETURNS text[]
LANGUAGE plpgsql SECURITY DEFINER SET lock_timeout = '3s' SET default_statistics_target = 100 AS $$
DECLARE
    t text;
    done text[] := '{}';
BEGIN
    IF NOT coalesce(p_tables, '{}') <@ pgdedup.statistics_tables() THEN
        RAISE EXCEPTION 'pgdedup analyzes only its tables %, not %', pgdedup.statistics_tables(), p_tables
            USING ERRCODE = 'PD003';
    END IF;
    IF pg_catalog.pg_is_in_recovery() THEN
        RETURN done;  -- (a standby cannot ANALYZE: it has its primary's statistics)
    END IF;
    FOR t IN SELECT DISTINCT n FROM unnest(p_tables) n ORDER BY n LOOP
        BEGIN
            EXECUTE format('ANALYZE pgdedup.%I%s', t,
                           CASE WHEN t = 'signatures' THEN ' (collection_id, row_key, row_id, text_hash)' ELSE '' END);
            done := done || t;
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            RAISE WARNING 'pgdedup.% not analyzed: another session held it for 3 s; its statistics stay as they were', t;
        END;
    END LOOP;
    RETURN done;
END $$;

-- As in revision 46, over the tables the caller may read.
CREATE OR REPLACE FUNCTION pgdedup.refresh_statistics(p_collection_id integer) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
    t text;
    counted bigint;
    plan json;
    stale text[] := '{}';
BEGIN
    FOREACH t IN ARRAY pgdedup.statistics_tables() LOOP
        CONTINUE WHEN NOT has_table_privilege(format('pgdedup.%I', t), 'SELECT');
        EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM pgdedup.%I x WHERE x.collection_id = $1 LIMIT 100) n', t)
            INTO counted USING p_collection_id;
        CONTINUE WHEN counted < 100;
        EXECUTE format('EXPLAIN (FORMAT JSON) SELECT 1 FROM pgdedup.%I x WHERE x.collection_id = $1', t)
            INTO plan USING p_collection_id;
        IF (plan -> 0 -> 'Plan' ->> 'Plan Rows')::double precision < 10 THEN
            stale := stale || t;
        END IF;
    END LOOP;
    IF stale = '{}' THEN
        RETURN stale;
    END IF;
    RETURN pgdedup.analyze_tables(stale);
END $$;

-- As in revision 46, refusing more buckets than the collection has bands.
CREATE OR REPLACE FUNCTION pgdedup.similar_to_sketch(p_collection text, p_sketch bit varying, p_buckets bigint[],
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
    IF cardinality(p_buckets) > (SELECT c.bands FROM pgdedup.collections c WHERE c.collection_id = cid) THEN
        RAISE EXCEPTION 'collection "%" has % bands, not % buckets', p_collection,
            (SELECT c.bands FROM pgdedup.collections c WHERE c.collection_id = cid), cardinality(p_buckets)
            USING ERRCODE = 'PD003';
    END IF;
    SELECT coalesce(p_threshold, c.threshold) INTO t FROM pgdedup.collections c WHERE c.collection_id = cid;
    RETURN QUERY
    WITH probes AS MATERIALIZED (
        SELECT (u.band - 1)::smallint AS band, u.bucket
        FROM unnest(p_buckets) WITH ORDINALITY AS u(bucket, band)
    ), hits AS (
        SELECT DISTINCT b.row_id
        FROM probes p
        JOIN pgdedup.band_keys b ON b.collection_id = cid AND b.band = p.band AND b.bucket = p.bucket
    )
    SELECT s.row_key, e.sim
    FROM hits h
    JOIN pgdedup.signatures s ON s.collection_id = cid AND s.row_id = h.row_id
    CROSS JOIN LATERAL (SELECT pgdedup.similarity(s.signature, p_sketch) AS sim) e
    WHERE s.row_key IS DISTINCT FROM p_exclude AND e.sim >= t
    ORDER BY e.sim DESC, s.row_key
    LIMIT p_limit;
END $$;

SELECT pgdedup.pin_search_paths();
