-- Undo 0006's own objects (the migration then rebuilds revisions 4 and 5 from revision 2:
-- 0004.down, 0003.down, 0002.down, 0002, 0003, 0004, 0005). Tracking triggers are removed first.
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT name FROM pgdedup.collections WHERE tracked LOOP
        PERFORM pgdedup.track(c.name, false);
    END LOOP;
END $$;
DROP VIEW pgdedup.status;
DROP VIEW pgdedup.pending;
CREATE VIEW pgdedup.status AS SELECT 1 AS placeholder;  -- 0004.down drops it
DROP FUNCTION pgdedup.update_duplicates(text, boolean, double precision, text, text, integer, boolean);
DROP FUNCTION pgdedup.write_marks(integer, boolean);
DROP FUNCTION pgdedup.prune_changes(integer);
DROP FUNCTION pgdedup.store_changes(integer, text, double precision, text, integer, timestamptz, bigint);
DROP FUNCTION pgdedup.fill_buckets(integer, text, text, integer);
DROP FUNCTION pgdedup.decide_changes(integer, double precision, text, integer, bigint);
DROP FUNCTION pgdedup.walk();
DROP FUNCTION pgdedup.log_changes(integer, text[]);
DROP FUNCTION pgdedup.track(text, boolean);
DROP FUNCTION pgdedup.capture();
DROP TABLE pgdedup.changes;
DROP TABLE pgdedup.queue;
ALTER TABLE pgdedup.results DROP COLUMN change_seq;
ALTER TABLE pgdedup.collections DROP COLUMN tracked;
