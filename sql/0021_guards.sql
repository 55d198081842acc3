-- pgdedup schema, version 21: guards that hostile reviews found missing.
--
-- * The tracking trigger (pgdedup.capture, SECURITY DEFINER: it runs as pgdedup's owner) cast
--   the key to text whatever the key column's type had become. A table's owner could change the
--   key to a type of their own with a cast function, and their next INSERT ran that function
--   with pgdedup's owner's rights. The trigger now casts only a key of the type the collection
--   recorded (one of the built-in key types); otherwise it queues "compare every row", and the
--   next index refuses the changed table with a clear error. Its NOTIFY payload is the
--   collection's id, not its name: any role may LISTEN, and names can say more than ids.
-- * may_read_source (the row-level security policy of every pgdedup table) used to_regclass,
--   which raises "permission denied for schema" for a schema the role may not use: one
--   collection in such a schema made every query of every non-owner role fail. Relations are
--   now looked up in the catalog (pgdedup.relation_of), which never raises.
-- * prepare_mark_column trusted the recorded marking column by name. After the table was made
--   again (or the column dropped and added back, or --reindex onto another table), pgdedup
--   overwrote the new column's values, or left it empty while its results said the rows were
--   marked. The column's identity (table oid, column number) is now recorded with its name;
--   a column that is no longer that one is vetted again like a new one: it may hold nothing,
--   or exactly the marks pgdedup stored (a restored database), and when it is empty the stored
--   result is dropped so the next dedupe writes every mark.
-- * track(off) emptied the queue without logging its keys: an edit of a keep-order column made
--   while tracked and not indexed yet was never re-examined by the incremental dedupe. The
--   queued keys now go to the change log first.
-- * keep_order_sql split the keep order on every comma, even inside a quoted column name, and
--   accepted the marking column, whose values the marking itself changes (the marks then
--   depended on the previous run's). Both fixed.
--
-- Applied by migration 0021. Released files are never edited: a change is a new file + migration.

ALTER TABLE pgdedup.collections ADD COLUMN mark_relid oid, ADD COLUMN mark_attnum smallint;
-- the columns marked so far are taken to be the ones pgdedup wrote, as revision 3 took them
UPDATE pgdedup.collections c SET mark_relid = a.attrelid, mark_attnum = a.attnum
FROM pg_class r JOIN pg_namespace n ON n.oid = r.relnamespace
JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.mark_column IS NOT NULL AND n.nspname = c.source_schema AND r.relname = c.source_table
  AND a.attname = c.mark_column;

-- The oid of relation p_schema.p_table, or NULL: looked up in the catalog, so it never raises
-- (to_regclass does, for a schema the role may not use).
CREATE FUNCTION pgdedup.relation_of(p_schema text, p_table text) RETURNS oid
LANGUAGE sql STABLE AS $$
    SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = p_schema AND c.relname = p_table
$$;

-- As in revision 3, also false (never an error) for a source in a schema the role may not use.
CREATE OR REPLACE FUNCTION pgdedup.may_read_source(p_schema text, p_table text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(has_schema_privilege(c.relnamespace, 'USAGE')
                    AND has_table_privilege(c.oid, 'SELECT')
                    AND (NOT c.relrowsecurity
                         OR (pg_has_role(c.relowner, 'USAGE') AND NOT c.relforcerowsecurity)
                         OR (SELECT r.rolbypassrls FROM pg_roles r WHERE r.rolname = current_user)), false)
    FROM (SELECT pgdedup.relation_of(p_schema, p_table) AS oid) t
    LEFT JOIN pg_class c ON c.oid = t.oid
$$;

-- As in revision 6, but a key is cast to text only while its column has the recorded type.
CREATE OR REPLACE FUNCTION pgdedup.capture() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    c pgdedup.collections;
BEGIN
    IF current_setting('pgdedup.marking', true) = 'on' THEN
        RETURN NULL;
    END IF;
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = TG_ARGV[0]::integer;
    IF NOT FOUND OR pgdedup.relation_of(c.source_schema, c.source_table) IS DISTINCT FROM TG_RELID THEN
        RETURN NULL;
    END IF;
    -- (the statement that fired this holds a lock on the table that ALTER TABLE needs: the
    -- type cannot change between this check and the casts below)
    IF TG_OP = 'TRUNCATE' OR (SELECT a.atttypid::regtype::text FROM pg_attribute a
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

-- As in revision 6, but stopping logs the queued keys as changed before emptying the queue, and
-- the table is looked up without raising.
CREATE OR REPLACE FUNCTION pgdedup.track(p_collection text, p_on boolean DEFAULT true) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    rel regclass;
    kind "char";
    prefix text;
    trig record;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.lock_collection(c.collection_id);
    IF current_setting('lock_timeout') = '0' THEN
        PERFORM set_config('lock_timeout', '5s', true);  -- CREATE/DROP TRIGGER lock the table briefly
    END IF;
    prefix := format('pgdedup_track_%s_', c.collection_id);
    rel := pgdedup.relation_of(c.source_schema, c.source_table);
    IF p_on AND rel IS NOT NULL AND NOT has_table_privilege(rel, 'TRIGGER') THEN
        RAISE EXCEPTION 'tracking %.% needs its owner (or the TRIGGER privilege on it); role "%" has neither',
            c.source_schema, c.source_table, current_user USING ERRCODE = '42501';
    END IF;
    -- the collection's triggers wherever they are (a renamed source keeps them)
    FOR trig IN SELECT t.tgname, t.tgrelid FROM pg_trigger t
                WHERE t.tgfoid = 'pgdedup.capture()'::regprocedure AND starts_with(t.tgname, prefix) LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', trig.tgname, trig.tgrelid::regclass);
    END LOOP;
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
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS pgdedup_new
                    FOR EACH STATEMENT EXECUTE FUNCTION pgdedup.capture(%s)', prefix || 'insert', rel, c.collection_id);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s REFERENCING OLD TABLE AS pgdedup_old NEW TABLE AS pgdedup_new
                    FOR EACH STATEMENT EXECUTE FUNCTION pgdedup.capture(%s)', prefix || 'update', rel, c.collection_id);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS pgdedup_old
                    FOR EACH STATEMENT EXECUTE FUNCTION pgdedup.capture(%s)', prefix || 'delete', rel, c.collection_id);
    EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %s
                    FOR EACH STATEMENT EXECUTE FUNCTION pgdedup.capture(%s)', prefix || 'truncate', rel, c.collection_id);
    IF NOT c.tracked THEN
        INSERT INTO pgdedup.queue (collection_id, row_key) VALUES (c.collection_id, NULL);
    END IF;
    UPDATE pgdedup.collections SET tracked = true WHERE collection_id = c.collection_id;
    RETURN true;
END $$;

-- As in revision 3, with the column's identity: the recorded column is trusted only while it is
-- the very column pgdedup wrote (same table oid, same column number). Any other column, also one
-- with the recorded name on a table made again, must be empty, or (under the recorded name) hold
-- exactly the marks pgdedup stored, as after a restore; an empty one drops the stored result of
-- in-place marking, so that the next dedupe decides in full and writes every mark.
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
            EXECUTE format(
                'SELECT NOT EXISTS (
                     (SELECT s.%3$I::text, s.%4$I::text FROM %1$I.%2$I s WHERE s.%4$I IS NOT NULL
                      EXCEPT SELECT d.row_key, d.duplicate_of FROM pgdedup.duplicates d
                             WHERE d.collection_id = $1 AND d.target = ''column'')
                     UNION ALL
                     (SELECT d.row_key, d.duplicate_of FROM pgdedup.duplicates d
                      WHERE d.collection_id = $1 AND d.target = ''column''
                      EXCEPT SELECT s.%3$I::text, s.%4$I::text FROM %1$I.%2$I s WHERE s.%4$I IS NOT NULL))',
                c.source_schema, c.source_table, c.key_column, p_column) INTO same_marks USING c.collection_id;
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

-- As in revision 5, but a quoted column name may hold commas, the marking column is refused,
-- and the table is looked up without raising.
CREATE OR REPLACE FUNCTION pgdedup.keep_order_sql(p_collection_id integer, p_keep_order text) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    c pgdedup.collections;
    rel oid;
    rest text := coalesce(p_keep_order, '');
    m text[];
    col text;
    parts text[] := '{}';
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = p_collection_id;
    rel := pgdedup.relation_of(c.source_schema, c.source_table);
    IF rel IS NULL THEN
        RAISE EXCEPTION 'the source table %.% of collection "%" does not exist (renamed or dropped?)',
            c.source_schema, c.source_table, c.name
            USING ERRCODE = 'PD006',
                  HINT = format('SELECT pgdedup.drop_collection(%L) forgets the collection; index the table under its new name to start again', c.name);
    END IF;
    WHILE trim(rest) <> '' LOOP
        IF rest ~ '^\s*,' THEN
            RAISE EXCEPTION 'keep order "%" has an empty item (expected: column [ASC|DESC] [NULLS FIRST|LAST], ...)',
                p_keep_order USING ERRCODE = 'PD003';
        END IF;
        -- one item (a column, quoted or not, [ASC|DESC] [NULLS FIRST|LAST]), then a comma or the end
        m := regexp_match(rest, '^\s*("(?:[^"]|"")+"|[^\s",]+)\s*(asc|desc)?\s*(nulls\s+(?:first|last))?\s*(,|$)(.*)$', 'is');
        IF m IS NULL THEN
            RAISE EXCEPTION 'cannot read keep order item "%" (expected: column [ASC|DESC] [NULLS FIRST|LAST])',
                trim(split_part(rest, ',', 1)) USING ERRCODE = 'PD003';
        END IF;
        IF m[4] = ',' AND trim(m[5]) = '' THEN
            RAISE EXCEPTION 'keep order "%" has an empty item (expected: column [ASC|DESC] [NULLS FIRST|LAST], ...)',
                p_keep_order USING ERRCODE = 'PD003';
        END IF;
        col := CASE WHEN left(m[1], 1) = '"' THEN replace(substr(m[1], 2, length(m[1]) - 2), '""', '"') ELSE m[1] END;
        IF NOT EXISTS (SELECT 1 FROM pg_attribute
                       WHERE attrelid = rel AND attname = col AND attnum > 0 AND NOT attisdropped) THEN
            RAISE EXCEPTION 'keep order column "%" does not exist in %.%', col, c.source_schema, c.source_table
                USING ERRCODE = 'PD003';
        END IF;
        IF col = c.mark_column THEN
            RAISE EXCEPTION 'keep order column "%" is the column pgdedup marks: its values change with every dedupe',
                col USING ERRCODE = 'PD003';
        END IF;
        parts := parts || format('s.%I %s %s', col, coalesce(upper(m[2]), 'ASC'), coalesce(upper(m[3]), ''));
        rest := m[5];
    END LOOP;
    parts := parts || format('s.%I ASC', c.key_column);  -- the key breaks every tie: deterministic
    RETURN array_to_string(parts, ', ');
END $$;

SELECT pgdedup.pin_search_paths();
