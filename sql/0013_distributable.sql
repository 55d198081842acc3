-- pgdedup schema, version 13: nothing in the schema stands in the way of spreading it over
-- machines. A hash-partitioned table, and a Citus distributed table, needs every unique
-- constraint to contain its partition (distribution) column; signatures is placed by row_id
-- (docs/scaling.md), so its identity becomes (collection_id, row_id). row_id is xxh3 of row_key,
-- so unique ids still imply unique keys; the key keeps a plain index for the look-ups by key.
-- Applied by migration 0013. Released files are never edited: a change is a new file + migration.

ALTER TABLE pgdedup.signatures DROP CONSTRAINT signatures_pkey;
ALTER TABLE pgdedup.signatures DROP CONSTRAINT signatures_collection_id_row_id_key;
ALTER TABLE pgdedup.signatures ADD CONSTRAINT signatures_pkey PRIMARY KEY (collection_id, row_id);
CREATE INDEX signatures_key ON pgdedup.signatures (collection_id, row_key);
