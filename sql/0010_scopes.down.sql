-- Undo 0010: the collections forget their partition column. Signatures made partitioned stay
-- salted, so a partitioned collection should be dropped or re-indexed after this downgrade.
ALTER TABLE pgdedup.collections DROP COLUMN partition_by;
