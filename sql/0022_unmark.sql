-- pgdedup schema, version 22: the marking column's identity, finished (a re-review of 21).
--
-- * unmark cleared the recorded column by name: on a table made again with an application's own
--   column of that name it set every value to NULL. It now clears only the very column pgdedup
--   wrote (revision 21's table oid and column number), or one holding nothing but pgdedup's marks
--   (as after a restore); any other is refused with nothing written. Its updates are not queued
--   by the tracking triggers any more (pgdedup.marking, as the marking itself).
-- * A restored table was refused when a marked row had been deleted before the dump: the
--   comparison with the stored marks counted marks of rows that no longer exist. Those are left
--   out now (pgdedup.holds_only_its_marks): every mark in the column must be the one stored for
--   its row, and every stored mark of a row still there must be in the column.
--
-- Applied by migration 0022. Released files are never edited: a change is a new file + migration.

-- Whether p_column of the collection's source holds pgdedup's stored in-place marks and nothing
-- else, rows deleted since they were marked aside.
CREATE FUNCTION pgdedup.holds_only_its_marks(c pgdedup.collections, p_column text) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
DECLARE
    result boolean;
BEGIN
    EXECUTE format(
        'SELECT NOT EXISTS (SELECT 1 FROM %1$I.%2$I s
                            LEFT JOIN pgdedup.duplicates d ON d.collection_id = $1 AND d.target = ''column''
                                                            AND d.row_key = s.%3$I::text
                            WHERE s.%4$I::text IS DISTINCT FROM d.duplicate_of
                              AND (s.%4$I IS NOT NULL OR d.duplicate_of IS NOT NULL))',
        c.source_schema, c.source_table, c.key_column, p_column) INTO result USING c.collection_id;
    RETURN result;
END $$;

-- As in revision 21, with the comparison above.
CREATE OR REPLACE FUNCTION pgdedup.prepare_mark_column(p_collection text, p_column text DEFAULT 'duplicate_of') RETURNS text
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
        IF current_setting('lock_timeout') IN ('0', '') THEN
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

-- As in revision 4, but only the column pgdedup marked (or one holding only its marks) is
-- cleared, without queueing the cleared rows for tracking; the table is looked up without raising.
CREATE OR REPLACE FUNCTION pgdedup.unmark(p_collection text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    rel oid;
    attnum smallint;
    cleared bigint := 0;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.lock_collection(c.collection_id);
    rel := pgdedup.relation_of(c.source_schema, c.source_table);
    SELECT a.attnum INTO attnum FROM pg_attribute a
    WHERE a.attrelid = rel AND a.attname = c.mark_column AND a.attnum > 0 AND NOT a.attisdropped;
    IF attnum IS NOT NULL THEN
        IF (rel IS DISTINCT FROM c.mark_relid OR attnum IS DISTINCT FROM c.mark_attnum)
           AND NOT pgdedup.holds_only_its_marks(c, c.mark_column) THEN
            RAISE EXCEPTION 'refusing to clear column %.%.%: it is not the column pgdedup marked (the table or the column was made again since) and it holds values pgdedup did not write; nothing was changed',
                c.source_schema, c.source_table, c.mark_column USING ERRCODE = 'PD006';
        END IF;
        PERFORM set_config('pgdedup.marking', 'on', true);
        EXECUTE format('UPDATE %I.%I SET %I = NULL WHERE %I IS NOT NULL',
                       c.source_schema, c.source_table, c.mark_column, c.mark_column);
        GET DIAGNOSTICS cleared = ROW_COUNT;
        PERFORM set_config('pgdedup.marking', 'off', true);
    END IF;
    DELETE FROM pgdedup.duplicates WHERE collection_id = c.collection_id AND target = 'column';
    DELETE FROM pgdedup.results WHERE collection_id = c.collection_id AND target = 'column';
    RETURN cleared;
END $$;

SELECT pgdedup.pin_search_paths();
