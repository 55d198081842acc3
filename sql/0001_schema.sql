-- pgdedup schema, version 1: collections, signatures, band keys, run history.
-- Applied by migration 0001. Released files are never edited: a change is a new file + migration.

CREATE TABLE pgdedup.collections (
    collection_id   serial PRIMARY KEY,
    name            text NOT NULL UNIQUE,
    source_schema   text NOT NULL,
    source_table    text NOT NULL,
    key_column      text NOT NULL,
    key_type        text NOT NULL,          -- smallint | integer | bigint | uuid | text | character varying
    text_columns    text[] NOT NULL,
    unit            text NOT NULL CHECK (unit IN ('word', 'char')),
    ngram           integer NOT NULL CHECK (ngram > 0),
    num_perm        integer NOT NULL CHECK (num_perm > 0),
    bands           integer NOT NULL CHECK (bands > 0),
    rows_per_band   integer NOT NULL CHECK (rows_per_band > 0),
    seed            bigint NOT NULL,
    threshold       double precision NOT NULL CHECK (threshold > 0 AND threshold < 1),
    band_threshold  double precision NOT NULL,  -- the threshold (bands, rows) were optimised for
    algorithm       integer NOT NULL,       -- version of the feature/signature algorithm
    rows_indexed    bigint NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    indexed_at      timestamptz,
    CHECK (bands * rows_per_band <= num_perm)
);

CREATE TABLE pgdedup.signatures (
    collection_id   integer NOT NULL REFERENCES pgdedup.collections ON DELETE CASCADE,
    row_key         text NOT NULL,          -- the source key, as text
    row_id          bigint NOT NULL,        -- xxh3 of row_key: narrow band table, same id whoever signs the row
    source_md5      uuid NOT NULL,          -- md5 of the raw source text: change detection on the server
    text_hash       bigint NOT NULL,        -- xxh3 of the normalised text: exact duplicates
    feature_count   integer NOT NULL,       -- size of the feature set; 0 = empty text, matches nothing
    signature       integer[] NOT NULL,     -- num_perm MinHash values; '{}' for an empty feature set
    buckets         bigint[] NOT NULL,      -- bucket of each band, '{}' for an empty feature set
    PRIMARY KEY (collection_id, row_key),
    UNIQUE (collection_id, row_id)
);
-- exact-duplicate groups and their representatives, in index order
CREATE INDEX signatures_text ON pgdedup.signatures (collection_id, text_hash, row_id);

CREATE TABLE pgdedup.band_keys (
    collection_id   integer NOT NULL,
    band            smallint NOT NULL,      -- 0-based
    bucket          bigint NOT NULL,
    row_id          bigint NOT NULL,        -- xxh3 of row_key: narrow band table, same id whoever signs the row
    PRIMARY KEY (collection_id, band, bucket, row_id)
);

-- Band keys of a first (full) load wait here, without any index, and move to band_keys in one
-- sorted insert at the end of the run: appending a sorted batch to the primary key is several
-- times cheaper than inserting millions of random buckets into it one chunk at a time.
CREATE TABLE pgdedup.band_keys_staged (LIKE pgdedup.band_keys);

-- Move a collection's staged band keys into band_keys; returns how many moved.
CREATE FUNCTION pgdedup.flush_band_keys(p_collection integer) RETURNS bigint
LANGUAGE sql SET work_mem = '256MB' AS $$
    WITH moved AS (
        DELETE FROM pgdedup.band_keys_staged WHERE collection_id = p_collection RETURNING *
    ), inserted AS (
        INSERT INTO pgdedup.band_keys SELECT * FROM moved ORDER BY band, bucket, row_id RETURNING 1
    )
    SELECT count(*) FROM inserted;
$$;

CREATE TABLE pgdedup.runs (
    run_id          bigserial PRIMARY KEY,
    collection_id   integer NOT NULL REFERENCES pgdedup.collections ON DELETE CASCADE,
    kind            text NOT NULL,          -- index | dedupe
    started_at      timestamptz NOT NULL,
    finished_at     timestamptz NOT NULL DEFAULT now(),
    stats           jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX runs_collection ON pgdedup.runs (collection_id, finished_at DESC);

-- Forget rows of a collection: their signatures and their band keys (found through the stored
-- buckets, so the band table needs no second index). Returns the number of rows forgotten.
CREATE FUNCTION pgdedup.forget_rows(p_collection integer, p_row_ids bigint[]) RETURNS bigint
LANGUAGE sql AS $$
    WITH gone AS (
        DELETE FROM pgdedup.signatures s
        WHERE s.collection_id = p_collection AND s.row_id = ANY (p_row_ids)
        RETURNING s.row_id, s.buckets
    ), keys AS (
        DELETE FROM pgdedup.band_keys b
        USING gone, unnest(gone.buckets) WITH ORDINALITY AS u(bucket, band)
        WHERE b.collection_id = p_collection AND b.band = u.band - 1
          AND b.bucket = u.bucket AND b.row_id = gone.row_id
        RETURNING 1
    )
    SELECT count(*) FROM gone;
$$;
