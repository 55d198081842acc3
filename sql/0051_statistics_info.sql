-- pgdedup schema, version 51: from a review of revision 50.
-- * refresh_statistics told a role that may not have stale tables analyzed in a NOTICE, which
--   the server sends only to a client whose client_min_messages is notice or lower: a role,
--   database or driver that sets it to warning (some frameworks do) got no word at all, in psql
--   or in Python. It is now INFO, as pgdedup's progress messages are (revision 9): always sent
--   to the client, and still not written to the server log under PostgreSQL's defaults.
-- Applied by migration 0051. Released files are never edited: a change is a new file + migration.

-- As in revision 50, saying so at INFO level (sent to the client whatever its client_min_messages).
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
        RAISE INFO 'pgdedup.% not analyzed: their statistics do not cover collection "%", and role % is not granted pgdedup.analyze_as_owner; runs may read the whole collection once per row until the owner or autovacuum analyzes them',
            array_to_string(stale, ', pgdedup.'),
            (SELECT c.name FROM pgdedup.collections c WHERE c.collection_id = p_collection_id), current_user
            USING HINT = format('the tables'' owner can run SELECT pgdedup.analyze_tables(%L), or grant EXECUTE ON '
                                'FUNCTION pgdedup.analyze_as_owner(text[]) to the role that writes the collection''s rows',
                                stale);
    END IF;
    RETURN done;
END $$;

SELECT pgdedup.pin_search_paths();
