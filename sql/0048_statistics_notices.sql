-- pgdedup schema, version 48: from the review of revisions 45-47.
-- * analyze_as_owner set its own lock timeout of 3 s whatever the caller's: a caller that had
--   set a shorter one (an application that never waits longer than 200 ms for a lock) waited
--   3 s. It now waits the caller's lock_timeout when that is set and shorter, else 3 s, and
--   the caller's setting is as it was afterwards (not a SET clause of the function: that would
--   hide the caller's value from it).
-- * A role that may not have pgdedup's tables analyzed (not granted analyze_as_owner) ran on
--   statistics that do not cover its collection without a word: refresh_statistics now raises
--   a WARNING naming the tables and the grant, each time it finds them so (on a primary).
-- Applied by migration 0048. Released files are never edited: a change is a new file + migration.

-- As in revision 47, waiting for each table's lock at most the caller's lock_timeout when it
-- is set and shorter than 3 s, else 3 s.
CREATE OR REPLACE FUNCTION pgdedup.analyze_as_owner(p_tables text[]) RETURNS text[]
LANGUAGE plpgsql SECURITY DEFINER SET default_statistics_target = 100 AS $$
DECLARE
    t text;
    done text[] := '{}';
    callers text := pg_catalog.current_setting('lock_timeout');
    wait text := CASE WHEN callers::interval > '0' AND callers::interval < '3s' THEN callers ELSE '3s' END;
BEGIN
    IF NOT coalesce(p_tables, '{}') <@ pgdedup.statistics_tables() THEN
        RAISE EXCEPTION 'pgdedup analyzes only its tables %, not %', pgdedup.statistics_tables(), p_tables
            USING ERRCODE = 'PD003';
    END IF;
    IF pg_catalog.pg_is_in_recovery() THEN
        RETURN done;  -- (a standby cannot ANALYZE: it has its primary's statistics)
    END IF;
    -- local to the transaction (a SET clause would hide the caller's value): put back below; an
    -- error out of here rolls it back with the caller's (sub)transaction
    PERFORM pg_catalog.set_config('lock_timeout', wait, true);
    FOR t IN SELECT DISTINCT n FROM unnest(p_tables) n ORDER BY n LOOP
        BEGIN
            EXECUTE format('ANALYZE pgdedup.%I%s', t,
                           CASE WHEN t = 'signatures' THEN ' (collection_id, row_key, row_id, text_hash)' ELSE '' END);
            done := done || t;
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            RAISE WARNING 'pgdedup.% not analyzed: another session held it for %; its statistics stay as they were',
                t, wait;
        END;
    END LOOP;
    PERFORM pg_catalog.set_config('lock_timeout', callers, true);
    RETURN done;
END $$;

-- As in revision 47, with a WARNING when tables whose statistics do not cover the collection
-- cannot be analyzed by this role.
CREATE OR REPLACE FUNCTION pgdedup.refresh_statistics(p_collection_id integer) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
    t text;
    counted bigint;
    plan json;
    stale text[] := '{}';
    done text[];
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
    done := pgdedup.analyze_tables(stale);
    IF NOT has_function_privilege('pgdedup.analyze_as_owner(text[])', 'EXECUTE') AND NOT pg_catalog.pg_is_in_recovery() THEN
        RAISE WARNING 'pgdedup.% not analyzed: their statistics do not cover collection "%", and role % is not granted pgdedup.analyze_as_owner; its runs may read the whole collection once per row until the owner or autovacuum analyzes them',
            array_to_string(stale, ', pgdedup.'),
            (SELECT c.name FROM pgdedup.collections c WHERE c.collection_id = p_collection_id), current_user
            USING HINT = 'GRANT EXECUTE ON FUNCTION pgdedup.analyze_as_owner(text[]) TO ' || quote_ident(current_user);
    END IF;
    RETURN done;
END $$;

SELECT pgdedup.pin_search_paths();
