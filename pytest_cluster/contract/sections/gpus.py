"""The `gpus:` section (GPU clauses with safe health defaults) and the `sim:` section
(the description of a simulated cluster)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from yaml.nodes import MappingNode, Node, SequenceNode

from pytest_cluster.contract.clauses import clauses, declared
from pytest_cluster.contract.declaration import Value
from pytest_cluster.contract.model import Clause, GpuSpec, Rule
from pytest_cluster.contract.reading.clause_parsers import (
    clause,
    promises,
    respelled,
    rule,
    written_rule,
)
from pytest_cluster.contract.reading.fields import field, or_default, text, time_between
from pytest_cluster.contract.reading.mapping import Map, section_map
from pytest_cluster.contract.reading.spelling import closest, written_with
from pytest_cluster.contract.reading.yaml_nodes import scalar
from pytest_cluster.contract.requirement import parse_requirement
from pytest_cluster.contract.sections.gpu_models import MODELS, PEAK_TFLOPS, model_named
from pytest_cluster.errors import UnitError, head
from pytest_cluster.units import Dim, format_value

if TYPE_CHECKING:
    from pytest_cluster.contract.reading.located_errors import Ctx

T = TypeVar("T")


def gpu_model(raw: object) -> str:
    """A model's key from its friendly name (any case) or its NVML name."""
    name = text("a model")(raw)
    model = model_named(name)
    if model is not None:
        return model.key
    close = closest(name, list(MODELS), cutoff=0.5)
    hint = f"did you mean {close!r}? " if close else ""
    raise UnitError(f"unknown GPU model {head(name, 64)!r}{written_with(name[:64])}; {hint}known: "
                    f"{', '.join(MODELS)}")


def _memory_slip(ctx: Ctx, memory: Clause | None, model: str | None) -> None:
    """Warn when the promised memory is more than the model has: every GPU would fail it.
    The likely slip is GiB for GB ('80 GiB' for an 80 GB H100, which has 79.65 GiB)."""
    if memory is None or model is None:
        return
    req, total = memory.requirement, MODELS[model].memory_bytes
    if req.op in ("<=", "<") or req.bound.value <= total:
        return
    decimal = respelled(req.bound, req.unit.replace("i", ""))
    hint = ""
    if decimal is not None and decimal.value <= total:
        hint = f"; did you mean '{req.op} {decimal}'?"
    ctx.warn(memory.line, memory.key, f"{req.text!r} is more than the {model}'s total memory "
             f"({format_value(total, Dim.SIZE, 'GiB')} as NVML reports it): every GPU would "
             f"fail it{hint}")


def _matmul_slip(ctx: Ctx, matmul: tuple[tuple[str, Clause], ...],
                 model: str | None) -> None:
    """Warn when a promised matmul rate is above the datasheet's dense peak (of the
    promised model, else of every known model): every GPU would fail it."""
    for dtype, promised in matmul:
        req = promised.requirement
        peaks = {m: p[dtype] for m, p in PEAK_TFLOPS.items()
                 if dtype in p and (model is None or m == model)}
        if req.op in ("<=", "<") or not peaks:
            continue
        top = max(peaks, key=lambda m: peaks[m])
        if req.bound.value <= peaks[top] * 1e12:
            continue
        whose = (f"the {model}'s datasheet dense {dtype} peak" if model is not None else
                 f"every known GPU's datasheet dense {dtype} peak (the highest: {top}'s")
        close = ")" if model is None else ""
        ctx.warn(promised.line, promised.key, f"{req.text!r} is above {whose} "
                 f"{peaks[top]:g} TFLOPS{close}: every GPU would fail it; check the unit "
                 "and the number")


def _matmul(ctx: Ctx, table: Map) -> tuple[tuple[str, Clause], ...]:
    declaration = declared("gpus.matmul")
    node = table.take(declaration.key)
    if node is None:
        return ()
    sub = Map(ctx, node, declaration.id, declaration.members)
    found = []
    for dtype in declaration.members:
        item = clause(ctx, sub, declaration, member=dtype)
        if item is not None:
            found.append((dtype, item))
    sub.finish()
    return tuple(found)


def _model_rule(ctx: Ctx, model: str, node: Node) -> Rule:
    """The promised model and form factor, as a rule (an H100 PCIe is not an H100 SXM),
    written by the spec or its profile (written_rule: then cited)."""
    promised = MODELS[model]
    return written_rule(ctx, node, "gpus.model", declared("gpus.model").id,
                        f"{promised.key} ({promised.form_factor}, NVML name "
                        f"{' or '.join(promised.nvml_names)})")


def _nvlink(ctx: Ctx, table: Map) -> Clause | Rule | None:
    """A rule (every link up), or a count of links that must be up."""
    declaration = declared("gpus.nvlink")
    node = table.items.get(declaration.key, (None, None))[1]
    if node is not None and isinstance(value := _plain(node), int) \
            and not isinstance(value, bool):
        return clause(ctx, table, declaration)
    return rule(ctx, table, declaration)


#: What DCGM's diagnostic levels are, as `dcgmi diag -r N` runs them (the DCGM user
#: guide, "Run Levels": https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html).
DCGM_LEVELS = {1: "seconds: the deployment checks", 2: "about 2 min: adds PCIe and memory",
               3: "about 15-30 min: adds the stress tests", 4: "an hour or more: adds "
               "memtest and the pulse test"}


def dcgm_level(raw: object) -> int:
    """A DCGM diagnostic level: r1..r4 (as DCGM's docs write them) or 1..4 (quoted or
    not: "2" is 2)."""
    if isinstance(raw, int) and not isinstance(raw, bool) and raw in DCGM_LEVELS:
        return raw
    text = raw.strip().lower() if isinstance(raw, str) else ""
    if text in {f"r{n}" for n in DCGM_LEVELS} | {str(n) for n in DCGM_LEVELS}:
        return int(text.removeprefix("r"))
    raise UnitError(f"expected a DCGM diagnostic level, r1, r2, r3, r4 or 1-4 (dcgmi diag "
                    f"-r N; r3 and r4 run at the stress level), got {head(str(raw), 64)!r}")


def _dcgm(ctx: Ctx, table: Map) -> tuple[Rule | None, int | None]:
    """gpus.dcgm_diag: the rule and its level (None, None when absent or wrong)."""
    declaration = declared("gpus.dcgm_diag")
    node = table.take(declaration.key)
    level = field(ctx, node, declaration.id, dcgm_level)
    if node is None or level is None:
        return None, None
    return Rule(declaration.id, node.start_mark.line + 1,
                f"dcgmi diag -r {level} ({DCGM_LEVELS[level]}): {declaration.text}; a "
                "skipped or not-run test is no pass"), level


def _implied(section: str) -> tuple[Rule, ...]:
    return tuple(Rule(d.id, 0, d.text) for d in clauses(section)
                 if d.value is Value.IMPLIED)


def parse_gpus(ctx: Ctx, node: Node | None) -> GpuSpec | None:
    table = section_map(ctx, node, "gpus")
    if table is None:
        return None
    count = clause(ctx, table, declared("gpus.count"))
    if count is None and not ctx.failed("gpus.count"):
        ctx.error(node, "gpus.count", "missing: how many GPUs per node, e.g. count: 8")
    if count is not None and not 1 <= count.requirement.bound.value <= 64:
        ctx.error(node, "gpus.count", "expected between 1 and 64 GPUs per node")
    model_node = table.take("model")
    model = field(ctx, model_node, "gpus.model", gpu_model)
    nvlink = _nvlink(ctx, table)
    dcgm, level = _dcgm(ctx, table)

    def size(raw: object) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int) or not 16 <= raw <= 65536:
            raise UnitError(f"expected a matrix size from 16 to 65536, or [m, n, k], got "
                            f"{raw!r}")
        return raw

    def shape(node: Node | None) -> tuple[int, int, int]:
        if isinstance(node, SequenceNode):
            values = [field(ctx, item, f"gpus.matmul_size[{i}]", size)
                      for i, item in enumerate(node.value)]
            if len(values) != 3:
                ctx.error(node, "gpus.matmul_size", f"expected [m, n, k], got {len(values)} "
                          f"values")
            m, n, k = values if len(values) == 3 else (None, None, None)
            if m is not None and n is not None and k is not None:
                return (m, n, k)
            return (8192, 8192, 8192)
        side = or_default(field(ctx, node, "gpus.matmul_size", size), 8192)
        return (side, side, side)

    window = time_between(0.001, 600, "from 1 ms to 10 min")
    load_time = time_between(1, 3600, "from 1 s to 1 h")
    found = promises(ctx, table, "gpus", skip=("count", "nvlink"))
    matmul = _matmul(ctx, table)
    model_rule = () if model is None or model_node is None else (
        _model_rule(ctx, model, model_node),)
    result = GpuSpec(
        clauses=(count or _one_gpu(), *model_rule, *found, *((nvlink,) if nvlink else ()),
                 *((dcgm,) if dcgm else ()), *_implied("gpus")),
        model=model,
        matmul=matmul,
        matmul_shape=shape(table.take("matmul_size")),
        xid_window_s=or_default(field(ctx, table.take("xid_window"), "gpus.xid_window",
                                      window), 2.0),
        load_time_s=or_default(field(ctx, table.take("load_time"), "gpus.load_time",
                                     load_time), 10.0),
        stress_time_s=or_default(field(ctx, table.take("stress_time"), "gpus.stress_time",
                                       time_between(1, 7 * 86400, "from 1 s to 7 days")),
                                 300.0),
        dcgm_level=level,
    )
    table.finish()
    _memory_slip(ctx, result.clause("memory"), result.model)
    _matmul_slip(ctx, result.matmul, result.model)
    return result


def _one_gpu() -> Clause:
    """The count of a spec whose count is wrong (already an error): one GPU."""
    return Clause("gpus.count", 0, parse_requirement("== 1", Dim.COUNT, "=="))


def _plain(node: Node) -> object:
    return scalar(node) if not isinstance(node, (MappingNode, SequenceNode)) else None
