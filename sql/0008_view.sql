-- pgdedup schema, version 8: the non-invasive view no longer depends on the source table. It
-- lists the duplicates of the 'view' result, keys in the key's own type under the key column's
-- name; the application joins it to its table. So the view never blocks the application's own
-- migrations (ALTER COLUMN TYPE, DROP TABLE, metadata.drop_all) and needs no rebuild when the
-- table's columns change.
-- Applied by migration 0008. Released files are never edited: a change is a new file + migration.

CREATE OR REPLACE FUNCTION pgdedup.create_duplicates_view(p_collection text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c pgdedup.collections;
    view_name text;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    view_name := c.name || '_duplicates';
    IF octet_length(view_name) > 63 THEN
        RAISE EXCEPTION 'collection name "%" is too long for its view name (at most 52 bytes)', c.name
            USING ERRCODE = 'PD003';
    END IF;
    -- the view depends on nothing that changes between runs: keep one that has the key column
    -- in its type (so a role without CREATE on the schema can refresh the result it shows)
    IF EXISTS (SELECT 1 FROM pg_attribute a
               WHERE a.attrelid = to_regclass(format('pgdedup.%I', view_name)) AND a.attname = c.key_column
                 AND a.atttypid = pgdedup.key_type_sql(c.key_type)::regtype) THEN
        RETURN format('pgdedup.%I', view_name);
    END IF;
    EXECUTE format('DROP VIEW IF EXISTS pgdedup.%I', view_name);
    EXECUTE format(
        'CREATE VIEW pgdedup.%I %s AS
         SELECT d.row_key::%s AS %I, d.duplicate_of::%3$s AS duplicate_of, d.similarity
         FROM pgdedup.duplicates d
         WHERE d.collection_id = %5$s AND d.target = ''view''',
        view_name, CASE WHEN current_setting('server_version_num')::int >= 150000
                        THEN 'WITH (security_invoker = true)' ELSE '' END,
        pgdedup.key_type_sql(c.key_type), c.key_column, c.collection_id);
    RETURN format('pgdedup.%I', view_name);
END $$;

-- Rebuild the views made by earlier revisions, so none depends on a source table any more.
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT name FROM pgdedup.collections
             WHERE octet_length(name || '_duplicates') <= 63
               AND to_regclass(format('pgdedup.%I', name || '_duplicates')) IS NOT NULL LOOP
        EXECUTE format('DROP VIEW pgdedup.%I', c.name || '_duplicates');
        PERFORM pgdedup.create_duplicates_view(c.name);
    END LOOP;
END $$;
