-- pgdedup schema, version 57: refusals made before anything is written, and told truly.
--
-- * keep_order_sql refuses (PD003) a keep-order column whose type has no ordering (json, xml,
--   point, ...: no default btree operator class). It checked only that the column exists, so
--   `pgdedup dedupe --keep-order meta` (json) added and committed the marking column before the
--   decision's ORDER BY failed with PostgreSQL's "could not identify an ordering operator".
-- * unmark finds pgdedup's marks where they are. The collection records the table and column
--   number it marked (mark_relid, mark_attnum); unmark looked the table up by name only, so on
--   a renamed source it cleared nothing and returned 0 (and `drop --unmark` forgot the
--   collection, leaving every mark in the renamed table out of pgdedup's reach). It now refuses
--   (PD007) and names the table that holds the marks. A marking column renamed (another made
--   under its name) is refused naming the column that holds the marks, and the refusal of a
--   column that is not pgdedup's no longer says it "holds values pgdedup did not write" when
--   it only lacks pgdedup's marks.
-- * check_unmark and check_drop make these refusals without writing anything: unmark calls the
--   first; `pgdedup drop` (Python) calls the second before it removes a tracked collection's
--   triggers in a transaction of its own, so a drop refused for a view that depends on the
--   collection's view, or for its unmark, leaves tracking as it was (it queued "compare every
--   row" and made the next dedupe full).
--
-- Applied by migration 0057. Released files are never edited: a change is a new file + migration.

-- Whether a value of type p_type can be sorted (ORDER BY finds a default btree ordering for it,
-- through a domain or a binary-coercible type too): the query is only parsed and planned, on a
-- NULL constant (LIMIT 0: no comparison runs).
CREATE FUNCTION pgdedup.orderable(p_type regtype) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    EXECUTE format('SELECT 1 FROM (SELECT NULL::%s) t(v) ORDER BY v LIMIT 0', p_type);
    RETURN true;
EXCEPTION WHEN undefined_function THEN  -- "could not identify an ordering operator"
    RETURN false;
END $$;

-- As in revision 55, refusing a column whose type cannot be sorted.
CREATE OR REPLACE FUNCTION pgdedup.keep_order_sql(p_collection_id integer, p_keep_order text) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    c pgdedup.collections;
    rel oid;
    rest text := coalesce(p_keep_order, '');
    m text[];
    col text;
    parts text[] := '{}';
    typed text;
    coltype regtype;
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
        typed := pgdedup.typed_column(rel, col);
        IF typed IS NULL THEN
            RAISE EXCEPTION 'keep order column "%" does not exist in %.%', col, c.source_schema, c.source_table
                USING ERRCODE = 'PD003';
        END IF;
        IF col = c.mark_column THEN
            RAISE EXCEPTION 'keep order column "%" is the column pgdedup marks: its values change with every dedupe',
                col USING ERRCODE = 'PD003';
        END IF;
        SELECT a.atttypid INTO coltype FROM pg_attribute a
        WHERE a.attrelid = rel AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
        IF NOT pgdedup.orderable(coltype) THEN
            RAISE EXCEPTION 'keep order column "%" is of type %, which cannot be sorted (it has no ordering operator)',
                col, coltype USING ERRCODE = 'PD003',
                HINT = 'keep by another column (a timestamp, a number, the key), or add a column of a sortable type derived from it';
        END IF;
        parts := parts || format('%s %s %s', typed, coalesce(upper(m[2]), 'ASC'), coalesce(upper(m[3]), ''));
        rest := m[5];
    END LOOP;
    typed := pgdedup.typed_column(rel, c.key_column);
    IF typed IS NULL THEN
        RAISE EXCEPTION 'the key column "%" of collection "%" is not in %.% any more', c.key_column, c.name,
            c.source_schema, c.source_table USING ERRCODE = 'PD007';
    END IF;
    parts := parts || format('%s ASC', typed);  -- the key breaks every tie: deterministic
    RETURN array_to_string(parts, ', ');
END $$;

-- The column pgdedup marked, as "schema"."table"."column" under its current names, when the
-- table and the column it recorded (mark_relid, mark_attnum) are still there; else NULL.
CREATE FUNCTION pgdedup.marked_column(c pgdedup.collections) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT format('%I.%I.%I', n.nspname, r.relname, a.attname)
    FROM pg_class r
    JOIN pg_namespace n ON n.oid = r.relnamespace
    JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum = c.mark_attnum AND NOT a.attisdropped
    WHERE r.oid = c.mark_relid
$$;

-- The refusals of unmark, made before it writes anything: which column of the source it would
-- clear (its attnum; NULL: there is none, nothing to clear). Raises PD007 when the source is not
-- there by name but the table pgdedup marked is (renamed); PD006 when the column pgdedup marked
-- is still there under another name, or when the column by its name is another one whose
-- values are not pgdedup's stored marks.
CREATE FUNCTION pgdedup.check_unmark(p_collection text) RETURNS smallint
LANGUAGE plpgsql STABLE AS $$
DECLARE
    c pgdedup.collections;
    rel oid;
    attnum smallint;
    marked text;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    rel := pgdedup.relation_of(c.source_schema, c.source_table);
    marked := pgdedup.marked_column(c);
    IF rel IS NULL THEN
        IF marked IS NOT NULL THEN
            RAISE EXCEPTION 'the source table %.% of collection "%" is not there any more, and the table pgdedup marked is, under another name: its marks in % were not cleared',
                c.source_schema, c.source_table, c.name, marked
                USING ERRCODE = 'PD007',
                      HINT = 'rename the table back to unmark it; or drop the collection without unmarking and clear that column yourself';
        END IF;
        RETURN NULL;
    END IF;
    SELECT a.attnum INTO attnum FROM pg_attribute a
    WHERE a.attrelid = rel AND a.attname = c.mark_column AND a.attnum > 0 AND NOT a.attisdropped;
    IF attnum IS NULL OR rel IS DISTINCT FROM c.mark_relid OR attnum IS DISTINCT FROM c.mark_attnum THEN
        IF marked IS NOT NULL THEN
            RAISE EXCEPTION 'pgdedup''s marks of collection "%" are in % now, not in %.%.% (renamed since); nothing was changed',
                c.name, marked, c.source_schema, c.source_table, c.mark_column
                USING ERRCODE = 'PD006',
                      HINT = 'rename that column back to unmark it, or clear it yourself';
        END IF;
        IF attnum IS NOT NULL AND NOT pgdedup.holds_only_its_marks(c, c.mark_column) THEN
            RAISE EXCEPTION 'refusing to clear column %.%.%: it is not the column pgdedup marked (the table or the column was made again since) and its values are not the marks pgdedup stored; nothing was changed',
                c.source_schema, c.source_table, c.mark_column USING ERRCODE = 'PD006';
        END IF;
    END IF;
    RETURN attnum;
END $$;

-- As in revision 53, its refusals made by check_unmark.
CREATE OR REPLACE FUNCTION pgdedup.unmark_unchecked(p_collection text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    cleared bigint := 0;
    callers text := current_setting('pgdedup.marking', true);
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.lock_collection(c.collection_id);
    IF pgdedup.check_unmark(p_collection) IS NOT NULL THEN
        PERFORM set_config('pgdedup.marking', 'on', true);
        EXECUTE format('UPDATE %I.%I SET %I = NULL WHERE %I IS NOT NULL',
                       c.source_schema, c.source_table, c.mark_column, c.mark_column);
        GET DIAGNOSTICS cleared = ROW_COUNT;
        PERFORM set_config('pgdedup.marking', coalesce(callers, ''), true);
    END IF;
    DELETE FROM pgdedup.duplicates WHERE collection_id = c.collection_id AND target = 'column';
    DELETE FROM pgdedup.results WHERE collection_id = c.collection_id AND target = 'column';
    RETURN cleared;
END $$;

-- What drop_collection(p_collection, p_unmark) would refuse, checked without writing anything
-- (the collection's lock taken): unmark's refusals (after the source check unmark makes), and
-- objects that depend on the collection's view (its DROP tried in a subtransaction that is
-- always rolled back, so its lock goes too).
CREATE FUNCTION pgdedup.check_drop(p_collection text, p_unmark boolean DEFAULT false) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    PERFORM pgdedup.lock_collection(c.collection_id);
    IF p_unmark THEN
        IF pgdedup.relation_of(c.source_schema, c.source_table) IS NOT NULL THEN
            -- check_unmark may read the marking column: the source checked first, as unmark does
            PERFORM pgdedup.guard_collection_source(p_collection, c.mark_column, false);
        END IF;
        PERFORM pgdedup.check_unmark(p_collection);
    END IF;
    IF octet_length(c.name || '_duplicates') <= 63 THEN
        BEGIN
            EXECUTE format('DROP VIEW IF EXISTS pgdedup.%I', c.name || '_duplicates');
            RAISE EXCEPTION USING ERRCODE = 'PD900';  -- undo the drop: this was only a check
        EXCEPTION WHEN SQLSTATE 'PD900' THEN
            NULL;
        END;
    END IF;
END $$;

SELECT pgdedup.pin_search_paths();
