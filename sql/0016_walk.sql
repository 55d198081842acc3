-- pgdedup schema, version 16: the keep-order walk decided set by set instead of row by row.
-- Revision 9's walk visited every row with an edge in keep order and looked up, one indexed
-- query per row, the best kept row it has an edge to (2.4 s of a 9-12 s full dedupe at 200,000
-- rows). The decision is the same; it is now reached in a few statements over whole sets:
--
--   * A row that is not the first walked row of its text is never kept: the first row of its
--     text is earlier and either kept (the row meets it through the text's self edge) or a
--     duplicate of some earlier kept row (which the row has an edge to as well). So only each
--     text's first row, its head, needs deciding; fixed rows are kept by definition.
--   * A head is kept exactly when no earlier kept row has an edge to it. Heads are decided in
--     rounds, in the order of a topological sort of the "earlier neighbour" relation: a head
--     is a duplicate as soon as one earlier neighbour (a head or a fixed row) is kept, and kept
--     as soon as every earlier neighbour head is decided and none is kept. Each round looks only
--     at the later neighbours of the heads the previous round decided, so the rounds together
--     read each edge once; their number is the longest alternating chain, a handful in practice.
--   * Then every other walked row points, in one join, at the kept row it has an edge to with
--     the highest similarity, ties by keep order: the row the sequential walk picked, since the
--     kept rows earlier than a row are exactly those the walk had kept when it reached the row.
--
-- Applied by migration 0016. Released files are never edited: a change is a new file + migration.

-- The walk: reads pg_temp.pgdedup_rows (row_id, row_key, text_hash, rnk), pg_temp.pgdedup_edges
-- (h1, h2, similarity: text-level edges, both directions) and, if the caller made it,
-- pg_temp.pgdedup_fixed (rows kept by an earlier decision, not decided again; each joins the kept
-- rows at its rank); writes pg_temp.pgdedup_marks (row_key, duplicate_of, similarity) and
-- pg_temp.pgdedup_kept (text_hash, row_id, row_key, rnk). pgdedup_fixed is dropped on the way out.
CREATE OR REPLACE FUNCTION pgdedup.walk() RETURNS void
LANGUAGE plpgsql SET work_mem = '256MB' AS $$
DECLARE
    round integer := 0;
    t0 timestamptz := clock_timestamp();
BEGIN
    DROP TABLE IF EXISTS pg_temp.pgdedup_walk, pg_temp.pgdedup_kept, pg_temp.pgdedup_marks,
        pg_temp.pgdedup_heads, pg_temp.pgdedup_later;
    CREATE TEMP TABLE IF NOT EXISTS pgdedup_fixed (row_id bigint, row_key text, text_hash bigint, rnk bigint)
        ON COMMIT DROP;
    -- exact copies: every text with two or more rows has an edge to itself
    INSERT INTO pg_temp.pgdedup_edges
        SELECT text_hash, text_hash, 1.0 FROM pg_temp.pgdedup_rows GROUP BY text_hash HAVING count(*) > 1;
    ANALYZE pg_temp.pgdedup_edges;
    CREATE TEMP TABLE pgdedup_walk ON COMMIT DROP AS
        SELECT row_id, row_key, text_hash, rnk FROM pg_temp.pgdedup_rows
        WHERE text_hash IN (SELECT h1 FROM pg_temp.pgdedup_edges);
    ANALYZE pg_temp.pgdedup_walk;
    -- each text's head; pending: its earlier neighbour heads not decided yet; hit: one of its
    -- earlier neighbours is kept; kept: NULL until decided; decided_in: the round that decided it
    CREATE TEMP TABLE pgdedup_heads ON COMMIT DROP AS
        SELECT DISTINCT ON (text_hash) text_hash, rnk, 0::bigint AS pending, false AS hit,
               NULL::boolean AS kept, NULL::integer AS decided_in
        FROM pg_temp.pgdedup_walk ORDER BY text_hash, rnk;
    ALTER TABLE pg_temp.pgdedup_heads ADD PRIMARY KEY (text_hash);
    -- head n is an earlier neighbour of head h (one row per edge)
    CREATE TEMP TABLE pgdedup_later ON COMMIT DROP AS
        SELECT n.text_hash AS n, h.text_hash AS h
        FROM pg_temp.pgdedup_heads h
        JOIN pg_temp.pgdedup_edges e ON e.h1 = h.text_hash
        JOIN pg_temp.pgdedup_heads n ON n.text_hash = e.h2 AND n.rnk < h.rnk;
    CREATE INDEX ON pg_temp.pgdedup_later (n);
    ANALYZE pg_temp.pgdedup_later;
    UPDATE pg_temp.pgdedup_heads x SET pending = l.pending
    FROM (SELECT h, count(*) AS pending FROM pg_temp.pgdedup_later GROUP BY h) l WHERE l.h = x.text_hash;
    IF EXISTS (SELECT 1 FROM pg_temp.pgdedup_fixed) THEN
        UPDATE pg_temp.pgdedup_heads x SET hit = true
        WHERE EXISTS (SELECT 1 FROM pg_temp.pgdedup_edges e JOIN pg_temp.pgdedup_fixed f ON f.text_hash = e.h2
                      WHERE e.h1 = x.text_hash AND f.rnk < x.rnk);
    END IF;
    UPDATE pg_temp.pgdedup_heads x SET kept = NOT hit, decided_in = 0 WHERE hit OR pending = 0;
    CREATE INDEX ON pg_temp.pgdedup_heads (decided_in);
    ANALYZE pg_temp.pgdedup_heads;
    -- each round: the later neighbours of the heads decided last round (planned afresh each
    -- round: the sets shrink fast)
    LOOP
        EXECUTE
            'WITH done AS (
                 SELECT l.h, count(*) AS done, bool_or(f.kept) AS hit
                 FROM pg_temp.pgdedup_heads f JOIN pg_temp.pgdedup_later l ON l.n = f.text_hash
                 WHERE f.decided_in = $1 GROUP BY l.h)
             UPDATE pg_temp.pgdedup_heads x
             SET pending = x.pending - d.done, hit = x.hit OR d.hit,
                 kept = CASE WHEN x.hit OR d.hit THEN false WHEN x.pending = d.done THEN true END,
                 decided_in = CASE WHEN x.hit OR d.hit OR x.pending = d.done THEN $1 + 1 END
             FROM done d WHERE x.text_hash = d.h AND x.kept IS NULL' USING round;
        round := round + 1;
        EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_temp.pgdedup_heads WHERE decided_in = round);
    END LOOP;
    CREATE TEMP TABLE pgdedup_kept ON COMMIT DROP AS
        SELECT w.text_hash, w.row_id, w.row_key, w.rnk
        FROM pg_temp.pgdedup_walk w JOIN pg_temp.pgdedup_heads h ON h.text_hash = w.text_hash AND h.rnk = w.rnk
        WHERE h.kept
        UNION ALL
        SELECT text_hash, row_id, row_key, rnk FROM pg_temp.pgdedup_fixed;
    ANALYZE pg_temp.pgdedup_kept;
    -- a kept head has no earlier kept neighbour, so only the other rows find one
    CREATE TEMP TABLE pgdedup_marks ON COMMIT DROP AS
        SELECT DISTINCT ON (w.rnk) w.row_key, k.row_key AS duplicate_of, e.similarity
        FROM pg_temp.pgdedup_walk w
        JOIN pg_temp.pgdedup_edges e ON e.h1 = w.text_hash
        JOIN pg_temp.pgdedup_kept k ON k.text_hash = e.h2 AND k.rnk < w.rnk
        ORDER BY w.rnk, e.similarity DESC, k.rnk;
    PERFORM pgdedup.stage(format('keep-order walk: %s rows, %s texts decided in %s rounds',
                                 (SELECT count(*) FROM pg_temp.pgdedup_walk),
                                 (SELECT count(*) FROM pg_temp.pgdedup_heads), round), t0);
    DROP TABLE pg_temp.pgdedup_fixed;
END $$;

SELECT pgdedup.pin_search_paths();
