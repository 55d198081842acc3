-- pgdedup schema, version 54: a keep order names its columns' types and collations.
--
-- An incremental dedupe runs when the stored result was decided with the same settings, the
-- keep order among them, compared as the ORDER BY text keep_order_sql makes ("s.pub ASC, s.id
-- ASC"). A change of a keep-order column's type or collation (ALTER COLUMN ... TYPE, or
-- COLLATE), or of the key's collation, reorders the rows without a write any trigger sees, and
-- left that text as it was: the next dedupe ran incrementally and kept the old order's marks
-- where a full run gave the new order's. The text now carries each column's type and
-- collation ("s.pub::integer ASC, s.id::text COLLATE pg_catalog."C" ASC"), a no-op for the sort
-- (a cast to the column's own type, its own collation), so such a change makes the next
-- dedupe of each target a full one. So does migrating to this revision, once: every stored
-- keep order has the older text.
--
-- Applied by migration 0054. Released files are never edited: a change is a new file + migration.

-- A source column as keep_order_sql writes it: s."col"::its_type [COLLATE its_collation], both
-- schema-qualified where they are not pg_catalog's; NULL if the relation has no such column.
CREATE FUNCTION pgdedup.typed_column(p_rel oid, p_column text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT format('s.%I::%s', a.attname, format_type(a.atttypid, a.atttypmod))
           || CASE WHEN a.attcollation <> 0
                   THEN format(' COLLATE %I.%I', n.nspname, l.collname) ELSE '' END
    FROM pg_attribute a
    LEFT JOIN pg_collation l ON l.oid = a.attcollation
    LEFT JOIN pg_namespace n ON n.oid = l.collnamespace
    WHERE a.attrelid = p_rel AND a.attname = p_column AND a.attnum > 0 AND NOT a.attisdropped
$$;

-- As in revision 21, each column written by typed_column.
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
        parts := parts || format('%s %s %s', typed, coalesce(upper(m[2]), 'ASC'), coalesce(upper(m[3]), ''));
        rest := m[5];
    END LOOP;
    parts := parts || format('%s ASC', pgdedup.typed_column(rel, c.key_column));  -- the key breaks every tie: deterministic
    RETURN array_to_string(parts, ', ');
END $$;

SELECT pgdedup.pin_search_paths();
