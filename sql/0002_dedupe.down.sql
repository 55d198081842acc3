-- Undo 0002.
DROP VIEW pgdedup.status;
DROP FUNCTION pgdedup.mark_duplicates(text, double precision, text, text, integer, text);
DROP FUNCTION pgdedup.create_duplicates_view(text);
DROP FUNCTION pgdedup.find_duplicates(text, double precision, text, integer, text);
DROP FUNCTION pgdedup.keep_order_sql(integer, text);
DROP FUNCTION pgdedup.similar(text, text, double precision, integer);
DROP FUNCTION pgdedup.similar_to(text, integer[], bigint[], double precision, integer, text);
DROP FUNCTION pgdedup.pairs(text, double precision, text);
DROP FUNCTION pgdedup.edges(integer, double precision, integer, text, boolean);
DROP FUNCTION pgdedup.verified_pairs(integer, double precision, integer, boolean);
DROP FUNCTION pgdedup.candidate_pairs(integer, integer, boolean);
DROP FUNCTION pgdedup.bucket_members(integer);
DROP FUNCTION pgdedup.representatives(integer);
DROP FUNCTION pgdedup.similarity(text, text, text);
DROP FUNCTION pgdedup.collection_id(text);
DROP FUNCTION pgdedup.similarity(integer[], integer[]);
DROP TABLE pgdedup.exact_pairs;
DROP TABLE pgdedup.duplicates;
