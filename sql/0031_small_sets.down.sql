-- Undo revision 31 (migration 0031's downgrade then puts back the functions it replaced from
-- their own files): estimated_pairs loses its fewest column, the two new functions go.
DROP FUNCTION pgdedup.estimated_pairs(integer, integer, boolean);
DROP FUNCTION pgdedup.collect_unchecked(integer, double precision);
DROP FUNCTION pgdedup.auto_bands(double precision, integer);
