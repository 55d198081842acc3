-- pgdedup schema, version 52: the caller's lock_timeout is put back.
--
-- Three functions set lock_timeout for their own DDL, local to the caller's transaction, and
-- left it so: prepare_mark_column (5 s to add the marking column, when the session has none;
-- its body is prepare_mark_column_unchecked since revision 24), track (5 s for CREATE/DROP
-- TRIGGER; track_triggers since revision 29) and rebuild_band_keys (at most 2 s for its two
-- locks). Called from psql or an application's transaction, the rest of that transaction ran
-- with pgdedup's timeout: mark_duplicates adding its column went on to mark the rows with a
-- 5 s lock timeout, so a row held by another transaction for longer failed the run where it
-- would have waited, and the caller's own statements after it likewise. Each function now
-- reads the caller's value on entry and puts it back as soon as its DDL is done (not a SET
-- clause: that would hide the caller's value, which a shorter one must keep); an error out of
-- them rolls the setting back with the caller's (sub)transaction.
--
-- Applied by migration 0052. Released files are never edited: a change is a new file + migration.

-- As in revision 22 (prepare_mark_column's body), the caller's lock_timeout put back after the
-- ALTER TABLE.
CREATE OR REPLACE FUNCTION pgdedup.prepare_mark_column_unchecked(p_collection text, p_column text DEFAULT 'duplicate_of') RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    rel oid;
    kind "char";
    found_type text;
    generated "char";
    attnum smallint;
    target text;
    other text;
    has_values boolean;
    same_marks boolean;
    fresh boolean;
    callers text := current_setting('lock_timeout');
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.lock_collection(c.collection_id);
    target := format('%I.%I.%I', c.source_schema, c.source_table, p_column);
    IF p_column IS NULL OR p_column = '' THEN
        RAISE EXCEPTION 'the marking column needs a name' USING ERRCODE = 'PD003';
    END IF;
    rel := pgdedup.relation_of(c.source_schema, c.source_table);
    IF rel IS NULL THEN
        RAISE EXCEPTION 'the source table %.% of collection "%" does not exist any more',
            c.source_schema, c.source_table, c.name USING ERRCODE = 'PD006';
    END IF;
    SELECT relkind INTO kind FROM pg_class WHERE oid = rel;
    IF kind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '%.% is not a table, so pgdedup cannot mark it in place; use the non-invasive mode (--no-alter / find_duplicates)',
            c.source_schema, c.source_table USING ERRCODE = 'PD006';
    END IF;
    IF c.mark_column IS NOT NULL AND c.mark_column <> p_column THEN
        RAISE EXCEPTION 'collection "%" marks column "%"; pgdedup writes no other column of %.%',
            c.name, c.mark_column, c.source_schema, c.source_table USING ERRCODE = 'PD006';
    END IF;
    IF p_column = c.key_column OR p_column = ANY (c.text_columns) THEN
        RAISE EXCEPTION 'refusing to mark column "%": it is the % of collection "%"', p_column,
            CASE WHEN p_column = c.key_column THEN 'key' ELSE 'text' END, c.name USING ERRCODE = 'PD006';
    END IF;
    SELECT o.name INTO other FROM pgdedup.collections o
    WHERE o.collection_id <> c.collection_id AND o.source_schema = c.source_schema
      AND o.source_table = c.source_table AND o.mark_column = p_column;
    IF other IS NOT NULL THEN
        RAISE EXCEPTION 'column % is marked by collection "%"', target, other USING ERRCODE = 'PD006';
    END IF;
    SELECT a.atttypid::regtype::text, a.attgenerated, a.attnum INTO found_type, generated, attnum FROM pg_attribute a
    WHERE a.attrelid = rel AND a.attname = p_column AND a.attnum > 0 AND NOT a.attisdropped;
    IF found_type IS NULL THEN
        IF callers IN ('0', '') THEN
            PERFORM set_config('lock_timeout', '5s', true);
        END IF;
        BEGIN
            EXECUTE format('ALTER TABLE %I.%I ADD COLUMN %I %s', c.source_schema, c.source_table, p_column,
                           pgdedup.key_type_sql(c.key_type));
        EXCEPTION WHEN lock_not_available THEN
            RAISE EXCEPTION 'could not lock %.% to add column "%" within %: other transactions are using the table; try again later or add the column yourself (type %)',
                c.source_schema, c.source_table, p_column, current_setting('lock_timeout'), c.key_type
                USING ERRCODE = 'PD005';
        END;
        PERFORM set_config('lock_timeout', callers, true);
        SELECT a.attnum INTO attnum FROM pg_attribute a
        WHERE a.attrelid = rel AND a.attname = p_column AND NOT a.attisdropped;
        fresh := true;
    ELSIF c.mark_column IS DISTINCT FROM p_column OR c.mark_relid IS DISTINCT FROM rel
          OR c.mark_attnum IS DISTINCT FROM attnum THEN
        IF found_type <> c.key_type OR generated <> '' THEN
            RAISE EXCEPTION 'refusing to mark column %: marks are keys of type %, it is % %', target, c.key_type,
                CASE WHEN generated <> '' THEN 'a generated column of type' ELSE 'of type' END, found_type
                USING ERRCODE = 'PD006';
        END IF;
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.%I WHERE %I IS NOT NULL)',
                       c.source_schema, c.source_table, p_column) INTO has_values;
        IF has_values AND c.mark_column = p_column THEN  -- the marks pgdedup stored, and nothing else?
            same_marks := pgdedup.holds_only_its_marks(c, p_column);
        END IF;
        IF has_values AND NOT coalesce(same_marks, false) THEN
            RAISE EXCEPTION 'refusing to mark column %: it holds values pgdedup did not write (pgdedup marks only a column it adds, or an empty one of the key''s type added for it%)',
                target, CASE WHEN c.mark_column = p_column
                             THEN '; this is not the column it marked: the table or the column was made again since' ELSE '' END
                USING ERRCODE = 'PD006';
        END IF;
        fresh := NOT has_values;
    ELSE
        fresh := false;  -- the very column pgdedup wrote
    END IF;
    IF fresh THEN  -- nothing marked there: decide in full and write every mark
        DELETE FROM pgdedup.results r WHERE r.collection_id = c.collection_id AND r.target = 'column';
        DELETE FROM pgdedup.duplicates d WHERE d.collection_id = c.collection_id AND d.target = 'column';
    END IF;
    UPDATE pgdedup.collections SET mark_column = p_column, mark_relid = rel, mark_attnum = attnum
    WHERE collection_id = c.collection_id;
    RETURN target;
END $$;

-- As in revision 21 (track's body), the caller's lock_timeout put back after the trigger DDL.
CREATE OR REPLACE FUNCTION pgdedup.track_triggers(p_collection text, p_on boolean DEFAULT true) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    rel regclass;
    kind "char";
    prefix text;
    trig record;
    callers text := current_setting('lock_timeout');
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.lock_collection(c.collection_id);
    prefix := format('pgdedup_track_%s_', c.collection_id);
    rel := pgdedup.relation_of(c.source_schema, c.source_table);
    IF p_on AND rel IS NOT NULL AND NOT has_table_privilege(rel, 'TRIGGER') THEN
        RAISE EXCEPTION 'tracking %.% needs its owner (or the TRIGGER privilege on it); role "%" has neither',
            c.source_schema, c.source_table, current_user USING ERRCODE = '42501';
    END IF;
    IF callers IN ('0', '') THEN
        PERFORM set_config('lock_timeout', '5s', true);  -- CREATE/DROP TRIGGER lock the table briefly
    END IF;
    -- the collection's triggers wherever they are (a renamed source keeps them)
    FOR trig IN SELECT t.tgname, t.tgrelid FROM pg_trigger t
                WHERE t.tgfoid = 'pgdedup.capture()'::regprocedure AND starts_with(t.tgname, prefix) LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', trig.tgname, trig.tgrelid::regclass);
    END LOOP;
    PERFORM set_config('lock_timeout', callers, true);
    IF rel IS NULL OR NOT p_on THEN
        UPDATE pgdedup.collections SET tracked = false WHERE collection_id = c.collection_id;
        -- a queued key may be a keep-order edit that no later index would see (an untracked index
        -- compares texts only): the incremental dedupe re-examines it from the change log
        PERFORM pgdedup.log_changes(c.collection_id, ARRAY(SELECT DISTINCT q.row_key FROM pgdedup.queue q
                                                           WHERE q.collection_id = c.collection_id
                                                             AND q.row_key IS NOT NULL));
        DELETE FROM pgdedup.queue WHERE collection_id = c.collection_id;
        IF NOT p_on THEN
            RETURN false;
        END IF;
        RAISE EXCEPTION 'the source table %.% of collection "%" does not exist (renamed or dropped?)',
            c.source_schema, c.source_table, c.name USING ERRCODE = 'PD006';
    END IF;
    SELECT relkind INTO kind FROM pg_class WHERE oid = rel;
    IF kind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '%.% is not a table, so it cannot be tracked (triggers need a table)',
            c.source_schema, c.source_table USING ERRCODE = 'PD006';
    END IF;
    IF callers IN ('0', '') THEN
        PERFORM set_config('lock_timeout', '5s', true);
    END IF;
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS pgdedup_new
                    FOR EACH STATEMENT EXECUTE FUNCTION pgdedup.capture(%s)', prefix || 'insert', rel, c.collection_id);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s REFERENCING OLD TABLE AS pgdedup_old NEW TABLE AS pgdedup_new
                    FOR EACH STATEMENT EXECUTE FUNCTION pgdedup.capture(%s)', prefix || 'update', rel, c.collection_id);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS pgdedup_old
                    FOR EACH STATEMENT EXECUTE FUNCTION pgdedup.capture(%s)', prefix || 'delete', rel, c.collection_id);
    EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %s
                    FOR EACH STATEMENT EXECUTE FUNCTION pgdedup.capture(%s)', prefix || 'truncate', rel, c.collection_id);
    PERFORM set_config('lock_timeout', callers, true);
    IF NOT c.tracked THEN
        INSERT INTO pgdedup.queue (collection_id, row_key) VALUES (c.collection_id, NULL);
    END IF;
    UPDATE pgdedup.collections SET tracked = true WHERE collection_id = c.collection_id;
    RETURN true;
END $$;

-- As in revision 42, the caller's lock_timeout put back on every way out.
CREATE OR REPLACE FUNCTION pgdedup.rebuild_band_keys(p_collection integer) RETURNS bigint
LANGUAGE plpgsql SET maintenance_work_mem = '256MB' AS $$
DECLARE
    moved bigint;
    callers text := pg_catalog.current_setting('lock_timeout');
BEGIN
    IF NOT pgdedup.can_rebuild_band_keys(p_collection) THEN
        RETURN NULL;
    END IF;
    -- local to the caller's transaction, put back before returning
    PERFORM pg_catalog.set_config('lock_timeout',
        CASE WHEN callers::interval BETWEEN '1 ms' AND '2 s' THEN callers ELSE '2s' END, true);
    BEGIN
        LOCK TABLE pgdedup.band_keys_staged IN ACCESS EXCLUSIVE MODE;
        LOCK TABLE pgdedup.band_keys IN ACCESS EXCLUSIVE MODE;
        IF NOT pgdedup.can_rebuild_band_keys(p_collection) THEN
            PERFORM pg_catalog.set_config('lock_timeout', callers, true);
            RETURN NULL;  -- another collection's keys came meanwhile (the locks go with the commit)
        END IF;
        ALTER TABLE pgdedup.band_keys DROP CONSTRAINT band_keys_pkey;
        INSERT INTO pgdedup.band_keys SELECT * FROM pgdedup.band_keys_staged;
        GET DIAGNOSTICS moved = ROW_COUNT;
        ALTER TABLE pgdedup.band_keys ADD CONSTRAINT band_keys_pkey PRIMARY KEY (collection_id, band, bucket, row_id);
        TRUNCATE pgdedup.band_keys_staged;
    EXCEPTION WHEN lock_not_available OR deadlock_detected OR dependent_objects_still_exist THEN
        moved := NULL;  -- the block's work is rolled back: the inserts will move the keys
    END;
    PERFORM pg_catalog.set_config('lock_timeout', callers, true);
    RETURN moved;
END $$;

SELECT pgdedup.pin_search_paths();
