"""One table renderer per resource kind (what `-o table`, the default, prints)."""

from __future__ import annotations

from typing import Any, Callable

from rich.text import Text

from shared import reasons
from shared.plans import PlanShown
from training_cli.columns import Col
from training_cli.output import age, duration, fields_table, items_of, list_table, number, text, when

# Columns most lists share. A list's columns are given most needed first: at a narrow terminal the
# last ones are left out first (training_cli/columns.py); `wide` ones only show with -o wide.
ID = Col("ID", keep=True)
NAME = Col("Name", keep=True, cut=True)
AGE = Col("Age")
CREATED = Col("Created", wide=True)
WORKLOAD = Col("Workload", wide=True)
TAGS = Col("Tags", wide=True, cut=True)


def device_unit(kinds: Any) -> str:
    """What a count of devices is called: `GPUs` on GPU nodes, `Slots` where every node has CPU
    training slots (SPEC 1: CPU nodes), `GPUs/slots` where the nodes are of both kinds."""
    kinds = {str(k) for k in kinds if k}
    if kinds and kinds <= {"cpu"}:
        return "Slots"
    return "GPUs/slots" if "cpu" in kinds else "GPUs"


def node_kinds(pools: Any) -> set[str]:
    return {n.get("deviceKind") for p in pools or [] for n in p.get("nodes") or []}


def info(data: dict[str, Any]) -> list[Any]:
    head = fields_table(
        [
            ("Version", data.get("version")),
            ("API", data.get("apiUrl")),
            ("Methods", data.get("methods")),
            ("Catalog", f"{data.get('catalogSize', '-')} base model(s)"),
        ]
    )
    rows = []
    for pool in data.get("pools") or []:
        for node in pool.get("nodes") or []:
            rows.append(
                [pool.get("name"), node.get("name"), node.get("deviceKind"), node.get("gpus"), node.get("freeGpus"),
                 *_services(node)]
            )
    unit = device_unit(node_kinds(data.get("pools")))
    return [head, list_table(["Pool", "Node", "Devices", unit, "Free", "Worker", Col("Endpoint manager", cut=True)],
                             rows, title="Pools")]


def _services(node: dict[str, Any]) -> list[str]:
    """A node's worker and endpoint manager as `training info` and `pools get` show them."""
    if node.get("workerAlive") is None:  # an API from before it said
        return ["-", "-"]
    return [reasons.node_service_state(alive=bool(node.get("workerAlive")), ready=node.get("workerReady", True)),
            reasons.node_service_state(alive=bool(node.get("endpointManagerAlive")))]


def base_models(page: Any) -> Any:
    rows = [
        [
            m.get("id"),
            _params(m.get("parameters") or m.get("parameterCount")),
            m.get("modality"),
            m.get("precisions"),
            m.get("gpuCounts") or m.get("gpus"),
            m.get("source") or m.get("builtin") or m.get("path"),
        ]
        for m in items_of(page)
    ]
    return list_table([ID, Col("Parameters"), Col("Modality"), Col("Precisions"), Col("GPU counts"),
                       Col("Source", cut=True)], rows)


def base_model(model: dict[str, Any], device_kinds: Any = ()) -> list[Any]:
    """One model and the runs it can start; `device_kinds`: the deployment's nodes' (GET /v1/info),
    which say whether a run's count is of GPUs or of CPU slots."""
    unit = device_unit(device_kinds)
    per = {"Slots": "slot", "GPUs": "GPU"}.get(unit, "device")
    assume = model.get("startableRunsAssume") or {}
    head = fields_table(
        [
            ("ID", model.get("id")),
            ("Source", model.get("source") or model.get("builtin") or model.get("path")),
            ("Modality", model.get("modality")),
            ("Parameters", _params(model.get("parameters") or model.get("parameterCount"))),
            ("Precisions", model.get("precisions")),
            (f"{unit[:-1] if unit.endswith('s') else unit} counts", model.get("gpuCounts") or model.get("gpus")),
            ("Architecture", model.get("architecture")),
            ("Shape", _shape(model)),
            ("Chat template", _template(model.get("chatTemplate"))),
            ("LoRA targets", model.get("loraTargetModules")),
            ("Generation", reasons.generation_defaults_text(model["generationDefaults"])
             if model.get("generationDefaults") else model.get("generationConfig")),
            *_provenance(model.get("imported")),
            # the runs listed below hold for a plan at these defaults (the memory estimate grows with them)
            ("Runs assume", {**(assume.get("adapter") or {}), **(assume.get("hyperparameters") or {})}),
        ]
    )
    rows = [
        [r.get("method"), r.get("gpus"), r.get("precision"), _kl(r.get("klPenalty")), r.get("restore") or "none",
         r.get("engine"), r.get("memoryGiB"), r.get("pools")]
        for r in model.get("startableRuns") or []
    ]
    runs = list_table([Col("Method", keep=True), Col(unit, keep=True), "Precision", "KL penalty", "Restore",
                       Col("Engine", cut=True), f"GiB/{per}", Col("Pools", cut=True)], rows,
                      title="Runs that can be started")
    return [head, runs]


def _shape(model: dict[str, Any]) -> str | None:
    """hidden 576, 30 layers, 9 heads (3 kv), FFN 1536, vocab 49152, 8192 positions, tied embeddings"""
    if model.get("hiddenSize") is None:
        return None
    parts = [f"hidden {model['hiddenSize']}", f"{model.get('layers')} layers",
             f"{model.get('heads')} heads ({model.get('kvHeads')} kv)"]
    parts += [f"FFN {model['intermediateSize']}"] if model.get("intermediateSize") else []
    parts += [f"vocab {model.get('vocabSize')}"]
    parts += [f"{model['maxPositions']} positions"] if model.get("maxPositions") else []
    parts += ["tied embeddings"] if model.get("tiedEmbeddings") else []
    return ", ".join(parts)


def _template(template: str | None) -> str:
    if not template:
        return "none (chat rows are refused)"
    return f"yes ({len(template)} characters)"


def _provenance(imported: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """An imported model: where from, and for a GGUF file its digest and quantization."""
    if not imported:
        return []
    rows: list[tuple[str, Any]] = [("Imported from", f"{imported.get('source')} ({imported.get('format')})"),
                                   ("Imported", when(imported.get("importedAt")))]
    if imported.get("format") == "gguf":
        quant = imported.get("quantization") or {}
        rows += [("GGUF sha256", imported.get("sha256")),
                 ("Quantization", f"{quant.get('fileType')} {quant.get('tensorTypes')}, "
                                  f"dequantized to {imported.get('dtype')}")]
    return rows


def datasets(page: Any) -> Any:
    rows = [
        [d.get("id"), d.get("name"), d.get("format"), d.get("rows"), _bytes(d.get("bytes")), age(d.get("createdAt")),
         d.get("tags"), d.get("workload"), when(d.get("createdAt"))]
        for d in items_of(page)
    ]
    return list_table([ID, NAME, "Format", "Rows", "Size", AGE, TAGS, WORKLOAD, CREATED], rows)


def dataset(d: dict[str, Any]) -> Any:
    return fields_table(
        [
            ("ID", d.get("id")), ("Name", d.get("name")), ("Tags", d.get("tags")), ("Format", d.get("format")),
            ("Rows", d.get("rows")),
            ("Size", _bytes(d.get("bytes"))), ("Digest", d.get("digest")), ("Workload", d.get("workload")),
            ("Created", when(d.get("createdAt"))),
        ]
    )


def runs(page: Any) -> Any:
    rows = [
        [r.get("id"), r.get("name"), r.get("status"), progress_text(r), number((r.get("progress") or {}).get("loss")),
         age(r.get("createdAt")), PlanShown.of(r.get("plan")).method, PlanShown.of(r.get("plan")).model, r.get("gpus"),
         number((r.get("progress") or {}).get("reward")), r.get("engine"), r.get("pool"), r.get("tags"),
         r.get("workload"), when(r.get("createdAt"))]
        for r in items_of(page)
    ]
    return list_table(
        [ID, NAME, "Status", "Progress", "Loss", AGE, "Method", Col("Model", cut=True), "GPUs", Col("Reward", wide=True),
         Col("Engine", wide=True), Col("Pool", wide=True), TAGS, WORKLOAD, CREATED], rows)


def memory_text(memory: dict[str, Any] | None) -> str:
    """A run's memory per device: its estimate beside its measured peak (and each rank's, when several)."""
    memory = memory or {}
    if memory.get("estimateGiB") is None and memory.get("peakGiB") is None:
        return "-"
    text = f"estimate {number(memory.get('estimateGiB'), 3)} GiB, peak {number(memory.get('peakGiB'), 3)} GiB"
    ranks = memory.get("ranks") or []
    if len(ranks) > 1:
        text += " (" + ", ".join(f"rank {r.get('rank')} {number(r.get('peakGiB'), 3)}" for r in ranks) + ")"
    if memory.get("measuredAs"):
        text += f", measured as {memory['measuredAs']}"
    return text


def run(r: dict[str, Any]) -> Any:
    plan = PlanShown.of(r.get("plan"))
    progress = r.get("progress") or {}
    scheduling = r.get("scheduling") or {}
    pairs = [
        ("ID", r.get("id")),
        ("Name", r.get("name")),
        ("Tags", r.get("tags")),
        ("Status", r.get("status")),
        ("Method", plan.method),
        ("Engine", r.get("engine")),
        ("Model", plan.model),
        ("Dataset", plan.dataset),
        ("Progress", progress_text(r)),
        ("Loss", _loss(progress)),
    ]
    if progress.get("validationLoss") is not None:
        pairs.append(("Validation loss", number(progress.get("validationLoss"))))
    if progress.get("reward") is not None:
        pairs.append(("Reward", number(progress.get("reward"))))
    pairs += [
        ("Tokens/s", number(progress.get("tokensPerSecond"), 5)),
        ("ETA", duration(progress.get("etaSeconds")) if r.get("status") == "RUNNING" else "-"),
        ("Pool", r.get("pool")),
        ("GPUs", r.get("gpus")),
        ("Devices", _devices(scheduling)),
        ("Memory", memory_text(r.get("memory"))),
    ]
    if r.get("status") == "QUEUED":
        if scheduling.get("position"):
            pairs.append(("Position", f"{scheduling['position']} in pool {r.get('pool')} ({scheduling.get('reason')})"))
        pairs.append(("Waiting on", waiting_text(scheduling) or "-"))
    pairs += [
        ("Snapshots", r.get("snapshots")),
        ("Workload", r.get("workload")),
        ("Detail", r.get("detail")),
        ("Created", when(r.get("createdAt"))),
        ("Finished", when(r.get("finishedAt"))),
    ]
    return fields_table(pairs)


def snapshots(page: Any) -> Any:
    rows = [
        [s.get("id"), s.get("run"), s.get("step"), s.get("final"), _contents(s.get("contents")), age(s.get("createdAt")),
         s.get("gpus"), s.get("layout"), s.get("engine"), s.get("workload"), when(s.get("createdAt"))]
        for s in items_of(page)
    ]
    return list_table([ID, "Run", "Step", "Final", "Contents", AGE, "GPUs", "Layout", Col("Engine", cut=True),
                       WORKLOAD, CREATED], rows)


def snapshot(s: dict[str, Any]) -> Any:
    contents = s.get("contents") or {}
    state = contents.get("trainingState")
    return fields_table(
        [
            ("ID", s.get("id")), ("Run", s.get("run")), ("Step", s.get("step")), ("Final", s.get("final")),
            ("Model", s.get("model")), ("Method", s.get("method")), ("Engine", s.get("engine")),
            ("Precision", s.get("precision")), ("Layout", s.get("layout")), ("GPUs", s.get("gpus")),
            ("Weights", (contents.get("weights") or {}).get("format")),
            ("Training state", state.get("format") if state else "none (weights only)"),
            ("Readable here", _readable(s.get("readable"))),
            ("Imported from", s.get("source") if s.get("imported") else None),
            ("Workload", s.get("workload")), ("Created", when(s.get("createdAt"))),
        ]
    )


def _readable(readable: dict[str, Any] | None) -> str:
    if not readable:
        return "-"
    return ", ".join(f"{part} {'yes' if readable.get(key) else 'no'}"
                     for part, key in (("weights", "weights"), ("training state", "trainingState")))


def event_line(event: dict[str, Any]) -> Text:
    level = str(event.get("level") or "info").lower()
    style = {"warn": "yellow", "error": "red"}.get(level, "")
    line = Text(f"{when(event.get('time'))} ")
    line.append(f"{level.upper():<5}", style=style)
    line.append(f" {event.get('message', '')}")
    return line


def events(items: list[dict[str, Any]]) -> list[Text]:
    """An event log (`runs logs`, `evaluations logs`): one `TIME LEVEL MESSAGE` line per event."""
    return [event_line(event) for event in items]


# -- metrics (`runs metrics`): one row per logged point -----------------------------------------

# The columns a metrics table may have: (the point's key, header, cell), in the order shown. A
# column appears when some point has a value for it: training steps carry loss..epoch, validation
# passes validationLoss/Perplexity, grpo steps reward..stepSeconds (docs/api.md); `rewards` becomes
# one `Reward KEY` column per reward. Keys not listed here follow under their own name; each point's
# `time` is left to -o json/yaml.
METRIC_COLUMNS: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("step", "Step", text),
    ("loss", "Loss", number),
    ("learningRate", "LR", number),
    ("gradNorm", "Grad norm", number),
    ("validationLoss", "Val loss", number),
    ("validationPerplexity", "Val ppl", number),
    ("reward", "Reward", number),
    ("rewardStd", "Reward std", number),
    ("rewards", "", number),  # one column per reward key, its mean
    ("kl", "KL", number),
    ("completionLength", "Length", number),
    ("epoch", "Epoch", number),
    ("tokensPerSecond", "Tokens/s", lambda v: number(v, 5)),
    ("generationSeconds", "Gen s", number),
    ("handoffSeconds", "Handoff s", number),
    ("handoffBytes", "Handoff", lambda v: _bytes(v)),
    ("rewardSeconds", "Reward s", number),
    ("updateSeconds", "Update s", number),
    ("stepSeconds", "Step s", number),
    ("attempt", "Attempt", text),  # 0 until a lost worker's run is queued again: shown once it is not
)
METRICS_NOT_SHOWN = {"time"}
# Shown with -o wide only: a grpo step's timings and sizes, which no terminal holds beside the rest.
METRICS_WIDE = {"Reward std", "Length", "Gen s", "Handoff s", "Handoff", "Reward s", "Update s", "Step s", "Attempt"}


def metrics(points: list[dict[str, Any]]) -> Any:
    """The run's metric points as a table whose columns are the keys the points actually carry."""
    present = {key for point in points for key, value in point.items()
               if value is not None and value != {} and (key != "attempt" or value)}
    known = {key for key, _, _ in METRIC_COLUMNS}
    columns: list[tuple[str, Callable[[dict[str, Any]], str]]] = []
    for key, header, cell in METRIC_COLUMNS:
        if key not in present:
            continue
        if key == "rewards":
            names = dict.fromkeys(name for point in points for name in (point.get("rewards") or {}))
            columns += [(f"Reward {name}", lambda p, name=name: number(_reward_mean(p, name))) for name in names]
        else:
            columns.append((header, lambda p, key=key, cell=cell: "-" if p.get(key) is None else cell(p[key])))
    for key in dict.fromkeys(k for point in points for k in point):
        if key in present and key not in known and key not in METRICS_NOT_SHOWN:
            columns.append((key, lambda p, key=key: text(p.get(key))))
    headers = [Col(header, keep=header == "Step", wide=header in METRICS_WIDE) for header, _ in columns]
    return list_table(headers, [[cell(point) for _, cell in columns] for point in points])


def _reward_mean(point: dict[str, Any], name: str) -> Any:
    value = (point.get("rewards") or {}).get(name)
    return value.get("mean") if isinstance(value, dict) else value


# -- pieces --------------------------------------------------------------------------------------

def progress_text(r: dict[str, Any]) -> str:
    progress = r.get("progress") or {}
    step, total = progress.get("step"), progress.get("totalSteps")
    if step is None and total is None:
        return "-"
    return f"{step or 0}/{total if total is not None else '?'}"


def waiting_text(scheduling: dict[str, Any] | None) -> str:
    """SPEC 5: `held by endpoint E (MODEL, idle 42m); queued ahead: run R (4 GPU)`, as the API
    sends it (`waitingText`), else formatted here by the same shared formatter."""
    scheduling = scheduling or {}
    if scheduling.get("waitingText") is not None:
        return str(scheduling["waitingText"])
    return reasons.waiting_text(scheduling)


def _loss(progress: dict[str, Any]) -> str:
    loss, first = progress.get("loss"), progress.get("firstLoss")
    if loss is None:
        return "-"
    return number(loss) + (f" (from {number(first)})" if first is not None else "")


def _devices(scheduling: dict[str, Any]) -> str:
    devices = scheduling.get("devices")
    if not devices:
        return "-"
    node = scheduling.get("node")
    return (f"{node}: " if node else "") + text(devices)


def _contents(contents: dict[str, Any] | None) -> str:
    if not contents:
        return "-"
    return "weights + training state" if contents.get("trainingState") else "weights"


def _kl(value: Any) -> str:
    if value is None:
        return "-"
    return "no" if not value else ("yes" if value is True else text(value))


def _params(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return text(value)
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if value >= size:
            return f"{value / size:.3g}{unit}"
    return str(value)


def _bytes(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return text(value)
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value} B"


# -- pools ---------------------------------------------------------------------------------------

def pools(page: Any) -> Any:
    rows = [
        [p.get("name"), len(p.get("nodes") or []), p.get("gpus"), p.get("freeGpus"), p.get("heldGpus"),
         p.get("waiting"), _quotas(p.get("quotas"))]
        for p in items_of(page)
    ]
    unit = device_unit(node_kinds(items_of(page)))
    return list_table(["Pool", "Nodes", unit, "Free", "Held", "Waiting", Col("Quotas (held/quota)", cut=True)], rows)


def pool(p: dict[str, Any]) -> list[Any]:
    unit = device_unit(node_kinds([p]))
    head = fields_table([("Pool", p.get("name")), (unit, p.get("gpus")), ("Free", p.get("freeGpus")),
                         ("Held", p.get("heldGpus")), ("Waiting", p.get("waiting")),
                         ("Quotas (held/quota)", _quotas(p.get("quotas")))])
    nodes = list_table(
        ["Node", "Devices", unit, "Free", "Worker", Col("Endpoint manager"), Col("Free devices", cut=True)],
        [[n.get("name"), n.get("deviceKind"), n.get("gpus"), n.get("freeGpus"), *_services(n), n.get("freeDevices")]
         for n in p.get("nodes") or []], title="Nodes")
    holders = list_table(
        [Col("Kind", keep=True), ID, unit, "Node", "Idle", Col("Model", cut=True), "Workload",
         Col("Devices", cut=True)],
        [[h.get("kind"), h.get("id") or "(hidden)", h.get("gpus"), h.get("node"),
          reasons.idle_text(h["idleSeconds"]) if h.get("idleSeconds") is not None else "-",
          h.get("model") or "-", h.get("workload") or "-", h.get("devices")]
         for h in p.get("holders") or []], title="Held by")
    queue = list_table(
        ["#", Col("Kind", keep=True), ID, unit, Col("Reason", cut=True), "Workload"],
        [[q.get("position"), q.get("kind"), q.get("id") or "(hidden)", q.get("gpus"), q.get("reason"),
          q.get("workload") or "-"] for q in p.get("queue") or []], title="Queue")
    return [head, nodes, holders, queue]


def _quotas(quotas: list[dict[str, Any]] | None) -> str:
    return ", ".join(f"{q['workload']} {q['held']}/{q['gpus']}" for q in quotas or []) or "-"


def endpoints(page: Any) -> Any:
    rows = [
        [e.get("id"), e.get("name"), e.get("phase"), age(e.get("createdAt")), e.get("model"), e.get("snapshot"),
         e.get("gpus"), when(e.get("stopsAt")), e.get("tags"), e.get("workload"), when(e.get("createdAt"))]
        for e in items_of(page)
    ]
    return list_table([ID, NAME, "Phase", AGE, Col("Model", cut=True), "Snapshot", "GPUs", Col("Stops at", wide=True),
                       TAGS, WORKLOAD, CREATED], rows)


def endpoint(e: dict[str, Any], api_url: str | None = None) -> Any:
    """One endpoint. `api_url`: the API's address as the CLI reaches it; requests go through it
    (`API/v1`, OpenAI's base URL), not to the serving process's own address."""
    scheduling = e.get("scheduling") or {}
    pairs = [
        ("ID", e.get("id")), ("Name", e.get("name")), ("Tags", e.get("tags")), ("Phase", e.get("phase")),
        ("Model", e.get("model")), ("Snapshot", e.get("snapshot")),
    ]
    if api_url:
        pairs += [("OpenAI base URL", api_url.rstrip("/") + "/v1"),
                  ("Use it as", reasons.endpoint_openai_use(e.get("name") or e.get("id") or "-"))]
    if e.get("address"):
        pairs.append(("Process address", f"{e['address']} ({reasons.ENDPOINT_PROCESS_ADDRESS})"))
    pairs += [
        ("Pool", e.get("pool")), ("GPUs", e.get("gpus")), ("Devices", _devices(scheduling)),
        ("Idle timeout", f"{e['idleTimeout']}s" if e.get("idleTimeout") else "never"),
        ("Start timeout", f"{e.get('startTimeout')}s"),
        ("Last request", when(e.get("lastRequestAt"))), ("Ready since", when(e.get("readyAt"))),
    ]
    if e.get("phase") == "READY" and e.get("stopsAt"):
        pairs.append(("Stops at", f"{when(e['stopsAt'])} unless a request comes first"))
    if e.get("phase") == "QUEUED":
        pairs.append(("Waiting on", waiting_text(scheduling) or "GPUs"))
    pairs += [("Detail", e.get("detail")), ("Workload", e.get("workload")), ("Created", when(e.get("createdAt")))]
    return fields_table(pairs)


# --- Evaluations and comparisons (SPEC 2.5)

def _metric(metrics: dict[str, Any] | None, name: str) -> str:
    return number((metrics or {}).get(name))


def _rows_text(e: dict[str, Any]) -> str:
    progress = e.get("progress") or {}
    total = progress.get("totalRows")
    return f"{progress.get('rows') or 0}/{total if total is not None else '?'}"


def evaluations(page: Any) -> Any:
    rows = [
        [e.get("id"), e.get("status"), _rows_text(e), _metric(e.get("metrics"), "loss"),
         _metric(e.get("metrics"), "exactMatch"), age(e.get("createdAt")), e.get("snapshot"), e.get("dataset"),
         e.get("model"), e.get("gpus"), e.get("pool"), e.get("workload"), when(e.get("createdAt"))]
        for e in items_of(page)
    ]
    return list_table([ID, "Status", "Rows", "Loss", "Exact match", AGE, "Snapshot", "Dataset", Col("Model", cut=True),
                       "GPUs", Col("Pool", wide=True), WORKLOAD, CREATED], rows)


def evaluation(e: dict[str, Any]) -> Any:
    scheduling = e.get("scheduling") or {}
    metrics = e.get("metrics") or {}
    pairs = [
        ("ID", e.get("id")), ("Status", e.get("status")), ("Model", e.get("model")),
        ("Snapshot", e.get("snapshot")), ("Run", e.get("run")), ("Step", e.get("step")),
        ("Dataset", e.get("dataset")), ("Rows", _rows_text(e)), ("Judge", e.get("judge")),
        ("Comparison", e.get("comparison")), ("Pool", e.get("pool")), ("GPUs", e.get("gpus")),
        ("Devices", _devices(scheduling)), ("Max tokens", _max_tokens(e)),
    ]
    if e.get("status") == "QUEUED":
        if scheduling.get("position"):
            pairs.append(("Position", f"{scheduling['position']} in pool {e.get('pool')} ({scheduling.get('reason')})"))
        pairs.append(("Waiting on", waiting_text(scheduling) or "-"))
    if metrics:
        pairs += [("Loss", number(metrics.get("loss"))), ("Perplexity", number(metrics.get("perplexity"))),
                  ("Exact match", number(metrics.get("exactMatch")))]
        pairs += [(f"Reward {name}", number(value)) for name, value in (metrics.get("rewards") or {}).items()]
        if e.get("judge"):
            pairs.append(("Judge score", f"{number(metrics.get('judge'))} ({metrics.get('judgeUnparsable', 0)} "
                                         "row(s) unparsable)"))
    pairs += [("Detail", e.get("detail")), ("Workload", e.get("workload")), ("Created", when(e.get("createdAt"))),
              ("Finished", when(e.get("finishedAt")))]
    return fields_table(pairs)


def _max_tokens(e: dict[str, Any]) -> str:
    """What each completion could run to: once it scores, the figure it used and why; before, what was asked."""
    if e.get("maxTokensUsed") is not None:
        return reasons.evaluation_max_tokens_text(e["maxTokensUsed"], e.get("maxTokensFrom"),
                                                  e.get("longestReferenceTokens"))
    return str(e["maxTokens"]) if e.get("maxTokens") else reasons.EVALUATION_MAX_TOKENS_PENDING


def comparisons(page: Any) -> Any:
    rows = [[c.get("id"), c.get("status"), len(c.get("rows") or []), c.get("dataset"), age(c.get("createdAt")),
             c.get("model"), c.get("workload"), when(c.get("createdAt"))] for c in items_of(page)]
    return list_table([ID, "Status", "Snapshots", "Dataset", AGE, Col("Model", cut=True), WORKLOAD, CREATED], rows)


def comparison(c: dict[str, Any]) -> list[Any]:
    """The comparison's fields, then one row per snapshot with each metric; `*` marks the best."""
    head = fields_table([("ID", c.get("id")), ("Status", c.get("status")), ("Model", c.get("model")),
                         ("Dataset", c.get("dataset")), ("Detail", c.get("detail")),
                         ("Created", when(c.get("createdAt")))])
    rows = c.get("rows") or []
    metrics = [m for m in dict.fromkeys(name for row in rows for name in (row.get("metrics") or {}))
               if any((row.get("metrics") or {}).get(m) is not None for row in rows)]
    cells = []
    for row in rows:
        values = row.get("metrics") or {}
        best = set(row.get("best") or [])
        snapshot = "base model" if row.get("base") else row.get("snapshot")
        cells.append([snapshot, row.get("step")]
                     + [number(values.get(m)) + (" *" if m in best else "") for m in metrics]
                     + [row.get("status"), row.get("restore"), row.get("run")])
    # the metrics before the rest, so a narrow terminal keeps what a comparison is read for
    table = list_table([Col("Snapshot", keep=True), "Step", *metrics, "Status", "Restore", "Run"], cells)
    if not metrics:
        return [head, table]
    if not all(row.get("status") in ("SUCCEEDED", "FAILED", "CANCELLED") for row in rows):
        return [head, table, Text(reasons.COMPARISON_BEST_WHEN_ENDED)]
    return [head, table, Text("* best of the comparison (lowest loss and perplexity, highest exact match, "
                              "rewards and judge)")]


# The per-row results of an evaluation (`evaluations rows`): the scores, and the texts cut to one
# short line each (`-o json` or `--out FILE` has them whole).
ROW_TEXT_CHARS = 40


def evaluation_rows(items: list[dict[str, Any]]) -> Any:
    present = {key for row in items for key, value in row.items() if value is not None and value != {}}
    columns: list[tuple[str, Any]] = [("Row", lambda r: r.get("row"))]
    scores: list[tuple[str, Any]] = []
    for key, title in (("prompt", "Prompt"), ("completion", "Completion"), ("reference", "Reference")):
        if key in present:
            columns.append((title, lambda r, key=key: _one_line(r.get(key))))
    for key, title in (("loss", "Loss"), ("exactMatch", "Exact match"), ("judge", "Judge")):
        if key in present:
            scores.append((title, lambda r, key=key: number(r.get(key))))
    names = dict.fromkeys(name for row in items for name in (row.get("rewards") or {}))
    scores += [(f"Reward {name}", lambda r, name=name: number((r.get("rewards") or {}).get(name)))
               for name in names]
    # the scores before the texts, so a narrow terminal cuts texts (whole with -o json) and keeps scores
    columns = columns[:1] + scores + columns[1:]
    headers = [Col(title, keep=title == "Row", cut=title in ("Prompt", "Completion", "Reference"))
               for title, _ in columns]
    return list_table(headers, [[cell(row) for _, cell in columns] for row in items])


def _one_line(value: Any) -> str:
    if isinstance(value, list):  # chat messages: the last one's content says most
        value = (value[-1] or {}).get("content") if value and isinstance(value[-1], dict) else text(value)
    if value is None:
        return "-"
    line = " ".join(str(value).split())
    return line if len(line) <= ROW_TEXT_CHARS else line[:ROW_TEXT_CHARS - 1] + "…"
