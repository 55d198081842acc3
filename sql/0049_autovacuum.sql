-- pgdedup schema, version 49: autovacuum keeps up with a living collection's signatures and
-- band keys.
-- * A full index run VACUUMs what it wrote (the visibility map: an index-only scan then skips
--   the heap), but runs from the queue, add_rows and forget leave their pages to autovacuum,
--   which by default comes after a fifth of a table has changed: 3.2 million band keys at a
--   million rows, i.e. some 200,000 changed rows. Until then every page a change touched (a
--   deleted or updated row's keys are spread over the whole table) costs each later scan a heap
--   visit per entry. Measured on a million-row collection after ~20 change batches of 1,200
--   rows: a third of band_keys' pages were out of the visibility map, and a full dedupe by
--   estimate took 43-49 s (the scan of the band keys made 4.8 million heap visits); after a
--   VACUUM of the two tables (3.3 s), 31-36 s.
-- * So autovacuum now vacuums signatures and band_keys after 1 % of their rows were written or
--   deleted (PostgreSQL's thresholds of 50 and 1,000 rows still add to that), and analyzes them
--   after 2 % changed (default 10 %), which also keeps the statistics of a collection grown by
--   add_rows or the queue closer to its size.
-- * Set only where the table is an ordinary table and the option is not already set (a
--   database administrator's own value stays); the downgrade resets only the values set here.
-- Applied by migration 0049. Released files are never edited: a change is a new file + migration.

DO $$
DECLARE
    t text;
    o text;
BEGIN
    FOREACH t IN ARRAY ARRAY['signatures', 'band_keys'] LOOP
        CONTINUE WHEN (SELECT c.relkind FROM pg_catalog.pg_class c
                       WHERE c.oid = pg_catalog.format('pgdedup.%I', t)::pg_catalog.regclass) <> 'r';
        FOREACH o IN ARRAY ARRAY['autovacuum_vacuum_scale_factor=0.01', 'autovacuum_vacuum_insert_scale_factor=0.01',
                                 'autovacuum_analyze_scale_factor=0.02'] LOOP
            CONTINUE WHEN EXISTS (
                SELECT 1 FROM pg_catalog.pg_class c, pg_catalog.unnest(c.reloptions) r
                WHERE c.oid = pg_catalog.format('pgdedup.%I', t)::pg_catalog.regclass
                  AND pg_catalog.split_part(r, '=', 1) = pg_catalog.split_part(o, '=', 1));
            EXECUTE pg_catalog.format('ALTER TABLE pgdedup.%I SET (%s)', t, o);
        END LOOP;
    END LOOP;
END $$;
