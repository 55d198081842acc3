-- pgdedup schema, version 55: from a review of revisions 53 and 54.
--
-- * Revision 53's guard refused every pgdedup_* temp table another role owned, also where no
--   right is gained by trusting it: in one transaction, a call as one role and then, after SET
--   ROLE, a call as a role the first may act as (a superuser's call, then a runtime role's; a
--   SECURITY DEFINER wrapper's call, then its caller's). pgdedup's own temp tables last to the
--   commit, and the second call was refused, with a message saying pgdedup had not made them.
--   A table is now trusted when its owner may act as the current role anyway (pg_has_role(owner,
--   current_user, 'MEMBER'): the owner itself, a superuser, a role granted the current one);
--   anything else, and any relation of another kind, is refused as before, and the message says
--   which of the two it is.
-- * keep_order_sql wrote a malformed ORDER BY (" ASC") when the key column was gone; it raises
--   PD007 as the other checks of a vanished source do (they run first everywhere today).
--
-- Applied by migration 0055. Released files are never edited: a change is a new file + migration.

-- As in revision 53, trusting a table whose owner may act as the current role.
CREATE OR REPLACE FUNCTION pgdedup.guard_temp_tables() RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    bad record;
BEGIN
    SELECT c.relname, c.relowner::regrole AS owner,
           CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view'
                          WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'i' THEN 'index'
                          WHEN 'S' THEN 'sequence' ELSE 'relation' END AS kind INTO bad
    FROM pg_class c
    WHERE c.relnamespace = pg_my_temp_schema() AND starts_with(c.relname, 'pgdedup_')
      AND NOT starts_with(c.relname, 'pgdedup_copy_')
      AND (NOT pg_has_role(c.relowner, current_user, 'MEMBER') OR c.relkind NOT IN ('r', 'i', 'S'))
    ORDER BY c.relname
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'pgdedup will not work on this session: pg_temp.% is a % of role %, %; end the transaction (pgdedup''s own temp tables go with it) or the session, or run DISCARD TEMP',
            bad.relname, bad.kind, bad.owner,
            CASE WHEN bad.kind IN ('table', 'index', 'sequence')
                 THEN format('which may not act as role %s (another role used the session before: a pool without DISCARD ALL, SET ROLE)', current_user)
                 ELSE 'which pgdedup never makes' END
            USING ERRCODE = 'PD006';
    END IF;
END $$;

-- As in revision 54, refusing a source whose key column is gone.
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
    typed := pgdedup.typed_column(rel, c.key_column);
    IF typed IS NULL THEN
        RAISE EXCEPTION 'the key column "%" of collection "%" is not in %.% any more', c.key_column, c.name,
            c.source_schema, c.source_table USING ERRCODE = 'PD007';
    END IF;
    parts := parts || format('%s ASC', typed);  -- the key breaks every tie: deterministic
    RETURN array_to_string(parts, ', ');
END $$;

SELECT pgdedup.pin_search_paths();
