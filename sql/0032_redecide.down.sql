-- Undo revision 32 (and, with it, the rule of revision 31 that the downgrade goes on to undo):
-- stored auto results were decided with revision 31's rule, so the next dedupe of each target
-- decides in full again under the older one.
UPDATE pgdedup.results SET change_seq = NULL WHERE verify = 'auto' AND target IN ('column', 'view');
