-- pgdedup schema, version 45: planner statistics that cover the collection at work.
-- PostgreSQL plans every statement of a run on the statistics of the last ANALYZE. When that
-- ANALYZE saw other collections only (it ran before this one was indexed, or after every
-- collection was dropped: an ANALYZE that finds no rows keeps the old list of common values),
-- the planner takes "collection_id = this one" for a single row. It then nests loops whose inner
-- side reads the whole collection once per outer row: a full dedupe of 20,000 rows took 91 s
-- instead of 1.2 s, of 40,000 rows 360 s instead of 2.4 s, and the exact checks, the incremental
-- run and the look-ups by key went quadratic the same way. The owner's full index ANALYZEd
-- pgdedup.signatures at its end; a role that does not own the tables cannot (PostgreSQL skips
-- its ANALYZE with a warning), and rows added through a collection handle or the queue were
-- never followed by one.
-- * pgdedup.analyze_tables ANALYZEs the pgdedup tables it is given, as their owner (SECURITY
--   DEFINER): any role that may use the schema can have them analyzed, which is all it can do
--   with it (autovacuum does the same).
-- * pgdedup.refresh_statistics(collection id) asks the planner, as the caller, how many rows of the
--   collection each table holds, counts them (up to 10,000), and has the tables whose estimate
--   is below a tenth of the count ANALYZEd. The check costs a few milliseconds; an ANALYZE reads
--   a sample of at most 30,000 rows of a table. update_duplicates calls it first; pgdedup's
--   dedupe and pairs call it before their work, in a transaction of its own when the connection
--   is pgdedup's (ANALYZE holds its table's SHARE UPDATE EXCLUSIVE lock to the commit).
-- Applied by migration 0045. Released files are never edited: a change is a new file + migration.

-- The pgdedup tables that hold rows per collection and that a run's plans depend on.
CREATE FUNCTION pgdedup.statistics_tables() RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT ARRAY['signatures', 'band_keys', 'duplicates', 'checked', 'leaders']
$$;

-- ANALYZE the given tables (names from statistics_tables, without the schema) as their owner;
-- returns the ones analyzed. signatures is analyzed on its scalar columns only (its arrays cost
-- 20 times as much to sample and no plan uses their statistics). A table whose lock is not had
-- within a second (another session analyzing or vacuuming it) is skipped and left out of the
-- result: it is left to autovacuum or the next run. On a standby it analyzes nothing (pairs by
-- estimate, which only reads, works there as before); a read-only transaction may ANALYZE.
-- Raises PD003 for a name that is not one of those tables.
CREATE FUNCTION pgdedup.analyze_tables(p_tables text[]) RETURNS text[]
LANGUAGE plpgsql SECURITY DEFINER SET lock_timeout = '1s' AS $$
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
    FOREACH t IN ARRAY coalesce(p_tables, '{}') LOOP
        BEGIN
            EXECUTE format('ANALYZE pgdedup.%I%s', t,
                           CASE WHEN t = 'signatures' THEN ' (collection_id, row_key, row_id, text_hash)' ELSE '' END);
            done := done || t;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
    END LOOP;
    RETURN done;
END $$;
-- (EXECUTE stays granted to PUBLIC, as for every pgdedup function: any role that may use the
-- schema may call it.)

-- Have the tables whose statistics do not cover collection p_collection_id ANALYZEd; returns
-- the ones analyzed (in psql: SELECT pgdedup.refresh_statistics(pgdedup.collection_id('name'))).
-- "Cover": the planner's estimate of the collection's rows in a table, as the caller sees it
-- (row-level security halves it), is at least a tenth of the rows there, counted up to 10,000; a
-- collection with fewer than 100 rows in a table is always covered (a nested loop over it costs
-- little). The rows are counted as the caller sees them: a collection it may not see has none.
CREATE FUNCTION pgdedup.refresh_statistics(p_collection_id integer) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
    t text;
    counted bigint;
    plan json;
    stale text[] := '{}';
BEGIN
    FOREACH t IN ARRAY pgdedup.statistics_tables() LOOP
        EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM pgdedup.%I x WHERE x.collection_id = $1 LIMIT 10000) n', t)
            INTO counted USING p_collection_id;
        CONTINUE WHEN counted < 100;
        EXECUTE format('EXPLAIN (FORMAT JSON) SELECT 1 FROM pgdedup.%I x WHERE x.collection_id = $1', t)
            INTO plan USING p_collection_id;
        IF (plan -> 0 -> 'Plan' ->> 'Plan Rows')::double precision * 10 < counted THEN
            stale := stale || t;
        END IF;
    END LOOP;
    IF stale = '{}' THEN
        RETURN stale;
    END IF;
    RETURN pgdedup.analyze_tables(stale);
END $$;

-- Bring one target up to date, as in revision 44, on statistics that cover the collection.
CREATE OR REPLACE FUNCTION pgdedup.update_duplicates(p_collection text, p_alter boolean DEFAULT true,
                                          p_threshold double precision DEFAULT NULL, p_keep_order text DEFAULT NULL,
                                          p_column text DEFAULT 'duplicate_of', p_max_bucket integer DEFAULT 100,
                                          p_full boolean DEFAULT false, p_verify text DEFAULT 'estimate')
RETURNS TABLE (kind text, rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_alter THEN
        PERFORM pgdedup.guard_marking(p_collection, p_column);
    ELSE
        PERFORM pgdedup.guard_collection_source(p_collection);
    END IF;
    PERFORM pgdedup.refresh_statistics(pgdedup.collection_id(p_collection));
    RETURN QUERY SELECT * FROM pgdedup.update_duplicates_unchecked(
        p_collection, p_alter, p_threshold, p_keep_order, p_column, p_max_bucket,
        p_full OR pgdedup.many_changes(pgdedup.collection_id(p_collection),
                                       CASE WHEN p_alter THEN 'column' ELSE 'view' END),
        p_verify);
END $$;

SELECT pgdedup.pin_search_paths();
