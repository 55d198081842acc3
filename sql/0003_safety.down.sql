-- Undo 0003 (the migration then re-applies revision 2's functions: 0002.down, then 0002).
DROP POLICY readable_source ON pgdedup.collections;
ALTER TABLE pgdedup.collections DISABLE ROW LEVEL SECURITY;
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['signatures', 'band_keys', 'band_keys_staged', 'duplicates', 'exact_pairs', 'runs'] LOOP
        EXECUTE format('DROP POLICY readable_collection ON pgdedup.%I', t);
        EXECUTE format('ALTER TABLE pgdedup.%I DISABLE ROW LEVEL SECURITY', t);
    END LOOP;
END $$;
ALTER FUNCTION pgdedup.flush_band_keys(integer) RESET search_path;
ALTER FUNCTION pgdedup.forget_rows(integer, bigint[]) RESET search_path;
DROP FUNCTION pgdedup.prepare_mark_column(text, text);
DROP FUNCTION pgdedup.assert_locked_by(integer, integer);
DROP FUNCTION pgdedup.lock_collection(integer, boolean);
DROP FUNCTION pgdedup.may_read_source(text, text);
DROP FUNCTION pgdedup.check_args(double precision, integer, text, integer);
DROP FUNCTION pgdedup.key_type_sql(text);
ALTER TABLE pgdedup.collections DROP COLUMN mark_column;
