-- pgdedup schema, version 56: revision 55's session guard, from a review of it.
--
-- * Revision 55 trusted a temp table whose owner may act as the current role, as
--   pg_has_role(owner, current_user, 'MEMBER'). From PostgreSQL 16 on, a role is a MEMBER also
--   through a grant WITH INHERIT FALSE, SET FALSE, which lets it neither use the role's rights
--   nor SET ROLE to it: such an owner could plant a table (with a row-level policy calling its
--   own function) that ran as the current role. On 16 and later the test is now the SET
--   privilege; before 16 every member may SET ROLE, and MEMBER stays.
-- * guard_temp_tables runs at every lock_collection and at each read of a run's kept state. It
--   filtered pg_class by starts_with(relname, 'pgdedup_'), which no index serves: a scan of the
--   whole catalog, 1.0-1.1 ms a call in a database of 50,410 relations (a schema per tenant
--   grows more than that). A LIKE prefix is a range of pg_class' (relname, relnamespace) index:
--   0.13-0.15 ms there (measured in turns, 20 calls each).
--
-- Applied by migration 0056. Released files are never edited: a change is a new file + migration.

-- As in revision 55, with the SET privilege on 16+ and the name filter an index range.
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
    WHERE c.relnamespace = pg_my_temp_schema() AND c.relname LIKE 'pgdedup\_%'  -- (a range of pg_class' name index)
      AND NOT starts_with(c.relname, 'pgdedup_copy_')
      AND (NOT CASE WHEN current_setting('server_version_num')::integer >= 160000
                    THEN pg_has_role(c.relowner, current_user, 'SET')  -- (16+: a member may lack it)
                    ELSE pg_has_role(c.relowner, current_user, 'MEMBER') END
           OR c.relkind NOT IN ('r', 'i', 'S'))
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

SELECT pgdedup.pin_search_paths();
