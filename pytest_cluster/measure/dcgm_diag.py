"""DCGM's diagnostic (`dcgmi diag -r N -j`) read and classified: pure functions over the
document dcgmi printed, a node's answer (untrusted: a wrong type, a huge or deep document
is said, never a traceback).

Two shapes (docs/internals.md, "DCGM's diagnostic"):

- DCGM 3.x: `{"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name",
  "results": [{"gpu_id": "0", "status", "warnings": [...]}]}]}]}}`, serials (where given)
  in "GPU Device Serials";
- DCGM 4.x: `{"DCGM Diagnostic": {"test_categories": [... "results": [{"entity_group":
  "GPU", "entity_id": 0, "status", "warnings": [{"warning", "error_id", "error_category",
  "error_severity"}]}]}]}`, serials in `entity_groups[].entities[].serial_num`.

Each result is classified (`kind`): a Pass with no finding passes; a finding whose error
id, category or severity is DCGM's configuration class (dcgm_errors.h: severity
DCGM_ERROR_CONFIG, the software and internal categories, CONFIG_IDS) is `config`; a
skipped, not-run or warned test without a finding is `not_run`; a failure otherwise is
`hardware`, naming the GPU and the test. DISTRUSTED: what DCGM's own tracker shows it
gets wrong, never taken as a verdict either way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

#: The top-level keys of the two shapes (DCGM's changelog, 4.0 "breaking changes":
#: https://docs.nvidia.com/datacenter/dcgm/latest/release-notes/changelog.html).
SHAPES = {"DCGM GPU Diagnostic": "3.x", "DCGM Diagnostic": "4.x"}

#: dcgm_errors.h (NVIDIA/DCGM, dcgmlib/dcgm_errors.h), dcgmErrorSeverity_t: DCGM_ERROR_CONFIG
#: = 5, "this error can be configured".
SEVERITY_CONFIG = 5
#: dcgmErrorCategory_t: 3 SOFTWARE_CONFIG, 4 SOFTWARE_LIBRARY, 5 SOFTWARE_XID is hardware's
#: report through the driver (left out), 6 SOFTWARE_CUDA, 7 SOFTWARE_EUD, 8 SOFTWARE_OTHER,
#: 16 INTERNAL_OTHER: not the GPU's hardware. 9-15 are HARDWARE_*; 1 and 2 performance.
CONFIG_CATEGORIES = frozenset({3, 4, 6, 7, 8, 16})
#: dcgmError_t ids that are the node's setup or DCGM's own trouble, not the GPU's hardware,
#: for documents that give an id without a category (3.x): 18 NO_ACCESS_TO_FILE, 21
#: BAD_PARAMETER, 22 CANNOT_OPEN_LIB, 23 DENYLISTED_DRIVER, 25 GRAPHICS_PROCESSES, 26
#: HOSTENGINE_CONN, 27 FIELD_QUERY, 28 BAD_CUDA_ENV, 29 PERSISTENCE_MODE, 32
#: CANNOT_GET_FIELD_TAG, 37 UNSUPPORTED_FIELD_TYPE, 44 INTERNAL, 47 ABORTED, 48
#: TEST_DISABLED, 49 CANNOT_GET_STAT, 53 CANNOT_SET_WATCHES, 55 ECC_DISABLED, 56
#: MEMORY_ALLOC (DCGM #284), 60 ECC_UNSUPPORTED, 67 DCGM_API, 68 CONCURRENT_GPUS, 73
#: MEMORY_ALLOC_HOST, 77 HAD_TO_RESTORE_STATE, 78 L1TAG_UNSUPPORTED, 82 EMPTY_GPU_LIST,
#: 89-94 the EUD plugin's setup, 96 FILE_CREATE_PERMISSIONS, 97 PAUSE_RESUME_FAILED, 108
#: CUDA_FM_NOT_INITIALIZED (Fabric Manager not running).
CONFIG_IDS = frozenset({18, 21, 22, 23, 25, 26, 27, 28, 29, 32, 37, 44, 47, 48, 49, 53, 55,
                        56, 60, 67, 68, 73, 77, 78, 82, 89, 90, 91, 92, 93, 94, 96, 97, 108})
#: The last id dcgm_errors.h declares (DCGM_FR_ERROR_SENTINEL = 112 ends the table): an id
#: above, or 0-2 (OK, UNKNOWN, UNRECOGNIZED), is no finding DCGM defines.
LAST_ID = 111
#: DCGM's results that are a verdict: a pass, a failure; a warning carries a finding or none.
PASSED, FAILED, WARNED = "pass", "fail", "warn"
#: DCGM's tests whose failures its own tracker shows false: nvbandwidth (DCGM #272, false
#: failures). A failure of one is no hardware finding: an ERROR saying so.
DISTRUSTED = {"nvbandwidth": "DCGM's nvbandwidth test reports false failures (NVIDIA/DCGM "
                             "#272): cross-check with gpus.p2p"}

#: The most of a document read: categories, tests, results, warnings (a bigger one is said).
MAX_ITEMS = 4096
MAX_TEXT = 300


@dataclass(frozen=True)
class Finding:
    """One result of DCGM's that is no pass: the test, the GPU (index, serial) or other
    entity, DCGM's status, its error id, category and severity where given, its words,
    and what we make of it (`kind`: hardware, config, not_run, distrusted)."""

    test: str
    entity: str  # 'GPU 3', 'NvSwitch 0', 'the node'
    gpu: int | None
    serial: str | None
    status: str
    error_id: int | None
    category: int | None
    severity: int | None
    message: str
    kind: str

    def text(self) -> str:
        serial = f" (serial {self.serial})" if self.serial else ""
        error = f" error id {self.error_id}" if self.error_id is not None else ""
        said = f": {self.message}" if self.message else ""
        return f"{self.entity}{serial} test {self.test!r} {self.status}{error}{said}"


@dataclass(frozen=True)
class Diagnosis:
    """What a document says: its shape, DCGM's version where given, the results that
    passed, the findings by kind, the top-level error DCGM gave (`runtime_error`), and
    what was wrong with the document itself (`bad`, '' when nothing)."""

    shape: str
    version: str | None
    tests: tuple[str, ...]
    passed: int
    findings: tuple[Finding, ...]
    runtime_error: str = ""
    bad: str = ""

    def of(self, kind: str) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.kind == kind)

    @property
    def outcome(self) -> str:
        """hardware (a FAIL), config, error (no verdict: the document, a runtime error, a
        skipped or distrusted test, no result at all), or pass."""
        if self.of("hardware"):
            return "hardware"
        if self.bad or self.runtime_error or not (self.passed or self.findings):
            return "error"
        if self.of("config"):
            return "config"
        if self.findings:
            return "error"
        return "pass"


def found(value: object) -> str:
    """What a node's value is, in a few words ('a list of 3 item(s)', "'ab'", 'nan')."""
    if isinstance(value, dict):
        return f"a mapping of {len(value)} key(s)"
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    if isinstance(value, bool) or value is None:
        return "true" if value is True else "false" if value is False else "null"
    text = repr(value)
    return text[:60] + ("..." if len(text) > 60 else "")


class _Bad(Exception):
    """The document is not DCGM's (a wrong type, too big): what was wrong."""


def _items(value: object, where: str) -> list[object]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Bad(f"{where} is {found(value)}, not a list")
    if len(value) > MAX_ITEMS:
        raise _Bad(f"{where} has {len(value)} entries, more than {MAX_ITEMS}")
    return value


def _map(value: object, where: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise _Bad(f"{where} is {found(value)}, not a map")
    return value


def _text(value: object) -> str:
    return value[:MAX_TEXT] if isinstance(value, str) else ""


def _number(value: object, where: str) -> int | None:
    """An id DCGM gives as a whole number (3.x writes GPU ids as text: '0')."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit() and len(value) < 10:
        return int(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value != int(value) or not 0 <= value < 2**31:
        raise _Bad(f"{where} is {found(value)}, not a whole number")
    return int(value)


def kind_of(error_id: int | None, category: int | None, severity: int | None) -> str:
    """What a finding is: config (DCGM's configuration class) or hardware. An id outside
    dcgm_errors.h's table is no finding of DCGM's: config (never blamed on a GPU)."""
    if severity == SEVERITY_CONFIG or category in CONFIG_CATEGORIES:
        return "config"
    if error_id is not None and (error_id in CONFIG_IDS or not 3 <= error_id <= LAST_ID):
        return "config"
    return "hardware"


@dataclass(frozen=True)
class _Warning:
    message: str
    error_id: int | None
    category: int | None
    severity: int | None


def _warnings(result: Mapping[str, object], where: str) -> list[_Warning]:
    found_: list[_Warning] = []
    for i, given in enumerate(_items(result.get("warnings"), f"{where}.warnings")):
        at = f"{where}.warnings[{i}]"
        if isinstance(given, str):  # some 3.x builds write the words alone
            found_.append(_Warning(given[:MAX_TEXT], None, None, None))
            continue
        item = _map(given, at)
        found_.append(_Warning(_text(item.get("warning")),
                               _number(item.get("error_id"), f"{at}.error_id"),
                               _number(item.get("error_category"), f"{at}.error_category"),
                               _number(item.get("error_severity"), f"{at}.error_severity")))
    return found_


def _classify(test: str, status: str, warnings: list[_Warning]) -> tuple[str, _Warning | None]:
    """A result's kind ('' for a pass) and the warning that decided it."""
    with_id = [w for w in warnings if w.error_id is not None or w.category is not None
               or w.severity is not None]
    kinds = [(kind_of(w.error_id, w.category, w.severity), w) for w in with_id]
    hardware = next((w for k, w in kinds if k == "hardware"), None)
    config = next((w for k, w in kinds if k == "config"), None)
    if status == PASSED and not kinds:
        return "", None
    if test in DISTRUSTED and status != PASSED:
        return "distrusted", hardware or config or (warnings[0] if warnings else None)
    if hardware is not None and status in (FAILED, WARNED, PASSED):
        return "hardware", hardware
    if config is not None:  # a pass that says an error (DCGM #284) is no pass
        return "config", config
    if status == FAILED:  # DCGM failed the GPU and said no more: its failure stands
        return "hardware", warnings[0] if warnings else None
    return "not_run", warnings[0] if warnings else None


def _serials(root: Mapping[str, object], document: Mapping[str, object]) -> dict[int, str]:
    """GPU index -> serial, where the document gives them (best effort: a wrong type is
    no serial, not a bad document)."""
    serials: dict[int, str] = {}
    given = root.get("GPU Device Serials")  # 3.x
    if isinstance(given, dict):
        for key, value in list(given.items())[:MAX_ITEMS]:
            if isinstance(key, str) and key.isdigit() and isinstance(value, str):
                serials[int(key)] = value[:64]
    groups = document.get("entity_groups", root.get("entity_groups"))  # 4.x
    for group in groups[:64] if isinstance(groups, list) else []:
        if not isinstance(group, dict) or group.get("entity_group") not in ("GPU", None):
            continue
        entities = group.get("entities")
        for entity in entities[:MAX_ITEMS] if isinstance(entities, list) else []:
            if not isinstance(entity, dict):
                continue
            index, serial = entity.get("entity_id"), entity.get("serial_num")
            if isinstance(index, int) and not isinstance(index, bool) \
                    and isinstance(serial, str):
                serials[index] = serial[:64]
    return serials


def _entity(result: Mapping[str, object], where: str) -> tuple[str, int | None]:
    group = result.get("entity_group", "GPU")
    index = _number(result.get("entity_id", result.get("gpu_id")), f"{where}.entity_id")
    if not isinstance(group, str):
        raise _Bad(f"{where}.entity_group is {found(group)}, not a name")
    if index is None:
        return "the node", None
    return f"{group[:32]} {index}", index if group == "GPU" else None


def _read(root: Mapping[str, object], document: Mapping[str, object]) -> tuple[list[str], int,
                                                                  list[Finding]]:
    serials = _serials(root, document)
    tests: list[str] = []
    passed = 0
    findings: list[Finding] = []
    count = 0
    for c, each in enumerate(_items(root.get("test_categories"), "test_categories")):
        at_c = f"test_categories[{c}]"
        category = _map(each, at_c)
        for t, given in enumerate(_items(category.get("tests"), f"{at_c}.tests")):
            at_t = f"{at_c}.tests[{t}]"
            test = _map(given, at_t)
            name = test.get("name")
            if not isinstance(name, str) or not name:
                raise _Bad(f"{at_t}.name is {found(name)}, not a test's name")
            tests.append(name[:64])
            for r, one in enumerate(_items(test.get("results"), f"{at_t}.results")):
                count += 1
                if count > MAX_ITEMS:
                    raise _Bad(f"more than {MAX_ITEMS} results")
                at_r = f"{at_t}.results[{r}]"
                result = _map(one, at_r)
                status = result.get("status")
                if not isinstance(status, str):
                    raise _Bad(f"{at_r}.status is {found(status)}, not DCGM's status")
                entity, gpu = _entity(result, at_r)
                warnings = _warnings(result, at_r)
                kind, why = _classify(name.lower(), status.strip().lower(), warnings)
                if not kind:
                    passed += 1
                    continue
                findings.append(Finding(
                    name[:64], entity, gpu, serials.get(gpu) if gpu is not None else None,
                    status[:32], why.error_id if why else None,
                    why.category if why else None, why.severity if why else None,
                    (why.message if why else "")
                    + (f" ({DISTRUSTED[name.lower()]})" if kind == "distrusted" else ""),
                    kind))
    return tests, passed, findings


def diagnose(document: object) -> Diagnosis:
    """The document dcgmi printed, classified (a document that is not DCGM's: `bad`)."""
    if not isinstance(document, dict):
        return Diagnosis("?", None, (), 0, (), bad=f"the report is {found(document)}, not "
                         "dcgmi's JSON document")
    key = next((k for k in SHAPES if k in document), None)
    if key is None:
        keys = ", ".join(repr(str(k)[:40]) for k in list(document)[:5])
        return Diagnosis("?", None, (), 0, (), bad=f"no {' or '.join(map(repr, SHAPES))} "
                         f"in dcgmi's document (keys: {keys or 'none'})")
    shape = f"DCGM {SHAPES[key]}"
    root = document[key]
    version = _version(document, root)
    if not isinstance(root, dict):
        return Diagnosis(shape, version, (), 0, (), bad=f"{key!r} is {found(root)}, not a map")
    runtime = _text(root.get("runtime_error") or document.get("runtime_error"))
    try:
        tests, passed, findings = _read(root, document)
    except _Bad as exc:
        return Diagnosis(shape, version, (), 0, (), runtime, bad=str(exc))
    return Diagnosis(shape, version, tuple(tests), passed, tuple(findings), runtime)


def _version(document: Mapping[str, object], root: object) -> str | None:
    for holder in (document.get("metadata"), root, document):
        if isinstance(holder, dict):
            for key in ("version", "Version"):
                if isinstance(holder.get(key), str):
                    return str(holder[key])[:32]
    return None
