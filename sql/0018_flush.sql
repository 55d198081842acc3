-- pgdedup schema, version 18: a staged first load's band keys move into band_keys without
-- DELETE ... RETURNING. Revision 1 moved them in one statement (a DELETE of the staged keys
-- feeding a sorted INSERT): at 1,000,000 rows (16 million keys) that took 55 s of a 131 s index,
-- run alone after the last chunk. Measured at 300,000 rows (4.8 million keys, same server, two
-- rounds): that statement 18.4 / 16.6 s; the sorted INSERT then a DELETE 14.6 / 12.8 s (the
-- DELETE alone 1.5 s: it was feeding the INSERT through RETURNING that cost); the sorted INSERT
-- then a TRUNCATE 11.5 s; an unsorted INSERT 20.5 s.
--
-- The sorted insert itself is the rest: at 1,000,000 rows still ~50 s in one session, spilling
-- its sort of 16 million keys to disk, while the signing processes have finished and the other
-- cores idle. So the loader moves them in as many sessions as it had workers, each the keys of
-- a share of the bands (one scan of the staging table each, which has no index) in a
-- transaction of its own.
--
-- Each share's keys are inserted in key order first, then deleted from the staging table (so
-- the parallel path pays the DELETE, ~1.5 s at 300,000 rows, once per share); a last call, for
-- all bands, then only gives back the dead rows' space: by TRUNCATE when the table holds no
-- other collection's keys and the role may truncate it and sees every row (row-level security
-- hides other collections' rows from other roles, and TRUNCATE would not spare them). A call
-- for all bands that moves keys itself (a crashed load's, moved by the next run) truncates
-- instead of deleting under the same conditions. TRUNCATE takes the staging table's ACCESS EXCLUSIVE lock
-- for the rest of the transaction; it is asked for with NOWAIT after the insert, so a first load
-- of another collection that is writing its staged keys at that moment is never waited for (the
-- DELETE is used instead), and one that starts later waits only for this commit.
--
-- Applied by migration 0018. Released files are never edited: a change is a new file + migration.

-- Move a collection's staged band keys (of the bands p_bands, or of all with NULL) into
-- band_keys, in one transaction. Only a call for all bands may empty the table by TRUNCATE.
DROP FUNCTION pgdedup.flush_band_keys(integer);
CREATE FUNCTION pgdedup.flush_band_keys(p_collection integer, p_bands integer[] DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql SET work_mem = '256MB' AS $$
DECLARE
    moved bigint;
BEGIN
    INSERT INTO pgdedup.band_keys
        SELECT * FROM pgdedup.band_keys_staged
        WHERE collection_id = p_collection AND (p_bands IS NULL OR band = ANY (p_bands))
        ORDER BY band, bucket, row_id;
    GET DIAGNOSTICS moved = ROW_COUNT;
    -- TRUNCATE ignores row-level security: only a role that sees every staged row (the owner,
    -- a superuser) can know that none belongs to another collection
    IF p_bands IS NULL AND pg_catalog.has_table_privilege('pgdedup.band_keys_staged', 'TRUNCATE')
       AND NOT pg_catalog.row_security_active('pgdedup.band_keys_staged') THEN
        BEGIN
            LOCK TABLE pgdedup.band_keys_staged IN ACCESS EXCLUSIVE MODE NOWAIT;
            IF NOT EXISTS (SELECT 1 FROM pgdedup.band_keys_staged WHERE collection_id <> p_collection) THEN
                TRUNCATE pgdedup.band_keys_staged;
                RETURN moved;
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            NULL;  -- another load is writing staged keys: delete ours instead
        END;
    END IF;
    IF moved > 0 THEN
        DELETE FROM pgdedup.band_keys_staged
        WHERE collection_id = p_collection AND (p_bands IS NULL OR band = ANY (p_bands));
    END IF;
    RETURN moved;
END $$;

SELECT pgdedup.pin_search_paths();
