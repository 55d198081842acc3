-- pgdedup schema, version 46: revision 45's refresh of planner statistics, made cheap, bounded
-- and granted. A review of revision 45 found:
-- * With more than 100 collections (the list of common values ANALYZE keeps holds 100), a
--   collection off that list is estimated from the average of the others, and could stay under
--   a tenth of its rows whatever the sample: every refresh analyzed it again, for nothing
--   (~0.1 s a call). The trap revision 45 is for is an estimate of about one row (a collection
--   the statistics never saw); refresh_statistics now analyzes a table only when the planner
--   expects fewer than 10 of the collection's rows there and it holds at least 100, counted up
--   to 100: ~1 ms a call instead of 5-17 ms.
-- * A lock timeout of 1 s is PostgreSQL's default deadlock_timeout, after which it cancels an
--   autovacuum worker in a lock's way: the ANALYZE gave up first, every time. It now waits up to
--   3 s, and a table left out says so (a WARNING naming it).
-- * Any role with USAGE on the schema could have the tables analyzed as their owner, and hold
--   their SHARE UPDATE EXCLUSIVE lock to the end of its transaction (VACUUM waits for it), with
--   the sample size of its own default_statistics_target. The owner's work now lives in
--   pgdedup.analyze_as_owner, whose EXECUTE is revoked from PUBLIC (the role that ran the
--   migrations has it; grant it to a runtime role: docs/security.md), with the statistics
--   target pinned and each table analyzed once. analyze_tables runs as its caller, through
--   analyze_as_owner when the caller may execute it; otherwise it analyzes nothing, as
--   PostgreSQL skipped such a role's ANALYZE before revision 45.
-- And, found by the same review: under row-level security, similar_to_sketch (similar, check)
-- read every band key of every collection on each call (below).
-- Applied by migration 0046. Released files are never edited: a change is a new file + migration.

-- ANALYZE the given pgdedup tables (names from statistics_tables, each once) as their owner;
-- returns the ones analyzed. signatures on its scalar columns only (its arrays cost 20 times as
-- much to sample and no plan uses their statistics), at the default statistics target (a
-- column's own target, set by ALTER TABLE ... SET STATISTICS, still applies). A table whose
-- lock is not had within 3 s is left out, with a WARNING; on a standby nothing is analyzed.
-- Raises PD003 for a name that is not one of those tables.
CREATE FUNCTION pgdedup.analyze_as_owner(p_tables text[]) RETURNS text[]
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
        EXCEPTION WHEN lock_not_available THEN
            RAISE WARNING 'pgdedup.% not analyzed: another session held it for 3 s; its statistics stay as they were', t;
        END;
    END LOOP;
    RETURN done;
END $$;
REVOKE ALL ON FUNCTION pgdedup.analyze_as_owner(text[]) FROM PUBLIC;

-- ANALYZE the given pgdedup tables as their owner (analyze_as_owner) when the caller may execute
-- it; returns the ones analyzed. A caller without that grant gets none analyzed (an ANALYZE of
-- its own would be skipped by PostgreSQL unless it owned the tables, and their owner has the
-- grant). Raises PD003 as analyze_as_owner.
CREATE OR REPLACE FUNCTION pgdedup.analyze_tables(p_tables text[]) RETURNS text[]
LANGUAGE plpgsql AS $$
BEGIN
    IF has_function_privilege('pgdedup.analyze_as_owner(text[])', 'EXECUTE') THEN
        RETURN pgdedup.analyze_as_owner(p_tables);
    END IF;
    IF NOT coalesce(p_tables, '{}') <@ pgdedup.statistics_tables() THEN
        RAISE EXCEPTION 'pgdedup analyzes only its tables %, not %', pgdedup.statistics_tables(), p_tables
            USING ERRCODE = 'PD003';
    END IF;
    RETURN '{}'::text[];
END $$;

-- As in revision 45, for the trap it is for: a table is analyzed when the planner expects fewer
-- than 10 rows of the collection there (as the caller sees it: row-level security halves the
-- estimate) and it holds at least 100 (counted up to 100, through the caller's row-level
-- security: a collection the caller may not see has none). A collection that grew past its
-- statistics' count in other ways (estimated at 500 of a million rows, say) is left to
-- autovacuum, whose thresholds follow the table's growth.
CREATE OR REPLACE FUNCTION pgdedup.refresh_statistics(p_collection_id integer) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
    t text;
    counted bigint;
    plan json;
    stale text[] := '{}';
BEGIN
    FOREACH t IN ARRAY pgdedup.statistics_tables() LOOP
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

-- Rows like a sketch, as in revision 23, with each bucket's band computed once, in the band
-- key's own type, before the join: under row-level security (a reader role) the planner may use
-- only leakproof comparisons in an index condition ahead of the policy's, and "b.band = u.band -
-- 1" (its subtraction can fail, so it is not leakproof) is not one, so each call read every band key of every collection
-- (92 ms a call beside ~1.5 ms, at 20,000 rows).
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
