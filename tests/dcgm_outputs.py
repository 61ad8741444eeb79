"""Stand-in outputs of `dcgmi diag -r 3 -j` (no GPU and no DCGM run here), written by us in the layout DCGM 4's
dcgmi writes: NVIDIA/DCGM dcgmi/Diag.cpp (HelperJsonBuildOutput, HelperJsonAddResult, HelperJsonAddTestSummary),
its key names in nvvs/include/NvvsJsonStrings.h, and the schema DCGM's own tests hold the output to,
testing/python3/dcgm_diag_schema.json (tests/acceptance/test_acceptance_dcgm.py checks these stand-ins against that
schema where GPUFABRIC_DCGM_SCHEMA names a copy). The tests of level 3 (`long`) are the plugins
nvvs/src/NvidiaValidationSuite.cpp adds at that level, after the shorter levels' software, pcie and memory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# (category, plugin name) of a level-3 run, in the order dcgmi prints them
LEVEL3 = (
    ("Deployment", "software"),
    ("Integration", "pcie"),
    ("Hardware", "memory"),
    ("Hardware", "diagnostic"),
    ("Stress", "targeted_stress"),
    ("Stress", "targeted_power"),
    ("Stress", "memory_bandwidth"),
)
LEVEL1 = (("Deployment", "software"),)


def diag_doc(
    gpus: int = 8,
    *,
    fail: dict[tuple[str, int], tuple[str, int]] | None = None,
    skip: frozenset[str] = frozenset(),
    tests: tuple[tuple[str, str], ...] = LEVEL3,
) -> dict[str, Any]:
    """The document: every test on every GPU passes, except `fail` ((test, GPU) -> (DCGM's message, its error
    id)) and the tests in `skip` (Skip on every GPU)."""
    fail = fail or {}
    categories: dict[str, list[dict[str, Any]]] = {}
    for category, name in tests:
        results = []
        for gpu in range(gpus):
            result: dict[str, Any] = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": gpu, "status": "Pass"}
            if name in skip:
                result["status"] = "Skip"
            elif (name, gpu) in fail:
                message, code = fail[(name, gpu)]
                result["status"] = "Fail"
                result["warnings"] = [{"warning": message, "error_id": code, "error_category": 9, "error_severity": 2}]
            results.append(result)
        statuses = {r["status"] for r in results}
        summary = "Fail" if "Fail" in statuses else "Skip" if statuses == {"Skip"} else "Pass"
        categories.setdefault(category, []).append(
            {"name": name, "results": results, "test_summary": {"status": summary}}
        )
    return {
        "DCGM Diagnostic": {"test_categories": [{"category": c, "tests": t} for c, t in categories.items()]},
        "entity_groups": [
            {
                "entity_group": "GPU",
                "entity_group_id": 1,
                "entities": [
                    {"entity_id": g, "device_id": "2330", "serial_num": f"165012345{g:04d}"} for g in range(gpus)
                ],
            }
        ],
        "metadata": {"version": "4.6.0", "Driver Version Detected": "580.95.05"},
    }


def diag_text(gpus: int = 8, **kw: Any) -> str:
    return json.dumps(diag_doc(gpus, **kw), indent=3)  # dcgmi writes jsoncpp's styled text, 3 spaces deep


def write_passing(suite: Any, folder: Path) -> None:
    """A passing stand-in result for every DCGM job of a suite (`<job id>.json`)."""
    for job in suite.gpu:
        (folder / f"{job.id}.json").write_text(diag_text(job.gpus))
