-- pgdedup schema, version 29: what happened to an untracked table reaches its marks.
--
-- * An incremental dedupe wrote the marks of the rows it re-decided only, trusting the marking
--   column to hold every other stored mark. A row of an untracked table deleted and inserted
--   again with the same key and text (or a table truncated and reloaded, an ETL's way) comes
--   back with NULL in the column: index, which compares texts, sees nothing changed, so that
--   row was left looking kept for good while pgdedup.duplicates said otherwise (status counted
--   a mark the column did not hold). For an untracked collection write_marks now compares the
--   whole column with the stored marks and writes every one that differs (only rows whose mark
--   differs are written, as before): one more pass over the table, as its index already makes.
--   A tracked table's triggers queue such a row, which is then re-decided and written.
-- * Tracking started on a collection that was untracked queued one catch-up comparison of every
--   row for the next index, which sees changed texts only: a keep-order change made while
--   untracked stayed out of every later incremental decision. track now also makes the next
--   dedupe of each target decide in full (the stored result loses its change position), as
--   README asked of an untracked collection after a keep-order change.
--
-- Applied by migration 0029. Released files are never edited: a change is a new file + migration.

-- Revision 28's write_marks, with every differing mark written for an untracked collection.
CREATE OR REPLACE FUNCTION pgdedup.write_marks(p_collection_id integer, p_only_redone boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    rel oid;
    tracked boolean;
BEGIN
    SELECT pgdedup.relation_of(c.source_schema, c.source_table), c.tracked INTO rel, tracked
    FROM pgdedup.collections c WHERE c.collection_id = p_collection_id;
    IF rel IS NOT NULL THEN  -- (a table that is gone fails in the update, as before)
        PERFORM pgdedup.lock_marks(rel);
    END IF;
    PERFORM pgdedup.write_marks_unlocked(p_collection_id, p_only_redone AND tracked);
END $$;

-- Revision 21's track; starting to track an untracked collection also makes the next dedupe of
-- each target decide in full.
ALTER FUNCTION pgdedup.track(text, boolean) RENAME TO track_triggers;
CREATE FUNCTION pgdedup.track(p_collection text, p_on boolean DEFAULT true) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    cid integer := pgdedup.collection_id(p_collection);
    was boolean;
    now_tracked boolean;
BEGIN
    SELECT c.tracked INTO was FROM pgdedup.collections c WHERE c.collection_id = cid;
    now_tracked := pgdedup.track_triggers(p_collection, p_on);
    IF now_tracked AND NOT was THEN
        UPDATE pgdedup.results r SET change_seq = NULL
        WHERE r.collection_id = cid AND r.target IN ('column', 'view');
    END IF;
    RETURN now_tracked;
END $$;

SELECT pgdedup.pin_search_paths();
