-- pgdedup schema, version 42: revision 41's rebuild of an empty band_keys, from a review of it.
--
-- Revision 41 asked for band_keys' and band_keys_staged's ACCESS EXCLUSIVE locks first and only
-- then looked whether the rebuild applied: every large first load beside other collections'
-- keys (the usual case) queued a strong lock request, and every query of band_keys behind it,
-- for up to 5 s a table. Now everything is checked first without a lock
-- (can_rebuild_band_keys), and again once the locks are held; the locks are asked for one table
-- at a time with a lock_timeout of at most 2 s each (the session's own, if shorter).
--
-- More cases are left to revision 18's inserts, where dropping the key would lose or break
-- something: a key index with its own tablespace or storage options, the key used as the
-- table's replica identity by name, or a foreign key referencing it. And a deadlock (another
-- session locking the two tables the other way round) or an object that depends on the key
-- makes the function give up as a lock it cannot have does: it returns NULL, everything it did
-- rolled back, instead of failing the run.
--
-- Applied by migration 0042. Released files are never edited: a change is a new file + migration.

-- Whether rebuild_band_keys may rebuild band_keys for collection p_collection's staged keys:
-- band_keys empty and the staging table holding no other collection's keys, as seen by a role
-- that sees every row and owns both tables, and band_keys' key as revision 1 made it, with
-- nothing that would be lost or broken by dropping it.
CREATE FUNCTION pgdedup.can_rebuild_band_keys(p_collection integer) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT NOT pg_catalog.row_security_active('pgdedup.band_keys')
       AND NOT pg_catalog.row_security_active('pgdedup.band_keys_staged')
       AND pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
                                   WHERE c.oid = 'pgdedup.band_keys'::pg_catalog.regclass), 'USAGE')
       AND pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
                                   WHERE c.oid = 'pgdedup.band_keys_staged'::pg_catalog.regclass), 'USAGE')
       AND EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_class i ON i.oid = k.conindid
                   JOIN pg_catalog.pg_index x ON x.indexrelid = i.oid
                   WHERE k.conrelid = 'pgdedup.band_keys'::pg_catalog.regclass AND k.contype = 'p'
                     AND k.conname = 'band_keys_pkey' AND i.reltablespace = 0 AND i.reloptions IS NULL
                     AND NOT x.indisreplident)
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint f
                       WHERE f.confrelid = 'pgdedup.band_keys'::pg_catalog.regclass)
       AND NOT EXISTS (SELECT 1 FROM pgdedup.band_keys)
       AND NOT EXISTS (SELECT 1 FROM pgdedup.band_keys_staged WHERE collection_id <> p_collection)
$$;

-- Move collection p_collection's staged keys into an empty band_keys by one insert without its
-- primary key, then add the key again, in the caller's transaction; returns how many moved, or
-- NULL, having changed nothing, where that does not apply (can_rebuild_band_keys) or the two
-- tables' locks cannot be had soon.
CREATE OR REPLACE FUNCTION pgdedup.rebuild_band_keys(p_collection integer) RETURNS bigint
LANGUAGE plpgsql SET maintenance_work_mem = '256MB' AS $$
DECLARE
    moved bigint;
BEGIN
    IF NOT pgdedup.can_rebuild_band_keys(p_collection) THEN
        RETURN NULL;
    END IF;
    -- (local to the caller's transaction, which commits or rolls back right after this call)
    PERFORM pg_catalog.set_config('lock_timeout',
        CASE WHEN pg_catalog.current_setting('lock_timeout')::interval BETWEEN '1 ms' AND '2 s'
             THEN pg_catalog.current_setting('lock_timeout') ELSE '2s' END, true);
    BEGIN
        LOCK TABLE pgdedup.band_keys_staged IN ACCESS EXCLUSIVE MODE;
        LOCK TABLE pgdedup.band_keys IN ACCESS EXCLUSIVE MODE;
        IF NOT pgdedup.can_rebuild_band_keys(p_collection) THEN
            RETURN NULL;  -- another collection's keys came meanwhile (the locks go with the commit)
        END IF;
        ALTER TABLE pgdedup.band_keys DROP CONSTRAINT band_keys_pkey;
        INSERT INTO pgdedup.band_keys SELECT * FROM pgdedup.band_keys_staged;
        GET DIAGNOSTICS moved = ROW_COUNT;
        ALTER TABLE pgdedup.band_keys ADD CONSTRAINT band_keys_pkey PRIMARY KEY (collection_id, band, bucket, row_id);
        TRUNCATE pgdedup.band_keys_staged;
    EXCEPTION WHEN lock_not_available OR deadlock_detected OR dependent_objects_still_exist THEN
        RETURN NULL;  -- the block's work is rolled back: the inserts will move the keys
    END;
    RETURN moved;
END $$;

SELECT pgdedup.pin_search_paths();
