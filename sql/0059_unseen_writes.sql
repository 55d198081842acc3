-- pgdedup schema, version 59: whether a keep-order column can be sorted is asked of its base
-- type, never by a cast to a domain; writes whose keys no trigger could give make the next
-- dedupe decide in full.
--
-- Revision 57's pgdedup.orderable planned `SELECT NULL::<the column's type> ... ORDER BY`. For a
-- domain, planning that cast loads the domain's CHECK constraints and folds an IMMUTABLE call in
-- them: the domain owner's function ran with the rights of whoever ran `dedupe --keep-order`
-- (or `watch`), so the non-superuser owner of a source table became superuser when a superuser
-- deduped it (found by review; the decision's own ORDER BY on the column runs no such code).
-- A domain now sorts as its base type (followed down, never cast to); an array as its
-- element type, a composite as each of its fields; only a type that is none of these is
-- planned, on a NULL of that type, which runs no function.
--
-- capture's "compare every row" entries (a TRUNCATE, a key column of another type, and since
-- revision 58 writes while the source had another name) made the next index compare every row,
-- which finds text changes only: a keep-order edit among those writes (a TRUNCATE and reload
-- with other dates; an UPDATE of a date while the table was renamed) reached no change log and
-- the next dedupe ran incrementally, keeping the old order's marks (found by review). capture
-- now also forgets the results' change log position, as `track` does when it starts, so the
-- next dedupe of each target decides in full whenever it runs (before or after that index).
-- The UPDATE skips results already forgotten, so concurrent writers wait on it only until the
-- first of them commits.
--
-- Applied by migration 0059. Released files are never edited: a change is a new file + migration.

-- As in revision 57, asked of base types only.
CREATE OR REPLACE FUNCTION pgdedup.orderable(p_type regtype) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
DECLARE
    t pg_catalog.pg_type;
BEGIN
    SELECT * INTO t FROM pg_catalog.pg_type WHERE oid = p_type;
    WHILE t.typtype = 'd' LOOP  -- a domain sorts as its base type (and is never cast to: its CHECK)
        SELECT * INTO t FROM pg_catalog.pg_type WHERE oid = t.typbasetype;
    END LOOP;
    IF t.typcategory = 'A' AND t.typelem <> 0 THEN  -- an array sorts by its elements
        RETURN pgdedup.orderable(t.typelem::regtype);
    END IF;
    IF t.typtype = 'c' THEN  -- a composite by its fields
        RETURN NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
                           WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
                             AND NOT pgdedup.orderable(a.atttypid::regtype));
    END IF;
    EXECUTE format('SELECT 1 FROM (SELECT NULL::%s) t(v) ORDER BY v LIMIT 0', t.oid::regtype);
    RETURN true;
EXCEPTION WHEN undefined_function THEN  -- "could not identify an ordering operator"
    RETURN false;
END $$;

-- As in revision 58, the next dedupe decided in full after writes it cannot name.
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
        -- which rows changed, and how, is not known: keep-order edits among them are in no
        -- change log, so the next dedupe of each target decides in full (as after `track`)
        UPDATE pgdedup.results SET change_seq = NULL
        WHERE collection_id = c.collection_id AND target IN ('column', 'view') AND change_seq IS NOT NULL;
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

SELECT pgdedup.pin_search_paths();
