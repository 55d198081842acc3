-- Undo 0013 (fails, as it should, if two rows of a collection share a key).
DROP INDEX pgdedup.signatures_key;
ALTER TABLE pgdedup.signatures DROP CONSTRAINT signatures_pkey;
ALTER TABLE pgdedup.signatures ADD CONSTRAINT signatures_pkey PRIMARY KEY (collection_id, row_key);
ALTER TABLE pgdedup.signatures ADD CONSTRAINT signatures_collection_id_row_id_key UNIQUE (collection_id, row_id);
