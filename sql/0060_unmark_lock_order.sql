-- pgdedup schema, version 60: unmark takes the collection's lock before the table's marks lock.
--
-- unmark (revision 28) guarded the source and took the table's marks lock, which waits, before
-- unmark_unchecked took the collection's lock, which does not: behind a running dedupe (which
-- holds both while it writes its marks) it waited for the whole dedupe, with no time limit
-- under the CLI's lock_timeout 0, instead of failing at once naming it (PD005) as every other
-- command does (found by a crash and concurrency test pass). The collection's lock comes first
-- now, as in dedupe, so the two are always taken in the same order.
--
-- Applied by migration 0060. Released files are never edited: a change is a new file + migration.

-- As in revision 28, the collection's lock first.
CREATE OR REPLACE FUNCTION pgdedup.unmark(p_collection text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    rel oid;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.lock_collection(c.collection_id);
    rel := pgdedup.relation_of(c.source_schema, c.source_table);
    IF rel IS NOT NULL THEN
        PERFORM pgdedup.guard_collection_source(p_collection, c.mark_column, false);
        PERFORM pgdedup.lock_marks(rel);
    END IF;
    RETURN pgdedup.unmark_unchecked(p_collection);
END $$;

SELECT pgdedup.pin_search_paths();
