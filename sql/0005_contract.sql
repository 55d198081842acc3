-- pgdedup schema, version 5: the keep order's errors follow the error contract.
-- Applied by migration 0005. Released files are never edited: a change is a new file + migration.

-- The keep order as a checked ORDER BY over the source (alias s), the key last. As in revision 2,
-- with SQLSTATEs: PD003 for an unreadable item or an unknown column, PD006 (with what to do) for
-- a source table that was renamed or dropped.
CREATE OR REPLACE FUNCTION pgdedup.keep_order_sql(p_collection_id integer, p_keep_order text) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c pgdedup.collections;
    rel regclass;
    item text;
    m text[];
    col text;
    parts text[] := '{}';
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = p_collection_id;
    rel := to_regclass(format('%I.%I', c.source_schema, c.source_table));
    IF rel IS NULL THEN
        RAISE EXCEPTION 'the source table %.% of collection "%" does not exist (renamed or dropped?)',
            c.source_schema, c.source_table, c.name
            USING ERRCODE = 'PD006',
                  HINT = format('SELECT pgdedup.drop_collection(%L) forgets the collection; index the table under its new name to start again', c.name);
    END IF;
    FOREACH item IN ARRAY coalesce(string_to_array(nullif(trim(p_keep_order), ''), ','), '{}') LOOP
        IF trim(item) = '' THEN
            RAISE EXCEPTION 'keep order "%" has an empty item (expected: column [ASC|DESC] [NULLS FIRST|LAST], ...)',
                p_keep_order USING ERRCODE = 'PD003';
        END IF;
        m := regexp_match(item, '^\s*("(?:[^"]|"")+"|[^\s"]+)\s*(asc|desc)?\s*(nulls\s+(?:first|last))?\s*$', 'i');
        IF m IS NULL THEN
            RAISE EXCEPTION 'cannot read keep order item "%" (expected: column [ASC|DESC] [NULLS FIRST|LAST])',
                trim(item) USING ERRCODE = 'PD003';
        END IF;
        col := CASE WHEN left(m[1], 1) = '"' THEN replace(substr(m[1], 2, length(m[1]) - 2), '""', '"') ELSE m[1] END;
        IF NOT EXISTS (SELECT 1 FROM pg_attribute
                       WHERE attrelid = rel AND attname = col AND attnum > 0 AND NOT attisdropped) THEN
            RAISE EXCEPTION 'keep order column "%" does not exist in %.%', col, c.source_schema, c.source_table
                USING ERRCODE = 'PD003';
        END IF;
        parts := parts || format('s.%I %s %s', col, coalesce(upper(m[2]), 'ASC'), coalesce(upper(m[3]), ''));
    END LOOP;
    parts := parts || format('s.%I ASC', c.key_column);  -- the key breaks every tie: deterministic
    RETURN array_to_string(parts, ', ');
END $$;
