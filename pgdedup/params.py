"""The parameters of a collection: everything that decides its signatures and band keys.

Parameters are data: they are stored with the collection, later runs and SQL functions read
them back, and a run whose parameters differ from the stored ones must re-index, never mix.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .bands import optimal_bands
from .errors import InvalidArgument
from .features import FeatureSpec, Unit

#: Bumped whenever the feature or signature algorithm changes, so stored signatures made by an
#: older algorithm are detected and re-indexed instead of silently compared with new ones.
ALGORITHM_VERSION = 1
DEFAULT_SEED = 1
#: Bands are tuned for ``threshold - BAND_SLACK`` by default. Candidates are verified against
#: ``threshold`` afterwards, so a false candidate costs one signature comparison while a missed
#: one is lost for good: at t = 0.8, k = 128 datasketch's 9 × 13 finds only 40 % of pairs with
#: J = 0.8 and 69 % at J = 0.85; the 16 × 8 tuned for 0.65 finds 95 % and 99.4 %.
BAND_SLACK = 0.15


def default_band_threshold(threshold: float) -> float:
    """``threshold - BAND_SLACK``, but never below half the threshold (low thresholds)."""
    return round(max(threshold - BAND_SLACK, threshold / 2), 6)


@dataclass(frozen=True)
class Params:
    """Signature and banding parameters.

    ``threshold`` is the similarity a verified pair must reach; ``band_threshold`` (default
    ``threshold - BAND_SLACK``) is the one the (bands, rows) optimisation is run for, unless
    ``bands`` and ``rows`` are given explicitly.
    """

    threshold: float = 0.8
    band_threshold: float | None = None  # None: default_band_threshold(threshold)
    num_perm: int = 128
    unit: Unit = "word"
    ngram: int = 5
    seed: int = DEFAULT_SEED
    bands: int | None = None  # None (with rows None): optimised for band_threshold
    rows: int | None = None
    algorithm: int = field(default=ALGORITHM_VERSION)

    def __post_init__(self) -> None:
        """Check every field and fill the derived ones.

        Raises:
            InvalidArgument: a field out of range (0 is never "the default": leave it out).
        """
        FeatureSpec(self.unit, self.ngram)  # validates unit and ngram
        if not 0.0 < self.threshold < 1.0:
            raise InvalidArgument(f"threshold must be between 0 and 1 (exclusive), not {self.threshold}")
        if not 8 <= self.num_perm <= 1024:
            raise InvalidArgument(f"num_perm must be between 8 and 1024, not {self.num_perm}")
        if self.band_threshold is None:
            object.__setattr__(self, "band_threshold", default_band_threshold(self.threshold))
        if not 0.0 < self.band_threshold <= self.threshold:
            raise InvalidArgument(f"band_threshold must be in (0, threshold], not {self.band_threshold}")
        for name in ("bands", "rows"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InvalidArgument(f"{name} must be a positive integer, not {value!r}")
        if (self.bands is None) != (self.rows is None):
            raise InvalidArgument("bands and rows are given together, or neither")
        if self.bands is None:
            b, r = optimal_bands(self.band_threshold, self.num_perm)
            object.__setattr__(self, "bands", b)
            object.__setattr__(self, "rows", r)
        if self.bands * self.rows > self.num_perm:
            raise InvalidArgument(f"bands × rows = {self.bands * self.rows} exceeds num_perm {self.num_perm}")

    @property
    def spec(self) -> FeatureSpec:
        return FeatureSpec(self.unit, self.ngram)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def differences(self, other: "Params") -> list[str]:
        """Human-readable list of the fields where ``other`` differs from ``self``."""
        mine, theirs = self.as_dict(), other.as_dict()
        return [f"{k}: stored {mine[k]!r}, requested {theirs[k]!r}" for k in mine if mine[k] != theirs[k]]
