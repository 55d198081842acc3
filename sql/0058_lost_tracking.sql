-- pgdedup schema, version 58: tracking that was lost is seen, never trusted.
--
-- A collection's triggers stay on the relation that had the source's name when `track` made
-- them. Writes made while that relation had another name (ALTER TABLE ... RENAME and back)
-- fired capture on a relation that was not the source by name, and capture queued nothing: they
-- were lost for good, and the next index (from the queue) and dedupe said all was well. A
-- source replaced under its name (DROP and CREATE, or the rename swap of an ETL load) has no
-- triggers at all, and `tracked` still said true, so index read only the empty queue and an
-- incremental dedupe wrote only its region: wrong marks without an error.
--
-- * capture, fired on the collection's triggers while their relation is not the source by name,
--   queues "compare every row" (a NULL key): the next index compares every row instead.
-- * tracking_intact tells whether the source by name carries the collection's four triggers,
--   enabled. index and dedupe (Python) stop tracking a collection whose tracking is not intact
--   (track(false): the queued keys are logged as changes, the triggers removed wherever they
--   are) and say so, so that index compares every row and dedupe writes every mark that
--   differs, as for any untracked collection; `pgdedup watch` stops with an error.
--
-- Applied by migration 0058. Released files are never edited: a change is a new file + migration.

-- As in revision 21, queueing "compare every row" when fired on a relation that is not the
-- collection's source by name (the source renamed since `track`: its rows changed unseen).
CREATE OR REPLACE FUNCTION pgdedup.capture() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    c pgdedup.collections;
BEGIN
    IF current_setting('pgdedup.marking', true) = 'on' THEN
        RETURN NULL;
    END IF;
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = TG_ARGV[0]::integer;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    -- (the statement that fired this holds a lock on the table that ALTER TABLE needs: the
    -- type cannot change between this check and the casts below)
    IF TG_OP = 'TRUNCATE'
       OR pgdedup.relation_of(c.source_schema, c.source_table) IS DISTINCT FROM TG_RELID
       OR (SELECT a.atttypid::regtype::text FROM pg_attribute a
           WHERE a.attrelid = TG_RELID AND a.attname = c.key_column
             AND a.attnum > 0 AND NOT a.attisdropped) IS DISTINCT FROM c.key_type THEN
        INSERT INTO pgdedup.queue (collection_id, row_key) VALUES (c.collection_id, NULL);
    ELSIF TG_OP = 'INSERT' THEN
        EXECUTE format('INSERT INTO pgdedup.queue (collection_id, row_key)
                        SELECT $1, n.%1$I::text FROM pgdedup_new n WHERE n.%1$I IS NOT NULL', c.key_column)
            USING c.collection_id;
    ELSIF TG_OP = 'DELETE' THEN
        EXECUTE format('INSERT INTO pgdedup.queue (collection_id, row_key)
                        SELECT $1, o.%1$I::text FROM pgdedup_old o WHERE o.%1$I IS NOT NULL', c.key_column)
            USING c.collection_id;
    ELSE
        EXECUTE format('INSERT INTO pgdedup.queue (collection_id, row_key)
                        SELECT $1, k FROM (SELECT n.%1$I::text FROM pgdedup_new n
                                           UNION SELECT o.%1$I::text FROM pgdedup_old o) AS u(k)
                        WHERE k IS NOT NULL', c.key_column)
            USING c.collection_id;
    END IF;
    PERFORM pg_notify('pgdedup', c.collection_id::text);
    RETURN NULL;
END $$;

-- Whether the collection's source, by name, carries the four triggers track_triggers makes for
-- it, enabled (a trigger disabled, or firing only for replicas, misses writes as a missing one
-- does). False for a collection that is not tracked, or whose source is not there.
CREATE FUNCTION pgdedup.tracking_intact(p_collection_id integer) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT c.tracked AND (SELECT count(*) FROM pg_trigger t
                          WHERE t.tgrelid = pgdedup.relation_of(c.source_schema, c.source_table)
                            AND t.tgfoid = 'pgdedup.capture()'::regprocedure
                            AND starts_with(t.tgname, format('pgdedup_track_%s_', c.collection_id))
                            AND t.tgenabled IN ('O', 'A')) = 4
    FROM pgdedup.collections c WHERE c.collection_id = p_collection_id
$$;

SELECT pgdedup.pin_search_paths();
