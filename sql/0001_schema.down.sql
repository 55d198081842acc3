-- Undo 0001. The schema itself stays: it holds the migration version table.
DROP FUNCTION pgdedup.forget_rows(integer, bigint[]);
DROP TABLE pgdedup.runs;
DROP FUNCTION pgdedup.flush_band_keys(integer);
DROP TABLE pgdedup.band_keys_staged;
DROP TABLE pgdedup.band_keys;
DROP TABLE pgdedup.signatures;
DROP TABLE pgdedup.collections;
