-- Undo version 49: reset the autovacuum options it set (an option with another value, set by an
-- administrator, stays).
DO $$
DECLARE
    t text;
    o text;
BEGIN
    FOREACH t IN ARRAY ARRAY['signatures', 'band_keys'] LOOP
        FOREACH o IN ARRAY ARRAY['autovacuum_vacuum_scale_factor=0.01', 'autovacuum_vacuum_insert_scale_factor=0.01',
                                 'autovacuum_analyze_scale_factor=0.02'] LOOP
            CONTINUE WHEN NOT EXISTS (
                SELECT 1 FROM pg_catalog.pg_class c, pg_catalog.unnest(c.reloptions) r
                WHERE c.oid = pg_catalog.format('pgdedup.%I', t)::pg_catalog.regclass AND r = o);
            EXECUTE pg_catalog.format('ALTER TABLE pgdedup.%I RESET (%s)', t, pg_catalog.split_part(o, '=', 1));
        END LOOP;
    END LOOP;
END $$;
