-- pgdedup schema, version 17: the keep-order walk decides heads one by one where rounds do not pay.
-- Revision 16 decides each text's first row (its head) in topological rounds. A round costs a
-- fixed ~0.15-0.3 ms (a statement planned afresh, index probes) plus a little per head, and the
-- number of rounds is the longest alternating chain of the "earlier neighbour" relation. When
-- similarity follows keep order (versions of a page, each similar to the next) that is one
-- round per link: a 30,000-text chain took 7.3 s against 0.55 s for revision 9's row-by-row walk.
--
-- Now, after a round that decided fewer than p_sequential_below heads, the next p_batch
-- undecided heads in keep order are decided one at a time (~25 us each): a head is kept unless
-- an earlier neighbour head is kept. Every earlier neighbour of such a head is decided before it
-- (in a round, or earlier in the batch), and the heads a batch decides are passed on by the next
-- round with those the round before decided, so pending counts and hits stay exact and the marks
-- are revision 16's wherever the switches happen. A batch is bounded, so a short chain that
-- gates a large set of heads costs one batch, and the rounds resume for the rest.
--
-- The head decision is its own function (decide_heads) so a later change to it does not
-- redefine the walk around it. walk() takes the switch point and the batch as arguments
-- (defaults 16 and 1000, from bench/walk.py); a switch point of 0 is revision 16's rounds to
-- the end, and tests/test_walk.py checks several settings against a row-by-row reference.
--
-- Applied by migration 0017. Released files are never edited: a change is a new file + migration.

-- Decide pg_temp.pgdedup_heads (text_hash, rnk, pending, hit, kept, decided_in) from
-- pg_temp.pgdedup_later (n: an earlier neighbour head of h) in rounds; after a round that
-- decided fewer than p_sequential_below heads, the next p_batch undecided heads in keep order
-- are decided one by one before the next round. Returns the rounds run and the heads decided
-- one by one. Called by walk(), which checks the arguments.
CREATE FUNCTION pgdedup.decide_heads(p_sequential_below integer, p_batch integer,
                                     OUT rounds integer, OUT one_by_one bigint)
LANGUAGE plpgsql AS $$
DECLARE
    decided bigint;
    remaining bigint;  -- heads not decided yet
    last_rnk bigint;  -- every head up to this rank is decided
    head record;
BEGIN
    rounds := 0;
    one_by_one := 0;
    SELECT count(*), min(rnk) - 1 INTO remaining, last_rnk FROM pg_temp.pgdedup_heads;
    UPDATE pg_temp.pgdedup_heads x SET kept = NOT hit, decided_in = 0 WHERE hit OR pending = 0;
    GET DIAGNOSTICS decided = ROW_COUNT;
    remaining := remaining - decided;
    CREATE INDEX ON pg_temp.pgdedup_heads (decided_in);
    ANALYZE pg_temp.pgdedup_heads;
    LOOP
        -- (counted, not looked for: with every head decided, the look-up below would walk the
        -- whole rank index and its dead versions, ~0.3 s at 100,000 heads)
        IF decided < p_sequential_below AND remaining > 0 THEN
            IF one_by_one = 0 THEN  -- the first batch: the indexes it needs (rounds would only maintain them)
                CREATE INDEX ON pg_temp.pgdedup_heads (rnk) WHERE kept IS NULL;
                CREATE INDEX ON pg_temp.pgdedup_later (h);
                ANALYZE pg_temp.pgdedup_heads, pg_temp.pgdedup_later;
            END IF;
            -- One by one: the lowest undecided heads in keep order. Their earlier neighbours are
            -- decided (in a round, or before them here), so each looks at them directly; they
            -- join the heads the next round passes on (decided_in = rounds).
            FOR head IN SELECT h.text_hash, h.rnk FROM pg_temp.pgdedup_heads h
                        WHERE h.kept IS NULL AND h.rnk > last_rnk
                        ORDER BY h.rnk LIMIT p_batch LOOP
                UPDATE pg_temp.pgdedup_heads x
                SET kept = NOT EXISTS (
                        SELECT 1 FROM pg_temp.pgdedup_later l JOIN pg_temp.pgdedup_heads n ON n.text_hash = l.n
                        WHERE l.h = head.text_hash AND n.kept),
                    decided_in = rounds
                WHERE x.text_hash = head.text_hash;
                last_rnk := head.rnk;
                decided := decided + 1;
                remaining := remaining - 1;
                one_by_one := one_by_one + 1;
            END LOOP;
        END IF;
        EXIT WHEN decided = 0 OR remaining = 0;
        -- a round: the later neighbours of the heads decided last (planned afresh each time: the
        -- sets shrink fast)
        EXECUTE
            'WITH done AS (
                 SELECT l.h, count(*) AS done, bool_or(f.kept) AS hit
                 FROM pg_temp.pgdedup_heads f JOIN pg_temp.pgdedup_later l ON l.n = f.text_hash
                 WHERE f.decided_in = $1 GROUP BY l.h)
             UPDATE pg_temp.pgdedup_heads x
             SET pending = x.pending - d.done, hit = x.hit OR d.hit,
                 kept = CASE WHEN x.hit OR d.hit THEN false WHEN x.pending = d.done THEN true END,
                 decided_in = CASE WHEN x.hit OR d.hit OR x.pending = d.done THEN $1 + 1 END
             FROM done d WHERE x.text_hash = d.h AND x.kept IS NULL' USING rounds;
        rounds := rounds + 1;
        SELECT count(*) INTO decided FROM pg_temp.pgdedup_heads WHERE decided_in = rounds;
        remaining := remaining - decided;
    END LOOP;
END $$;

-- The walk: reads pg_temp.pgdedup_rows (row_id, row_key, text_hash, rnk), pg_temp.pgdedup_edges
-- (h1, h2, similarity: text-level edges, both directions) and, if the caller made it,
-- pg_temp.pgdedup_fixed (rows kept by an earlier decision, not decided again; each joins the kept
-- rows at its rank); writes pg_temp.pgdedup_marks (row_key, duplicate_of, similarity) and
-- pg_temp.pgdedup_kept (text_hash, row_id, row_key, rnk). pgdedup_fixed is dropped on the way out.
-- Why deciding heads suffices, and why the final join picks the sequential walk's kept row:
-- sql/0016_walk.sql (unchanged here but for decide_heads).
DROP FUNCTION pgdedup.walk();
CREATE FUNCTION pgdedup.walk(p_sequential_below integer DEFAULT 16, p_batch integer DEFAULT 1000) RETURNS void
LANGUAGE plpgsql SET work_mem = '256MB' AS $$
DECLARE
    decision record;
    t0 timestamptz := clock_timestamp();
BEGIN
    IF p_sequential_below IS NULL OR p_sequential_below < 0 OR p_batch IS NULL OR p_batch < 1 THEN
        RAISE EXCEPTION 'the walk needs p_sequential_below >= 0 and p_batch >= 1, not % and %',
            coalesce(p_sequential_below::text, 'NULL'), coalesce(p_batch::text, 'NULL') USING ERRCODE = 'PD003';
    END IF;
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
    SELECT * INTO decision FROM pgdedup.decide_heads(p_sequential_below, p_batch);
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
    PERFORM pgdedup.stage(format('keep-order walk: %s rows, %s texts decided in %s rounds and %s one by one',
                                 (SELECT count(*) FROM pg_temp.pgdedup_walk),
                                 (SELECT count(*) FROM pg_temp.pgdedup_heads), decision.rounds, decision.one_by_one), t0);
    DROP TABLE pg_temp.pgdedup_fixed;
END $$;

SELECT pgdedup.pin_search_paths();
