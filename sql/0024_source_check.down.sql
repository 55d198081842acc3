-- Back to revision 23: the five functions unguarded again under their own names, the checks
-- left to pgdedup's Python commands.
DROP FUNCTION pgdedup.find_duplicates(text, double precision, text, integer, text);
ALTER FUNCTION pgdedup.find_duplicates_unchecked(text, double precision, text, integer, text) RENAME TO find_duplicates;
DROP FUNCTION pgdedup.mark_duplicates(text, double precision, text, text, integer, text);
ALTER FUNCTION pgdedup.mark_duplicates_unchecked(text, double precision, text, text, integer, text) RENAME TO mark_duplicates;
DROP FUNCTION pgdedup.update_duplicates(text, boolean, double precision, text, text, integer, boolean, text);
ALTER FUNCTION pgdedup.update_duplicates_unchecked(text, boolean, double precision, text, text, integer, boolean, text)
    RENAME TO update_duplicates;
DROP FUNCTION pgdedup.prepare_mark_column(text, text);
ALTER FUNCTION pgdedup.prepare_mark_column_unchecked(text, text) RENAME TO prepare_mark_column;
DROP FUNCTION pgdedup.unmark(text);
ALTER FUNCTION pgdedup.unmark_unchecked(text) RENAME TO unmark;
DROP FUNCTION pgdedup.guard_marking(text, text);
DROP FUNCTION pgdedup.guard_collection_source(text, text, boolean, boolean);
DROP FUNCTION pgdedup.has_column(text, text, text);
DROP FUNCTION pgdedup.guard_source(text, text, text, text, text[], text);
DROP FUNCTION pgdedup.lock_source(text, text);
DROP FUNCTION pgdedup.check_source(text, text, text, text, text[], text);
