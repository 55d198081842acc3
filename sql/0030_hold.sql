-- pgdedup schema, version 30: the source is held against its owners' code while pgdedup only
-- reads it, and no longer while it marks (revision 28 taken back in part, after a review).
--
-- * Revision 28 locked a source of another role in SHARE UPDATE EXCLUSIVE in every guard, so
--   that its owner could not add an index or extended statistics on their own function while
--   pgdedup read it (the planner runs such a function with the reader's rights). A second
--   review found it both short and too strong: it looked only at the relation named, and LOCK
--   TABLE passes the named relation's mode on to the tables a view reads, the partitions and
--   the inheritance children, which may belong to other roles (a superuser's view or
--   partitioned table over a tenant's table was as open as before); and held by a marking
--   transaction, or by an application's own transaction calling add, it deadlocked with that
--   application (a transaction updating a row, then running ANALYZE; two adds updating one
--   row), which aborts one of them.
-- * lock_source is revision 24's again (ACCESS SHARE, in every guard). hold_source takes SHARE
--   UPDATE EXCLUSIVE on every table of the source's whole read set (what its views read, its
--   partitions and children, as check_source walks them) that a role other than a superuser,
--   the running role and pgdedup's owner owns, in oid order; a role that may not take it (no
--   UPDATE, DELETE or TRUNCATE on that table) is refused (PD006), told which grant it needs.
--   pgdedup calls it only where it reads without writing the source, on a connection that
--   writes nothing of the table: an index run's source-lock connection for the whole run, and
--   a connection of its own while the exact-check processes read texts.
-- * write_marks compares the whole marking column with the stored marks for a partitioned source
--   too (revision 29 did so for untracked collections only; a partitioned table's triggers miss
--   writes addressed to a partition, so a row deleted and inserted again there stayed unmarked).
-- * What stays open, said in docs/security.md: marking in place (and an application's add) reads
--   and writes the table under ACCESS SHARE, so code its owner adds or has in place (triggers,
--   index expressions) runs with the marking role's rights: mark a table whose owner you do not
--   trust as that owner.
--
-- Applied by migration 0030, which also puts back revision 24's lock_source from its own file.
-- Released files are never edited: a change is a new file + migration.

-- The relations reading p_relation reads: itself, what its views read, its partitions and
-- inheritance children, recursively (the set check_source walks, revision 24).
CREATE FUNCTION pgdedup.source_relations(p_relation oid) RETURNS oid[]
LANGUAGE sql STABLE AS $$
    WITH RECURSIVE r(oid) AS (
        SELECT p_relation
        UNION
        SELECT x.oid FROM r, LATERAL (
            SELECT d.refobjid AS oid FROM pg_rewrite w
            JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid
                            AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> r.oid
            WHERE w.ev_class = r.oid
            UNION ALL
            SELECT i.inhrelid FROM pg_inherits i WHERE i.inhparent = r.oid) x
    )
    SELECT array_agg(r.oid ORDER BY r.oid) FROM r
$$;

-- Hold, to the end of the transaction, every table of the source's read set whose owner could
-- otherwise add code the planner runs with this role's rights (see above).
CREATE FUNCTION pgdedup.hold_source(p_schema text, p_table text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    rel oid := pgdedup.relation_of(p_schema, p_table);
    t record;
BEGIN
    IF rel IS NULL THEN
        RETURN;  -- (check_source says so)
    END IF;
    FOR t IN SELECT c.oid, o.rolname AS owner
             FROM unnest(pgdedup.source_relations(rel)) AS u(oid)
             JOIN pg_class c ON c.oid = u.oid JOIN pg_roles o ON o.oid = c.relowner
             WHERE c.relkind IN ('r', 'p') AND NOT o.rolsuper AND o.rolname <> current_user
               AND c.relowner <> (SELECT n.nspowner FROM pg_namespace n WHERE n.nspname = 'pgdedup')
             ORDER BY c.oid LOOP
        IF NOT (has_table_privilege(t.oid, 'UPDATE') OR has_table_privilege(t.oid, 'DELETE')
                OR has_table_privilege(t.oid, 'TRUNCATE')) THEN
            RAISE EXCEPTION '% is owned by %, who could add an index (code the planner runs with your rights) while pgdedup reads it; holding the table against that needs UPDATE on it: GRANT UPDATE ON % TO %, or run pgdedup as %',
                t.oid::regclass, t.owner, t.oid::regclass, current_user, t.owner USING ERRCODE = 'PD006';
        END IF;
        EXECUTE format('LOCK TABLE ONLY %s IN SHARE UPDATE EXCLUSIVE MODE', t.oid::regclass);
    END LOOP;
END $$;

-- Revision 29's write_marks, which compared the whole marking column with the stored marks for
-- an untracked collection only: the triggers of a partitioned table do not see writes addressed
-- to a partition directly (README), so a row deleted and inserted again there came back
-- unmarked for good too. A partitioned source is compared whole as well (its index compares
-- every row anyway).
CREATE OR REPLACE FUNCTION pgdedup.write_marks(p_collection_id integer, p_only_redone boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    rel oid;
    queued boolean;  -- whether every write to the table reaches the queue
BEGIN
    SELECT pgdedup.relation_of(c.source_schema, c.source_table), c.tracked INTO rel, queued
    FROM pgdedup.collections c WHERE c.collection_id = p_collection_id;
    IF rel IS NOT NULL THEN  -- (a table that is gone fails in the update, as before)
        PERFORM pgdedup.lock_marks(rel);
        queued := queued AND (SELECT k.relkind <> 'p' FROM pg_class k WHERE k.oid = rel);
    END IF;
    PERFORM pgdedup.write_marks_unlocked(p_collection_id, p_only_redone AND queued);
END $$;

SELECT pgdedup.pin_search_paths();
