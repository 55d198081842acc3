-- pgdedup schema, version 10: scopes. A collection may be partitioned by a column of its source:
-- the loader salts each row's text hash and band buckets with its partition value, so rows of
-- different partitions (tenants, feeds) never share a bucket and are never compared, and equal
-- texts in two partitions are two texts. No SQL function changes: every candidate pair comes
-- from a shared bucket. Applied by migration 0010. Released files are never edited.

ALTER TABLE pgdedup.collections ADD COLUMN partition_by text;
COMMENT ON COLUMN pgdedup.collections.partition_by IS
    'the source column whose values partition the collection (rows are compared only within one), or NULL';
