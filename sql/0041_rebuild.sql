-- pgdedup schema, version 41: a large first load into an empty band_keys builds the table's
-- primary key once instead of inserting into it. Revision 18 moves a staged load's keys in by
-- sorted inserts, in as many sessions as the load had workers: at a million rows (~18.6 million
-- keys, on a 2-core server with 128 MB of shared_buffers) 28.7-34.0 s. Inserting them into the
-- table without its primary key and adding the key afterwards (one sort of every key) took
-- 17.7-20.1 s on the same keys (two rounds each, in turns).
--
-- Only where no other collection has band keys: dropping the key of a table other collections
-- use would hold up all of them, and building the key again would sort their keys too, not
-- only the load's. So rebuild_band_keys applies when band_keys is empty and the staging
-- table holds no other collection's keys, seen by a role that sees every row (no row-level
-- security) and may drop and add the key (the tables' owner), and only while the key is revision
-- 1's band_keys_pkey (a layout converted by hand keeps its own). It takes both tables' ACCESS
-- EXCLUSIVE locks, waiting at most lock_timeout for them (an autovacuum of the staging table
-- is cancelled by PostgreSQL meanwhile), and holds them to the commit: the move is one
-- transaction, and a crash leaves the keys staged and the primary key as it was. Where it does
-- not apply it returns NULL without having changed anything, and the loader moves the keys by
-- revision 18's inserts.
--
-- Applied by migration 0041. Released files are never edited: a change is a new file + migration.

CREATE FUNCTION pgdedup.rebuild_band_keys(p_collection integer) RETURNS bigint
LANGUAGE plpgsql SET maintenance_work_mem = '256MB' SET lock_timeout = '5s' AS $$
DECLARE
    moved bigint;
BEGIN
    IF pg_catalog.row_security_active('pgdedup.band_keys') OR pg_catalog.row_security_active('pgdedup.band_keys_staged')
       OR NOT pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
                                      WHERE c.oid = 'pgdedup.band_keys'::pg_catalog.regclass), 'USAGE')
       OR NOT pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
                                      WHERE c.oid = 'pgdedup.band_keys_staged'::pg_catalog.regclass), 'USAGE')
       OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k  -- the key as revision 1 made it
                      WHERE k.conrelid = 'pgdedup.band_keys'::pg_catalog.regclass AND k.contype = 'p'
                        AND k.conname = 'band_keys_pkey') THEN
        RETURN NULL;
    END IF;
    BEGIN
        LOCK TABLE pgdedup.band_keys, pgdedup.band_keys_staged IN ACCESS EXCLUSIVE MODE;
    EXCEPTION WHEN lock_not_available THEN
        RETURN NULL;  -- another session uses them: the inserts never wait for a whole table
    END;
    IF EXISTS (SELECT 1 FROM pgdedup.band_keys)
       OR EXISTS (SELECT 1 FROM pgdedup.band_keys_staged WHERE collection_id <> p_collection) THEN
        RETURN NULL;
    END IF;
    ALTER TABLE pgdedup.band_keys DROP CONSTRAINT band_keys_pkey;
    INSERT INTO pgdedup.band_keys SELECT * FROM pgdedup.band_keys_staged;
    GET DIAGNOSTICS moved = ROW_COUNT;
    ALTER TABLE pgdedup.band_keys ADD CONSTRAINT band_keys_pkey PRIMARY KEY (collection_id, band, bucket, row_id);
    TRUNCATE pgdedup.band_keys_staged;
    RETURN moved;
END $$;

SELECT pgdedup.pin_search_paths();
