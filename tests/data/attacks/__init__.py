"""Attack corpora for the approval judge: generated from GTFOBins at test time, and hand-made rows."""
