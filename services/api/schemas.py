"""Response schemas, one per resource, read direction. They feed the OpenAPI document; the
request schemas are shared.plans (runs) and the upload form (datasets)."""

from __future__ import annotations

from marshmallow import Schema, fields


class ErrorBodySchema(Schema):
    code = fields.String(metadata={"description": "stable error code: invalid, unauthenticated, forbidden, not_found, conflict, too_large, refused"})
    message = fields.String(metadata={"description": "a sentence that names what was wrong"})
    details = fields.Raw(metadata={"description": "what the sentence refers to (fields, lines, ids)"})


class ErrorSchema(Schema):
    error = fields.Nested(ErrorBodySchema)


class ResourceSchema(Schema):
    id = fields.String()
    workload = fields.String()
    createdAt = fields.String()
    updatedAt = fields.String()
    detail = fields.String(allow_none=True, metadata={"description": "why it failed or was stopped"})


class DatasetSchema(ResourceSchema):
    name = fields.String()
    digest = fields.String(metadata={"description": "sha256 of the stored content"})
    bytes = fields.Integer()
    rows = fields.Integer()
    format = fields.String(metadata={"description": "chat, completion or prompt"})
    deleted = fields.Boolean(metadata={"description": "only in the answer to DELETE: true"})
    deletedAt = fields.String(metadata={"description": "only in the answer to DELETE"})


class DatasetFaultSchema(Schema):
    line = fields.Integer()
    field = fields.String()
    problem = fields.String()


class ProgressSchema(Schema):
    step = fields.Integer()
    totalSteps = fields.Integer(allow_none=True)
    loss = fields.Float(allow_none=True)
    firstLoss = fields.Float(allow_none=True)
    tokensPerSecond = fields.Float(allow_none=True)
    etaSeconds = fields.Float(allow_none=True)
    validationLoss = fields.Float(allow_none=True, metadata={"description": "the latest validation loss (validationDataset)"})
    reward = fields.Float(allow_none=True, metadata={"description": "grpo: the latest step's mean reward"})


class WaitEntrySchema(Schema):
    kind = fields.String(metadata={"description": "run, evaluation or endpoint"})
    id = fields.String(allow_none=True, metadata={"description": "the resource id; null for a workload this token may not see"})
    gpus = fields.Integer()
    model = fields.String(allow_none=True, metadata={"description": "endpoints: the base model"})
    idleSeconds = fields.Integer(allow_none=True, metadata={"description": "endpoints holding GPUs: seconds since their last request (else since ready, else since granted)"})


class WaitingOnSchema(Schema):
    heldBy = fields.List(fields.Nested(WaitEntrySchema), metadata={"description": "the claims holding GPUs of the pool"})
    queuedAhead = fields.List(fields.Nested(WaitEntrySchema), metadata={"description": "the waiting claims ahead of it, in order"})


class QuotaWaitSchema(Schema):
    workload = fields.String()
    gpus = fields.Integer(metadata={"description": "the quota: the most GPUs the workload may hold in the pool"})
    held = fields.Integer(metadata={"description": "GPUs the workload holds there now"})
    pool = fields.String()


class SchedulingSchema(Schema):
    claim = fields.String()
    pool = fields.String()
    node = fields.String(allow_none=True)
    devices = fields.List(fields.String())
    position = fields.Integer(allow_none=True, metadata={"description": "1-based place in the pool queue while QUEUED (derived at read time)"})
    reason = fields.String(allow_none=True, metadata={"description": "while QUEUED: waiting_for_gpus, queued_behind, quota, fits_now or exceeds_pool (shared/wait_reasons.py)"})
    quota = fields.Nested(QuotaWaitSchema, allow_none=True, metadata={"description": "the quota it waits on (reason quota)"})
    waitingOn = fields.Nested(WaitingOnSchema, metadata={"description": "while QUEUED: what holds the pool and what is queued ahead"})
    waitingText = fields.String(metadata={"description": "the same as one line (SPEC 5)"})


class RunSchema(ResourceSchema):
    status = fields.String(metadata={"description": "QUEUED, STARTING, RUNNING, PAUSED, SUCCEEDED, FAILED, CANCELLED"})
    name = fields.String(allow_none=True)
    plan = fields.Dict(metadata={"description": "the plan with every default filled in"})
    engine = fields.String(metadata={"description": "the engine the resolver chose (SPEC 3.1)"})
    pool = fields.String()
    gpus = fields.Integer()
    progress = fields.Nested(ProgressSchema)
    scheduling = fields.Nested(SchedulingSchema)
    snapshots = fields.List(fields.String())
    latestSnapshot = fields.String(allow_none=True)
    cancelRequested = fields.Boolean()
    startedAt = fields.String(allow_none=True)
    finishedAt = fields.String(allow_none=True)


class SnapshotSchema(ResourceSchema):
    run = fields.String()
    step = fields.Integer()
    layout = fields.Integer()
    gpus = fields.Integer(metadata={"description": "GPU count the training state was saved across"})
    method = fields.String()
    engine = fields.String()
    precision = fields.String()
    model = fields.String()
    contents = fields.Dict(metadata={"description": "{weights: {format}, trainingState: {format} | null}"})
    final = fields.Boolean()


class EventSchema(Schema):
    time = fields.String()
    level = fields.String(metadata={"description": "info, warn or error"})
    message = fields.String()


class MetricPointSchema(Schema):
    step = fields.Integer()
    loss = fields.Float(allow_none=True)
    learningRate = fields.Float(allow_none=True)
    gradNorm = fields.Float(allow_none=True)
    tokensPerSecond = fields.Float(allow_none=True)
    epoch = fields.Float(allow_none=True)
    validationLoss = fields.Float(allow_none=True, metadata={"description": "a validation pass: mean token loss over validationDataset"})
    validationPerplexity = fields.Float(allow_none=True)
    # grpo (docs/grpo.md): rewards, KL and where the step's time went
    reward = fields.Float(allow_none=True, metadata={"description": "grpo: mean weighted reward of the step's completions"})
    rewardStd = fields.Float(allow_none=True)
    rewards = fields.Dict(allow_none=True, metadata={"description": "grpo: reward key (function name or judge:ENDPOINT) -> {mean, std}"})
    kl = fields.Float(allow_none=True, metadata={"description": "grpo: KL to the reference policy (null when klPenalty is 0)"})
    completionLength = fields.Float(allow_none=True, metadata={"description": "grpo: mean completion length in tokens"})
    generationSeconds = fields.Float(allow_none=True, metadata={"description": "grpo: rollout generation in the serving process"})
    handoffSeconds = fields.Float(allow_none=True, metadata={"description": "grpo: handing the serving process the adapter"})
    handoffBytes = fields.Integer(allow_none=True, metadata={"description": "grpo: bytes of adapter handed over"})
    rewardSeconds = fields.Float(allow_none=True, metadata={"description": "grpo: scoring (reward functions and judges)"})
    updateSeconds = fields.Float(allow_none=True, metadata={"description": "grpo: log-probs, backward and optimizer step"})
    stepSeconds = fields.Float(allow_none=True)
    time = fields.String()


class StartableRunSchema(Schema):
    method = fields.String()
    gpus = fields.Integer()
    precision = fields.String()
    klPenalty = fields.Boolean()
    restore = fields.String(metadata={"description": "none, weights or trainingState"})
    engine = fields.String()
    pools = fields.List(fields.String(), metadata={"description": "the pools whose nodes would take it"})
    memoryGiB = fields.Float(allow_none=True, metadata={
        "description": "estimated memory per GPU at the defaults of startableRunsAssume (null: model size unknown)"})


class BaseModelSchema(Schema):
    id = fields.String()
    source = fields.String()
    modality = fields.String()
    parameters = fields.Integer(allow_none=True)
    precisions = fields.List(fields.String())
    gpuCounts = fields.List(fields.Integer())
    generationConfig = fields.Dict()
    loraTargetModules = fields.List(fields.String())
    startableRuns = fields.List(fields.Nested(StartableRunSchema))
    startableRunsAssume = fields.Dict(metadata={
        "description": "the adapter and hyperparameters startableRuns assumes: {adapter: {rank, targetModules}, "
                       "hyperparameters: {batchSize, gradientAccumulation, maxSeqLength}}; more memory than "
                       "that may be refused"})


class NodeSchema(Schema):
    name = fields.String()
    deviceKind = fields.String()
    gpus = fields.Integer()
    freeGpus = fields.Integer()


class PoolSummarySchema(Schema):
    name = fields.String()
    gpus = fields.Integer()
    freeGpus = fields.Integer()
    nodes = fields.List(fields.Nested(NodeSchema))


class InfoSchema(Schema):
    version = fields.String()
    apiUrl = fields.String()
    pools = fields.List(fields.Nested(PoolSummarySchema))
    methods = fields.List(fields.String())
    catalogSize = fields.Integer()


class PoolNodeSchema(NodeSchema):
    heldGpus = fields.Integer()
    devices = fields.List(fields.String())
    freeDevices = fields.List(fields.String())


class PoolQuotaSchema(Schema):
    workload = fields.String()
    gpus = fields.Integer(metadata={"description": "the most GPUs its claims may hold at once"})
    held = fields.Integer(metadata={"description": "GPUs its claims hold now"})


class HolderSchema(WaitEntrySchema):
    workload = fields.String(allow_none=True, metadata={"description": "null for a workload this token may not see"})
    node = fields.String()
    devices = fields.List(fields.String())


class QueueEntrySchema(WaitEntrySchema):
    position = fields.Integer(metadata={"description": "1-based place in the pool queue"})
    workload = fields.String(allow_none=True)
    reason = fields.String(metadata={"description": "why it waits (shared/wait_reasons.py)"})
    quota = fields.Nested(QuotaWaitSchema, allow_none=True)


class PoolSchema(Schema):
    name = fields.String()
    gpus = fields.Integer()
    freeGpus = fields.Integer()
    heldGpus = fields.Integer()
    waiting = fields.Integer(metadata={"description": "claims waiting in its queue"})
    nodes = fields.List(fields.Nested(PoolNodeSchema))
    quotas = fields.List(fields.Nested(PoolQuotaSchema))
    holders = fields.List(fields.Nested(HolderSchema), metadata={"description": "GET /v1/pools/NAME only"})
    queue = fields.List(fields.Nested(QueueEntrySchema), metadata={"description": "GET /v1/pools/NAME only: waiting claims in order"})


def page_schema(item: type[Schema]) -> type[Schema]:
    return Schema.from_dict(
        {"items": fields.List(fields.Nested(item)), "nextCursor": fields.String(allow_none=True)},
        name=f"{item.__name__.removesuffix('Schema')}PageSchema",
    )


class EndpointSchema(ResourceSchema):
    name = fields.String(allow_none=True)
    phase = fields.String(metadata={"description": "QUEUED, STARTING, READY, TERMINATED, FAILED"})
    model = fields.String()
    snapshot = fields.String(allow_none=True, metadata={"description": "the snapshot whose adapter it serves"})
    gpus = fields.Integer()
    pool = fields.String()
    address = fields.String(allow_none=True, metadata={"description": "its serving process, only while READY"})
    idleTimeout = fields.Integer(metadata={"description": "seconds without a request before it stops; 0 = never"})
    startTimeout = fields.Integer()
    lastRequestAt = fields.String(allow_none=True, metadata={"description": "last request proxied through the trainer"})
    readyAt = fields.String(allow_none=True, metadata={"description": "when the trainer first saw it answering"})
    stopsAt = fields.String(allow_none=True, metadata={"description": "while READY: when it stops unless a request comes"})
    scheduling = fields.Dict()
    stopRequested = fields.Boolean()


class EvaluationMetricsSchema(Schema):
    rows = fields.Integer(metadata={"description": "rows scored"})
    loss = fields.Float(allow_none=True, metadata={"description": "mean negative log-likelihood per target token"})
    perplexity = fields.Float(allow_none=True, metadata={"description": "exp(loss)"})
    targetTokens = fields.Integer(metadata={"description": "target tokens the loss is averaged over"})
    exactMatch = fields.Float(allow_none=True, metadata={"description": "share of rows whose greedy completion equals "
                                                                        "the reference (answer, completion or last "
                                                                        "assistant message), stripped"})
    rewards = fields.Dict(metadata={"description": "reward function -> mean score (rows that carry answers)"})
    judge = fields.Float(allow_none=True, metadata={"description": "mean judge score (0..1: its answer out of 10) "
                                                                   "over the rows it scored"})
    judgeUnparsable = fields.Integer(metadata={"description": "rows whose judge answer held no score"})


class EvaluationSchema(ResourceSchema):
    status = fields.String(metadata={"description": "QUEUED, STARTING, RUNNING, SUCCEEDED, FAILED, CANCELLED"})
    model = fields.String()
    snapshot = fields.String(allow_none=True, metadata={"description": "the snapshot whose adapter it scores"})
    run = fields.String(allow_none=True, metadata={"description": "the run that wrote the snapshot"})
    step = fields.Integer(allow_none=True)
    dataset = fields.String()
    gpus = fields.Integer()
    pool = fields.String()
    judge = fields.String(allow_none=True)
    comparison = fields.String(allow_none=True, metadata={"description": "the comparison it belongs to"})
    progress = fields.Dict(metadata={"description": "{rows, totalRows}"})
    metrics = fields.Nested(EvaluationMetricsSchema, allow_none=True)
    results = fields.Dict(allow_none=True, metadata={"description": "{path, rows}: per-row results "
                                                                    "(GET /v1/evaluations/ID/rows)"})
    scheduling = fields.Nested(SchedulingSchema)
    cancelRequested = fields.Boolean()
    startedAt = fields.String(allow_none=True)
    finishedAt = fields.String(allow_none=True)


class ComparisonRowSchema(Schema):
    snapshot = fields.String()
    run = fields.String(allow_none=True)
    step = fields.Integer(allow_none=True)
    restore = fields.String(metadata={"description": "how its run started: none, weights or trainingState"})
    evaluation = fields.String(allow_none=True)
    status = fields.String(allow_none=True)
    metrics = fields.Dict(metadata={"description": "loss, perplexity, exactMatch, reward:NAME, judge"})
    best = fields.List(fields.String(), metadata={"description": "the metrics this snapshot is best at"})


class ComparisonSchema(ResourceSchema):
    status = fields.String(metadata={"description": "derived from its evaluations: QUEUED, RUNNING, SUCCEEDED, "
                                                    "FAILED, CANCELLED"})
    model = fields.String()
    dataset = fields.String()
    pool = fields.String()
    evaluations = fields.List(fields.String())
    rows = fields.List(fields.Nested(ComparisonRowSchema), metadata={"description": "one per snapshot"})
    best = fields.Dict(metadata={"description": "metric -> the snapshots best at it (lowest loss and perplexity, "
                                                "highest exact match, rewards and judge)"})
