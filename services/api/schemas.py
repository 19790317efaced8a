"""Response schemas, one per resource, read direction. Every answer of the API is dumped through
one of them (`serialise`), so an answer carries exactly the fields its schema declares: those the
OpenAPI document describes. Stored fields a schema leaves out on purpose are listed, with why, in
INTERNAL_FIELDS. The request schemas are shared.plans (runs), shared.schemas.endpoints,
shared.schemas.evaluations and the upload form (datasets)."""

from __future__ import annotations

from functools import cache
from typing import Any

from marshmallow import Schema, fields, validate


class ErrorBodySchema(Schema):
    code = fields.String(metadata={"description": "stable error code: invalid, unauthenticated, forbidden, not_found, "
                                                  "conflict, too_large, refused; bad_gateway, internal, unavailable, "
                                                  "insufficient_storage"})
    message = fields.String(metadata={"description": "a sentence that names what was wrong"})
    details = fields.Raw(metadata={"description": "what the sentence refers to (fields, lines, ids)"})


class ErrorSchema(Schema):
    error = fields.Nested(ErrorBodySchema)


class HealthSchema(Schema):
    status = fields.String(metadata={"description": "ok"})
    version = fields.String()


class ResourceSchema(Schema):
    id = fields.String()
    workload = fields.String()
    createdAt = fields.String()
    updatedAt = fields.String()
    detail = fields.String(allow_none=True, metadata={"description": "why it failed or was stopped"})


class DatasetSchema(ResourceSchema):
    name = fields.String()
    tags = fields.List(fields.String(), metadata={"description": "free-form tags to find it by (?tag=)"})
    digest = fields.String(metadata={"description": "sha256 of the stored content"})
    bytes = fields.Integer()
    rows = fields.Integer()
    format = fields.String(metadata={"description": "chat, completion or prompt"})
    convertedFrom = fields.String(allow_none=True, metadata={
        "description": "alpaca or sharegpt when the rows were uploaded in that format: read as chat rows "
                       "(docs/datasets.md); null for the trainer's own formats"})
    modality = fields.String(metadata={"description": "image-text when its rows hold images, else text; "
                                                      "runs train it only on a model of the same modality"})
    deleted = fields.Boolean(metadata={"description": "only in the answer to DELETE: true"})
    deletedAt = fields.String(metadata={"description": "only in the answer to DELETE"})


class DatasetRowsSchema(Schema):
    """GET /v1/datasets/ID/rows: its first rows, as stored (images inline as data: URLs)."""
    dataset = fields.String()
    rows = fields.List(fields.Dict(), metadata={"description": "the first rows, in file order"})
    totalRows = fields.Integer(metadata={"description": "how many rows it holds"})


class PlanDefaultsSchema(Schema):
    """GET /v1/plans/defaults: the value each plan field gets when a request leaves it out."""
    defaults = fields.Dict(keys=fields.String(), values=fields.Raw(allow_none=True), metadata={
        "description": "dotted field path (`hyperparameters.learningRate`) -> its default"})


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


class NotAnsweringSchema(Schema):
    node = fields.String()
    freeGpus = fields.Integer(metadata={"description": "devices of the node nothing holds"})
    service = fields.String(metadata={"description": "the service that would start it there and does not answer: "
                                                     "worker (runs, evaluations) or endpoint manager (endpoints)"})


class WaitingOnSchema(Schema):
    heldBy = fields.List(fields.Nested(WaitEntrySchema), metadata={"description": "the claims holding GPUs of the pool"})
    queuedAhead = fields.List(fields.Nested(WaitEntrySchema), metadata={"description": "the waiting claims ahead of it, in order"})
    notAnswering = fields.List(fields.Nested(NotAnsweringSchema), metadata={
        "description": "reasons waiting_for_gpus and no_live_worker: the nodes big enough for it whose service for its "
                       "kind does not answer (nothing is granted there)"})


class QuotaWaitSchema(Schema):
    workload = fields.String()
    gpus = fields.Integer(metadata={"description": "the quota: the most GPUs the workload may hold in the pool"})
    held = fields.Integer(metadata={"description": "GPUs the workload holds there now"})
    pool = fields.String()


class SchedulingSchema(Schema):
    claim = fields.String(allow_none=True,
                          metadata={"description": "its claim on the pool's GPUs (null only before it is queued)"})
    pool = fields.String()
    node = fields.String(allow_none=True)
    devices = fields.List(fields.String())
    position = fields.Integer(allow_none=True, metadata={"description": "1-based place in the pool queue while QUEUED (derived at read time)"})
    reason = fields.String(allow_none=True, metadata={
        "description": "while QUEUED: waiting_for_gpus, queued_behind, quota, fits_now, exceeds_pool or "
                       "no_live_worker (no node big enough has the service that would start it alive; "
                       "shared/claims/wait_reasons.py)"})
    quota = fields.Nested(QuotaWaitSchema, allow_none=True, metadata={"description": "the quota it waits on (reason quota)"})
    waitingOn = fields.Nested(WaitingOnSchema, metadata={"description": "while QUEUED: what holds the pool and what is queued ahead"})
    waitingText = fields.String(metadata={"description": "the same as one line (SPEC 5)"})


class RunParentSchema(Schema):
    snapshot = fields.String(metadata={"description": "the snapshot the run branches from"})
    run = fields.String(allow_none=True, metadata={"description": "the run that wrote it (null for an imported one)"})
    restore = fields.String(metadata={"description": "what it restores: weights or trainingState"})


class StepRangeSchema(Schema):
    startStep = fields.Integer(metadata={"description": "the step it starts from: 0, or for a trainingState branch "
                                                        "its snapshot's step (it continues that step count)"})
    endStep = fields.Integer(metadata={"description": "the step it ends at: hyperparameters.maxSteps, else what its "
                                                      "epochs make"})
    newSteps = fields.Integer(metadata={"description": "the steps it trains: endStep - startStep (never 0: such a "
                                                       "plan is refused)"})
    estimated = fields.Boolean(metadata={"description": "true for a plan by epochs: endStep is epochs x rows / "
                                                        "batchSize, and the engine counts the rows it trains on"})


class RankMemorySchema(Schema):
    rank = fields.Integer()
    peakGiB = fields.Float(metadata={"description": "the rank's trainer and its rollout server together"})
    trainerGiB = fields.Float(metadata={"description": "the training process's peak"})
    rolloutServerGiB = fields.Float(allow_none=True, metadata={
        "description": "grpo on a CPU slot: its rollout server's peak resident set (null: none, or vLLM on CUDA, "
                       "not measured)"})


class RunMemorySchema(Schema):
    estimateGiB = fields.Float(allow_none=True, metadata={
        "description": "what each device is estimated to need (shared/planning/resolver.py training_memory_gib, from the "
                       "loaded model's shape, margin included); null until the worker has loaded the model"})
    peakGiB = fields.Float(allow_none=True, metadata={
        "description": "the largest measured peak of its ranks; null until training ends"})
    activationCheckpointing = fields.Boolean(allow_none=True, metadata={
        "description": "whether it trains with activation checkpointing (what the estimate assumes)"})
    measuredAs = fields.String(allow_none=True, metadata={
        "description": "how the peak is measured: peak resident set (CPU) or torch.cuda.max_memory_allocated"})
    ranks = fields.List(fields.Nested(RankMemorySchema), metadata={"description": "each rank's measured peak"})


class RunSchema(ResourceSchema):
    status = fields.String(metadata={"description": "QUEUED, STARTING, RUNNING, PAUSED, SUCCEEDED, FAILED, CANCELLED"})
    name = fields.String(allow_none=True, metadata={"description": "a name for people (?name= finds it)"})
    tags = fields.List(fields.String(), metadata={"description": "free-form tags to find it by (?tag=)"})
    plan = fields.Dict(metadata={
        "description": "the plan (the body of POST /v1/runs, schema Plan) with every default filled in"})
    engine = fields.String(metadata={"description": "the engine the resolver chose (SPEC 3.1)"})
    pool = fields.String()
    gpus = fields.Integer()
    datasetDigest = fields.String(metadata={"description": "sha256 of the rows it trains on (its dataset's digest)"})
    validationDatasetDigest = fields.String(allow_none=True, metadata={
        "description": "sha256 of the rows it validates on (null without a validationDataset)"})
    progress = fields.Nested(ProgressSchema)
    memory = fields.Nested(RunMemorySchema, metadata={
        "description": "memory per device: the estimate beside the measured peak (a peak above it is a warn event)"})
    scheduling = fields.Nested(SchedulingSchema)
    snapshots = fields.List(fields.String())
    latestSnapshot = fields.String(allow_none=True)
    parent = fields.Nested(RunParentSchema, allow_none=True,
                           metadata={"description": "a branch: where it starts from; null for a fresh run"})
    stepRange = fields.Nested(StepRangeSchema, allow_none=True, metadata={
        "description": "how long it trains, on its own step count (docs/api.md); null for runs stored before it"})
    cancelRequested = fields.Boolean()
    pauseRequested = fields.Boolean(metadata={"description": "a pause was asked and the worker has not paused it yet"})
    attempts = fields.Integer(metadata={
        "description": "how often it went back to the queue because its worker was lost"})
    startedAt = fields.String(allow_none=True)
    finishedAt = fields.String(allow_none=True)


class SnapshotPartSchema(Schema):
    format = fields.String(metadata={"description": "e.g. peft-safetensors (weights), hf-trainer (trainingState)"})
    path = fields.String(metadata={"description": "where the part lies inside the snapshot directory"})
    file = fields.String(metadata={"description": "layout 1: the adapter's file"})


class SnapshotContentsSchema(Schema):
    weights = fields.Nested(SnapshotPartSchema, allow_none=True)
    trainingState = fields.Nested(SnapshotPartSchema, allow_none=True, metadata={"description": "null: weights only"})


class SnapshotReadableSchema(Schema):
    weights = fields.Boolean(metadata={"description": "this deployment loads its weights"})
    trainingState = fields.Boolean(metadata={"description": "this deployment resumes from its training state"})


class SnapshotFileSchema(Schema):
    bytes = fields.Integer()
    sha256 = fields.String()


class SnapshotDamageSchema(Schema):
    file = fields.String(metadata={"description": "relative to the snapshot's directory"})
    problem = fields.String(metadata={"description": "is missing, has N bytes where M were recorded, is empty"})


class SnapshotDamagedSchema(Schema):
    weights = fields.Nested(SnapshotDamageSchema, allow_none=True)
    trainingState = fields.Nested(SnapshotDamageSchema, allow_none=True)


class SnapshotSchema(ResourceSchema):
    run = fields.String(allow_none=True, metadata={"description": "the run that wrote it; null for an imported one"})
    step = fields.Integer()
    layout = fields.Integer()
    gpus = fields.Integer(metadata={"description": "GPU count the training state was saved across"})
    method = fields.String()
    engine = fields.String(allow_none=True)
    precision = fields.String()
    model = fields.String(allow_none=True)
    contents = fields.Nested(SnapshotContentsSchema)
    final = fields.Boolean()
    path = fields.String(metadata={"description": "its directory under the artifact root"})
    readable = fields.Nested(SnapshotReadableSchema, metadata={
        "description": "which parts this deployment reads: derived from its layout and formats, and false for a "
                       "part whose files are not as recorded (see damaged)"})
    files = fields.Dict(keys=fields.String(), values=fields.Nested(SnapshotFileSchema), allow_none=True, metadata={
        "description": "each file of its directory (relative path) with its size and sha256, as written (null: "
                       "a snapshot registered before files were recorded)"})
    damaged = fields.Nested(SnapshotDamagedSchema, metadata={
        "description": "per part, the first file that is missing or of another size than recorded (null: intact); "
                       "sha256 is checked too before work is queued on it and before a download"})
    imported = fields.Boolean(metadata={"description": "registered by POST /v1/snapshots/import"})
    source = fields.String(metadata={
        "description": "imported: where from (upload:FILE, or the directory on the API's machine)"})
    sourceRun = fields.String(allow_none=True, metadata={
        "description": "imported: the run its manifest names (of another deployment)"})


class EventSchema(Schema):
    time = fields.String()
    level = fields.String(metadata={"description": "info, warn or error"})
    message = fields.String()


class RewardStatSchema(Schema):
    mean = fields.Float(allow_none=True)
    std = fields.Float(allow_none=True)


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
    rewards = fields.Dict(keys=fields.String(), values=fields.Nested(RewardStatSchema), allow_none=True,
                          metadata={"description": "grpo: reward key (function name or judge:ENDPOINT) -> {mean, std}"})
    kl = fields.Float(allow_none=True, metadata={"description": "grpo: KL to the reference policy (null when klPenalty is 0)"})
    completionLength = fields.Float(allow_none=True, metadata={"description": "grpo: mean completion length in tokens"})
    generationSeconds = fields.Float(allow_none=True, metadata={"description": "grpo: rollout generation in the serving process"})
    handoffSeconds = fields.Float(allow_none=True, metadata={"description": "grpo: handing the serving process the adapter"})
    handoffBytes = fields.Integer(allow_none=True, metadata={"description": "grpo: bytes of adapter handed over"})
    rewardSeconds = fields.Float(allow_none=True, metadata={"description": "grpo: scoring (reward functions and judges)"})
    updateSeconds = fields.Float(allow_none=True, metadata={"description": "grpo: log-probs, backward and optimizer step"})
    stepSeconds = fields.Float(allow_none=True)
    equalRewardGroupShare = fields.Float(allow_none=True, metadata={
        "description": "grpo: share of the step's groups whose completions all got the same reward (advantages "
                       "0: they teach nothing); 1 means the step learned nothing, and a warn event says so"})
    attempt = fields.Integer(metadata={
        "description": "how often the run had been re-queued after a lost worker when the point was logged "
                       "(steps after its last snapshot train again, and are logged once)"})
    time = fields.String()


class SampleCompletionSchema(Schema):
    text = fields.String(metadata={"description": "the completion, cut to the stored bound"})
    truncated = fields.Boolean(metadata={"description": "the text was cut"})
    scores = fields.Dict(keys=fields.String(), values=fields.Float(allow_none=True),
                         metadata={"description": "reward key -> its score (null: the reward gave none)"})
    reward = fields.Float(allow_none=True, metadata={"description": "the weighted total of the scores"})
    advantage = fields.Float(allow_none=True, metadata={"description": "the advantage the update used"})


class SampleGroupSchema(Schema):
    prompt = fields.String(metadata={"description": "the prompt as text (a conversation: one role: content line "
                                                    "per message), cut to the stored bound"})
    promptTruncated = fields.Boolean()
    completions = fields.List(fields.Nested(SampleCompletionSchema))


class SampleStepSchema(Schema):
    step = fields.Integer()
    groups = fields.List(fields.Nested(SampleGroupSchema),
                         metadata={"description": "the first prompt groups of the step, each with its first completions"})
    groupsInStep = fields.Integer(metadata={"description": "prompt groups the step sampled"})
    completionsInStep = fields.Integer(metadata={"description": "completions the step sampled"})
    attempt = fields.Integer(metadata={"description": "as in a metrics point"})
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


class AssumedAdapterSchema(Schema):
    rank = fields.Integer()
    targetModules = fields.Raw(metadata={"description": "\"all-linear\" or a list of module names"})


class AssumedHyperparametersSchema(Schema):
    batchSize = fields.Integer()
    gradientAccumulation = fields.Integer()
    maxSeqLength = fields.Integer()


class StartableAssumptionsSchema(Schema):
    adapter = fields.Nested(AssumedAdapterSchema)
    hyperparameters = fields.Nested(AssumedHyperparametersSchema)


class GenerationDefaultsSchema(Schema):
    temperature = fields.Float(metadata={"description": "0: greedy (a model whose config does not sample)"})
    topP = fields.Float()
    topK = fields.Integer(metadata={"description": "0: no top-k filter"})
    repetitionPenalty = fields.Float()
    maxTokens = fields.Integer(metadata={"description": "the most tokens of an answer whose request names no "
                                         "max_tokens, cut to the rest of the context after its prompt"})
    maxTokensFrom = fields.String(metadata={"description": "model (its max_new_tokens) or deployment (the "
                                            "deployment's limit: the model does not say)"})
    maxContext = fields.Integer(allow_none=True, metadata={
        "description": "the longest prompt and answer together; null where the API cannot read the model's config"})


class BaseModelSchema(Schema):
    id = fields.String()
    source = fields.String(metadata={"description": "builtin:NAME, path:DIR, hub-cache or imported"})
    modality = fields.String()
    parameters = fields.Integer(allow_none=True)
    precisions = fields.List(fields.String())
    gpuCounts = fields.List(fields.Integer())
    generationConfig = fields.Dict(metadata={"description": "the model's generation config: its own "
                                              "generation_config.json where the API can read it, the catalog entry's "
                                              "generationConfig over it"})
    generationDefaults = fields.Nested(GenerationDefaultsSchema, metadata={
        "description": "what a request that names no sampling settings gets from this model"})
    loraTargetModules = fields.List(fields.String())
    architecture = fields.String(allow_none=True, metadata={"description": "config.json's architecture"})
    modelType = fields.String(allow_none=True, metadata={"description": "config.json's model_type (qwen3, llama, ...)"})
    hiddenSize = fields.Integer(allow_none=True)
    layers = fields.Integer(allow_none=True)
    heads = fields.Integer(allow_none=True)
    kvHeads = fields.Integer(allow_none=True)
    intermediateSize = fields.Integer(allow_none=True)
    vocabSize = fields.Integer(allow_none=True)
    maxPositions = fields.Integer(allow_none=True)
    tiedEmbeddings = fields.Boolean(allow_none=True, metadata={"description": "the output layer is the embeddings"})
    chatTemplate = fields.String(allow_none=True, metadata={
        "description": "the model's chat template (null: none; chat rows are refused)"})
    factsFrom = fields.String(metadata={
        "description": "where its facts come from: files (its own), spec (a built-in's) or catalog entry (files "
                       "this API cannot read: a path local to the GPU nodes)"})
    imported = fields.Dict(metadata={"description": "an imported model's provenance: source, format (gguf or "
                                                    "huggingface), file, sha256, bytes, quantization, seconds"})
    startableRuns = fields.List(fields.Nested(StartableRunSchema),
                                metadata={"description": "GET /v1/base-models/ID only"})
    startableRunsAssume = fields.Nested(StartableAssumptionsSchema, metadata={
        "description": "GET /v1/base-models/ID only: the adapter and hyperparameters startableRuns assumes; "
                       "more memory than that may be refused"})


class BaseModelImportSchema(Schema):
    path = fields.String(required=True, validate=validate.Length(min=1, max=4096), metadata={
        "description": "a Hugging Face model directory or a .gguf file on the API's machine, by its absolute path, "
                       "under one of the deployment's modelImportRoots"})
    id = fields.String(validate=validate.Length(min=1, max=96), metadata={
        "description": "the model's catalog id (default: the file's or directory's name)"})


class NodeSchema(Schema):
    name = fields.String()
    deviceKind = fields.String()
    gpus = fields.Integer()
    freeGpus = fields.Integer()
    workerAlive = fields.Boolean(metadata={
        "description": "its trainer worker's heartbeat is fresh (no run or evaluation is granted on a node without one)"})
    workerReady = fields.Boolean(metadata={
        "description": "its trainer worker takes tasks (training stack imported): preferred among nodes that fit"})
    endpointManagerAlive = fields.Boolean(metadata={
        "description": "an endpoint manager holds the node's lease (no endpoint is granted on a node without one)"})


class PoolSummarySchema(Schema):
    name = fields.String()
    gpus = fields.Integer()
    freeGpus = fields.Integer()
    nodes = fields.List(fields.Nested(NodeSchema))
    quotas = fields.Dict(keys=fields.String(), values=fields.Integer(),
                         metadata={"description": "workload -> the most GPUs its claims may hold in the pool"})


class InfoSchema(Schema):
    version = fields.String()
    apiUrl = fields.String(allow_none=True, metadata={
        "description": "the address clients reach the API at (the deployment config's publicUrl); null when "
                       "not configured"})
    pools = fields.List(fields.Nested(PoolSummarySchema))
    defaultPool = fields.String(metadata={"description": "the pool work queues in when it names none"})
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
    node = fields.String(allow_none=True)
    devices = fields.List(fields.String())


class QueueEntrySchema(WaitEntrySchema):
    position = fields.Integer(metadata={"description": "1-based place in the pool queue"})
    workload = fields.String(allow_none=True)
    reason = fields.String(metadata={"description": "why it waits (shared/claims/wait_reasons.py)"})
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


@cache
def page_schema(item: type[Schema]) -> type[Schema]:
    """`{items, nextCursor}` of `item`s; one class per item schema, so the document names it once."""
    return Schema.from_dict(
        {"items": fields.List(fields.Nested(item)),
         "nextCursor": fields.String(allow_none=True,
                                     metadata={"description": "?after= for the next page; null: the last page"})},
        name=f"{item.__name__.removesuffix('Schema')}PageSchema",
    )


@cache
def log_page_schema(item: type[Schema]) -> type[Schema]:
    """`{items, next}` of an append-only log (events, metrics) read from ?after=N."""
    return Schema.from_dict(
        {"items": fields.List(fields.Nested(item)),
         "next": fields.Integer(metadata={"description": "the index to ask for next time (?after=)"})},
        name=f"{item.__name__.removesuffix('Schema')}LogPageSchema",
    )


class EndpointProcessSchema(Schema):
    pid = fields.Integer(metadata={"description": "on its node; its own process group"})
    port = fields.Integer()
    backend = fields.String(metadata={"description": "the serving backend that runs it"})
    startedAt = fields.String()
    log = fields.String(metadata={"description": "its log under the artifact root (GET /v1/endpoints/ID/logs)"})


class EndpointSchema(ResourceSchema):
    name = fields.String(allow_none=True)
    tags = fields.List(fields.String(), metadata={"description": "free-form tags to find it by (?tag=)"})
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
    startingSince = fields.String(allow_none=True, metadata={
        "description": "when it last began to start (its startTimeout runs from it)"})
    stopsAt = fields.String(allow_none=True, metadata={"description": "while READY: when it stops unless a request comes"})
    stoppedAt = fields.String(allow_none=True, metadata={"description": "once TERMINATED or FAILED: when it ended"})
    process = fields.Nested(EndpointProcessSchema, allow_none=True,
                            metadata={"description": "its serving process, once one was started"})
    scheduling = fields.Nested(SchedulingSchema)
    stopRequested = fields.Boolean()


class EvaluationMetricsSchema(Schema):
    rows = fields.Integer(metadata={"description": "rows scored"})
    loss = fields.Float(allow_none=True, metadata={"description": "mean negative log-likelihood per target token"})
    perplexity = fields.Float(allow_none=True, metadata={"description": "exp(loss)"})
    targetTokens = fields.Integer(metadata={"description": "target tokens the loss is averaged over"})
    exactMatch = fields.Float(allow_none=True, metadata={"description": "share of rows whose greedy completion equals "
                                                                        "the reference (answer, completion or last "
                                                                        "assistant message), stripped"})
    rewards = fields.Dict(keys=fields.String(), values=fields.Float(allow_none=True),
                          metadata={"description": "reward function -> mean score (rows that carry answers)"})
    judge = fields.Float(allow_none=True, metadata={"description": "mean judge score (0..1: its answer out of 10) "
                                                                   "over the rows it scored"})
    judgeUnparsable = fields.Integer(metadata={"description": "rows whose judge answer held no score"})


class EvaluationProgressSchema(Schema):
    rows = fields.Integer(metadata={"description": "rows scored so far"})
    totalRows = fields.Integer(allow_none=True)


class EvaluationResultsSchema(Schema):
    path = fields.String(metadata={"description": "the per-row JSONL under the artifact root"})
    rows = fields.Integer()


class EvaluationSchema(ResourceSchema):
    status = fields.String(metadata={"description": "QUEUED, STARTING, RUNNING, SUCCEEDED, FAILED, CANCELLED"})
    model = fields.String()
    snapshot = fields.String(allow_none=True, metadata={"description": "the snapshot whose adapter it scores"})
    run = fields.String(allow_none=True, metadata={"description": "the run that wrote the snapshot"})
    step = fields.Integer(allow_none=True)
    dataset = fields.String()
    datasetDigest = fields.String(metadata={"description": "sha256 of the rows it scores (its dataset's digest)"})
    gpus = fields.Integer()
    pool = fields.String()
    judge = fields.String(allow_none=True)
    rewards = fields.List(fields.Dict(), allow_none=True, metadata={
        "description": "the reward functions asked for, `{function, weight, ...parameters}` (null: the default)"})
    maxTokens = fields.Integer(allow_none=True, metadata={"description": "most tokens of each greedy completion, as "
                                                                         "asked (null: what its rows need)"})
    maxTokensUsed = fields.Integer(allow_none=True, metadata={
        "description": "most tokens of each greedy completion it scored with (each also cut to the context left "
                       "after its prompt); null until it starts scoring"})
    maxTokensFrom = fields.String(allow_none=True, metadata={
        "description": "request (its maxTokens), references (the longest reference plus a margin of 16 tokens or "
                       "a quarter of it), model (its max_new_tokens: no row has a reference) or deployment (the "
                       "deployment's limit, 1024: neither says)"})
    longestReferenceTokens = fields.Integer(allow_none=True, metadata={
        "description": "tokens of its longest reference, when they decided maxTokensUsed"})
    comparison = fields.String(allow_none=True, metadata={"description": "the comparison it belongs to"})
    progress = fields.Nested(EvaluationProgressSchema)
    metrics = fields.Nested(EvaluationMetricsSchema, allow_none=True)
    results = fields.Nested(EvaluationResultsSchema, allow_none=True, metadata={
        "description": "per-row results (GET /v1/evaluations/ID/rows), once SUCCEEDED"})
    scheduling = fields.Nested(SchedulingSchema)
    cancelRequested = fields.Boolean()
    attempts = fields.Integer(metadata={
        "description": "how often it went back to the queue because its worker was lost"})
    startedAt = fields.String(allow_none=True)
    finishedAt = fields.String(allow_none=True)


class ComparisonRowSchema(Schema):
    snapshot = fields.String(allow_none=True, metadata={"description": "null on the base model's row"})
    base = fields.Boolean(metadata={"description": "true on the row of the base model without an adapter "
                                                   "(asked with `base: true`)"})
    run = fields.String(allow_none=True)
    step = fields.Integer(allow_none=True)
    restore = fields.String(allow_none=True, metadata={"description": "how its run started: none, weights or "
                                                                      "trainingState (null on the base row)"})
    evaluation = fields.String(allow_none=True)
    status = fields.String(allow_none=True)
    metrics = fields.Dict(keys=fields.String(), values=fields.Float(allow_none=True),
                          metadata={"description": "loss, perplexity, exactMatch, reward:NAME, judge"})
    best = fields.List(fields.String(), metadata={"description": "the metrics this row is best at (none until "
                                                                  "every row has ended)"})


class ComparisonSchema(ResourceSchema):
    status = fields.String(metadata={"description": "derived from its evaluations: QUEUED, RUNNING, SUCCEEDED, "
                                                    "FAILED, CANCELLED"})
    model = fields.String()
    dataset = fields.String()
    pool = fields.String()
    evaluations = fields.List(fields.String())
    rows = fields.List(fields.Nested(ComparisonRowSchema), metadata={"description": "one per snapshot"})
    best = fields.Dict(keys=fields.String(), values=fields.List(fields.String()),
                       metadata={"description": "metric -> the rows best at it, by snapshot id (`base` for the "
                                                "base model's row): lowest loss and perplexity, highest exact "
                                                "match, rewards and judge; empty until every row has ended"})


class EndpointLogSchema(Schema):
    endpoint = fields.String()
    phase = fields.String()
    log = fields.String(metadata={"description": "the log file under the artifact root"})
    lines = fields.List(fields.String(), metadata={"description": "its last lines, oldest first"})


class ModelSchema(Schema):
    """One READY endpoint as OpenAI lists a model (snake_case, as OpenAI clients read it)."""
    id = fields.String(metadata={"description": "the endpoint id: what `model` names in a request"})
    object = fields.String(metadata={"description": "model"})
    owned_by = fields.String(metadata={"description": "its workload"})
    name = fields.String(allow_none=True, metadata={"description": "its name, which a request may use too"})
    root = fields.String(metadata={"description": "the base model"})
    snapshot = fields.String(allow_none=True, metadata={"description": "the snapshot whose adapter it serves"})


class ModelListSchema(Schema):
    object = fields.String(metadata={"description": "list"})
    data = fields.List(fields.Nested(ModelSchema))


# Stored fields a read schema leaves out on purpose, and why (a schema leaves out its bases' too).
# tests/api/test_answers.py holds every stored field it meets to one side or the other.
INTERNAL_FIELDS: dict[type[Schema], dict[str, str]] = {
    ResourceSchema: {
        "kind": "which kind of document it is in the store; its id and its route say as much",
    },
    RunSchema: {
        "fence": "the fencing number of the worker's lease (services/trainer_worker/lease.py)",
        "judgeWorkloads": "the workload each judge the plan names was found in at submission; its worker looks "
                          "a judge's name up there only",
    },
    EvaluationSchema: {
        "fence": "the fencing number of the worker's lease (services/trainer_worker/lease.py)",
        "datasetFormat": "its dataset's format, copied at creation; nothing reads it",
        "judgeWorkloads": "the workload its judge was found in at submission; its worker looks a judge's name "
                          "up there only",
    },
    EndpointSchema: {
        "failed": "the fact its phase FAILED is derived from (shared/lifecycle/endpoints.py); the phase says it",
        "servedModel": "the name its serving process gives the base model (the proxy rewrites it)",
        "adapterName": "the name its serving process gives the adapter (the proxy rewrites it)",
        "managerMissingSince": "which absence of its node's endpoint manager the scheduler has handled "
                               "(services/scheduler/lost_endpoints.py)",
        "processLost": "the serving process a proxied request found gone (shared/lifecycle/endpoints.process_gone), "
                       "for its endpoint manager; its events say so",
        "requeuedAt": "when the scheduler moved it off a node without an endpoint manager (the fact its QUEUED "
                      "phase is then derived from, shared/lifecycle/endpoints.py); its events say so",
        "leftBehind": "serving processes it left on nodes without a manager when it moved, for their next manager "
                      "to stop (pid and start time: nothing a client can use)",
    },
    EndpointProcessSchema: {
        "startTicks": "the process's start time in clock ticks, to tell it from a later process with its pid",
        "apiKey": "the serving process's secret: only the API's proxy sends it (never shown)",
    },
    ComparisonSchema: {
        "snapshots": "the stored half of `rows` (snapshot, run, step, restore), which carries all of it",
    },
}


def internal_fields(schema: type[Schema]) -> dict[str, str]:
    """The stored fields `schema` (and its bases) leave out on purpose, and why."""
    return {name: why for cls in reversed(schema.__mro__) for name, why in INTERNAL_FIELDS.get(cls, {}).items()}


@cache
def _dumper(schema: type[Schema]) -> Schema:
    return schema()


def serialise(schema: type[Schema], doc: Any) -> dict[str, Any]:
    """The answer for `doc`: its fields `schema` declares, nested ones alike; nothing else."""
    return _dumper(schema).dump(doc)
