"""Helpers for the chapters themselves: glued numbers, recorded results, the claim records of the
Reproduction page and the page itself (not the maths, which lives in the layers below).
"""

from ._glue import fill
from ._glue import format_glued
from ._glue import glue
from ._glue import glued
from ._glue import show
from ._records import claim_counts
from ._records import claim_verdict
from ._records import describe_tolerance
from ._records import device_name
from ._records import load_claims
from ._records import load_results
from ._records import record_claim
from ._records import save_result
from ._records import WRITTEN_WHILE_RUNNING
from ._report import Report
from ._report import reproduction_report

__all__ = [
    "Report",
    "claim_counts",
    "claim_verdict",
    "describe_tolerance",
    "device_name",
    "fill",
    "format_glued",
    "glue",
    "glued",
    "load_claims",
    "load_results",
    "record_claim",
    "reproduction_report",
    "save_result",
    "show",
    "WRITTEN_WHILE_RUNNING",
]
