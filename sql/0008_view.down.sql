-- Undo 0008: drop the dependency-free views (a later dedupe --no-alter makes revision 4's kind
-- again) and put back revision 4's create_duplicates_view, the only function 0008 changed.
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT name FROM pgdedup.collections WHERE octet_length(name || '_duplicates') <= 63 LOOP
        EXECUTE format('DROP VIEW IF EXISTS pgdedup.%I', c.name || '_duplicates');
    END LOOP;
END $$;
CREATE OR REPLACE FUNCTION pgdedup.create_duplicates_view(p_collection text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c pgdedup.collections;
    view_name text;
    cols text;
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = pgdedup.collection_id(p_collection);
    view_name := c.name || '_duplicates';
    IF octet_length(view_name) > 63 THEN
        RAISE EXCEPTION 'collection name "%" is too long for its view name (at most 52 bytes)', c.name
            USING ERRCODE = 'PD003';
    END IF;
    SELECT string_agg(format('s.%I', a.attname), ', ' ORDER BY a.attnum) INTO cols
    FROM pg_attribute a
    WHERE a.attrelid = format('%I.%I', c.source_schema, c.source_table)::regclass
      AND a.attnum > 0 AND NOT a.attisdropped AND a.attname NOT IN ('duplicate_of', 'duplicate_similarity');
    EXECUTE format('DROP VIEW IF EXISTS pgdedup.%I', view_name);
    EXECUTE format(
        'CREATE VIEW pgdedup.%I %s AS
         SELECT %s, d.duplicate_of::%s AS duplicate_of, d.similarity AS duplicate_similarity
         FROM %I.%I s LEFT JOIN pgdedup.duplicates d
           ON d.collection_id = %s AND d.target = ''view'' AND d.row_key = s.%I::text',
        view_name, CASE WHEN current_setting('server_version_num')::int >= 150000
                        THEN 'WITH (security_invoker = true)' ELSE '' END,
        cols, pgdedup.key_type_sql(c.key_type), c.source_schema, c.source_table, c.collection_id, c.key_column);
    RETURN format('pgdedup.%I', view_name);
END $$;
