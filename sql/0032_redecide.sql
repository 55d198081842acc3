-- pgdedup schema, version 32: revision 31 changed which candidate pairs verify "auto" accepts on
-- their estimate (no pair with a text of fewer features than positions), but left the stored
-- auto results as they were: the next dedupe ran incrementally and kept, outside the region of
-- its changes, marks that revision 30's rule had made. Every stored auto result now has no
-- last change, so the next dedupe of each target (and watch's) decides in full.
-- Applied by migration 0032. Released files are never edited: a change is a new file + migration.
UPDATE pgdedup.results SET change_seq = NULL WHERE verify = 'auto' AND target IN ('column', 'view');
