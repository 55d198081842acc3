-- pgdedup schema, version 14: a full dedupe ranks the rows once. verify auto ranks them for its
-- candidate table (update_duplicates, revision 11) and the decision it then runs ranked them
-- again: the same ranking, a second pass over the source table and every signature (7 s at a
-- million rows), from a later snapshot than the candidates' capped-bucket leaders were chosen
-- in. rank_rows now keeps its tables when update_duplicates' own decision of an auto run asks
-- for the ranking that run made for its candidates (pgdedup.reuse_estimated is on for that
-- call only, and pgdedup_estimated_for lives until the run ends): same collection, keep order
-- and index version, and the very temp tables it made (by oid).
-- Applied by migration 0014. Released files are never edited: a change is a new file + migration.

CREATE OR REPLACE FUNCTION pgdedup.rank_rows(p_collection_id integer, p_keep_order text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    ord text := pgdedup.keep_order_sql(p_collection_id, p_keep_order);
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = p_collection_id;
    -- (pgdedup_estimated_for exists from the ranking of an auto run's candidates to the end of that run)
    IF current_setting('pgdedup.reuse_estimated', true) = 'on' AND to_regclass('pg_temp.pgdedup_ranked_for') IS NOT NULL
       AND to_regclass('pg_temp.pgdedup_estimated_for') IS NOT NULL
       AND to_regclass('pg_temp.pgdedup_rows') IS NOT NULL AND to_regclass('pg_temp.pgdedup_rank') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pg_temp.pgdedup_ranked_for f
                   WHERE f.collection_id = p_collection_id AND f.keep_order = ord AND f.index_version = c.index_version
                     AND f.rows_table = 'pg_temp.pgdedup_rows'::regclass
                     AND f.rank_table = 'pg_temp.pgdedup_rank'::regclass) THEN
            RETURN ord;
        END IF;
    END IF;
    DROP TABLE IF EXISTS pg_temp.pgdedup_rows, pg_temp.pgdedup_rank, pg_temp.pgdedup_ranked_for;
    EXECUTE format(
        'CREATE TEMP TABLE pgdedup_rows ON COMMIT DROP AS
         SELECT g.row_id, g.row_key, g.text_hash, row_number() OVER (ORDER BY %s) AS rnk
         FROM %I.%I s JOIN pgdedup.signatures g ON g.collection_id = $1 AND g.row_key = s.%I::text
         WHERE g.feature_count > 0',
        ord, c.source_schema, c.source_table, c.key_column) USING p_collection_id;
    CREATE TEMP TABLE pgdedup_rank ON COMMIT DROP AS
        SELECT text_hash, min(rnk) AS rnk FROM pgdedup_rows GROUP BY text_hash;
    ANALYZE pgdedup_rank;
    CREATE TEMP TABLE pgdedup_ranked_for ON COMMIT DROP AS
        SELECT p_collection_id AS collection_id, ord AS keep_order, c.index_version,
               'pg_temp.pgdedup_rows'::regclass AS rows_table, 'pg_temp.pgdedup_rank'::regclass AS rank_table;
    RETURN ord;
END $$;

SELECT pgdedup.pin_search_paths();
