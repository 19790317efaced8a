"""The grpo-single engine trains the built-in tiny model for real on the CPU: TRL's GRPOTrainer over
LoRA, rollouts from a real built-in serving process that is handed only the adapter each step."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from services.trainer_worker.engines import grpo
from services.trainer_worker.engines.base import Restore
from services.trainer_worker.engines.grpo import load_prompt_rows, run_grpo
from services.trainer_worker.engines.rollouts import RolloutServer
from shared.errors import WorkFailed
from tests.shared.plans.plan_fixtures import amended
from tests.trainer_worker.doubles import RecordingReporter, adapter_tensors, max_abs_diff
from tests.trainer_worker.grpo_doubles import PROMPT, grpo_job, toy_answer, write_toy_dataset

POINT_KEYS = {"step", "loss", "learningRate", "gradNorm", "tokensPerSecond", "epoch", "reward", "rewardStd",
              "rewards", "kl", "completionLength", "generationSeconds", "handoffSeconds", "handoffBytes",
              "rewardSeconds", "updateSeconds", "stepSeconds", "equalRewardGroupShare"}


@pytest.fixture(scope="module")
def toy(model_dir, tmp_path_factory):
    answer, probability = toy_answer(model_dir)
    assert probability < 0.2  # the untrained model rarely says it
    return write_toy_dataset(tmp_path_factory.mktemp("toy") / "toy.jsonl", answer)


@pytest.fixture(scope="module")
def trained(model_dir, toy, tmp_path_factory):
    reporter = RecordingReporter()
    job = grpo_job(model_dir, tmp_path_factory.mktemp("work"), toy, every_steps=6)
    return job, reporter, run_grpo(job, reporter)


def rewards_of(reporter):
    return [p["reward"] for p in reporter.points]


def test_exact_match_reward_rises(trained):
    _, reporter, result = trained
    rewards = rewards_of(reporter)
    assert result.final_step == 12 and len(rewards) == 12 and reporter.total_steps == 12
    # Step 1 scores the untrained model's samples; the last steps the trained adapter's.
    first, last = rewards[0], sum(rewards[-3:]) / 3
    assert first < 0.4 and last > 0.75 and last - first > 0.5, rewards


def test_metric_points_split_each_step(trained):
    job, reporter, _ = trained
    assert [p["step"] for p in reporter.points] == list(range(1, 13))
    adapter_bytes = sum(f.stat().st_size for f in (job.snapshot_dir(12) / "adapter").iterdir())
    for point in reporter.points:
        assert set(point) == POINT_KEYS
        assert point["rewards"]["exact_match"]["mean"] == pytest.approx(point["reward"])
        assert point["kl"] is None  # klPenalty 0 keeps no reference
        assert point["completionLength"] == 1.0
        assert 0.0 <= point["equalRewardGroupShare"] <= 1.0
        assert point["generationSeconds"] > 0 and point["updateSeconds"] > 0
        parts = point["generationSeconds"] + point["handoffSeconds"] + point["rewardSeconds"] + point["updateSeconds"]
        assert parts == pytest.approx(point["stepSeconds"], rel=1e-6)
    # The server starts with the fresh adapter; every later step hands it the last update's adapter:
    # exactly the bytes of an adapter directory, never base weights.
    assert reporter.points[0]["handoffBytes"] == 0
    for point in reporter.points[1:]:
        assert point["handoffBytes"] == adapter_bytes and point["handoffSeconds"] > 0


def test_a_step_whose_groups_all_have_equal_rewards_warns_that_it_learned_nothing(model_dir, toy, tmp_path,
                                                                                  monkeypatch):
    """Issue 29 item 4: a reward every completion earns alike (a regex anything matches) gives every
    group reward std 0, advantages 0, loss 0: each step says so in a warn event (up to a cap per
    attempt, here 2) and records the share of such groups in its metric point."""
    from shared import reasons

    monkeypatch.setattr(grpo, "NOTHING_LEARNED_EVENTS", 2)
    reporter = RecordingReporter()
    job = grpo_job(model_dir, tmp_path, toy, rewards=[{"function": "regex", "pattern": ".*", "weight": 1.0}],
                   maxSteps=3)
    result = run_grpo(job, reporter)
    assert result.final_step == 3
    assert [(p["equalRewardGroupShare"], p["reward"], p["loss"]) for p in reporter.points] == [(1.0, 1.0, 0.0)] * 3
    warns = [message for level, message in reporter.events if level == "warn"]
    assert warns == [reasons.grpo_step_learned_nothing(step=1, share=1.0, groups=2, reward=1.0, last=False),
                     reasons.grpo_step_learned_nothing(step=2, share=1.0, groups=2, reward=1.0, last=True)]
    assert warns[0] == ("step 1 learned nothing: in 2 of 2 group(s) every completion got the same reward (mean "
                        "reward 1.0000), so every advantage is 0. Try more generations, a higher temperature, a "
                        "harder dataset, or rewards that tell completions apart")


def test_each_step_keeps_a_sample_of_its_rollouts(trained):
    """Each step's sample is what the step trained on: both prompt groups of the toy (2 of at most
    SAMPLE_GROUPS), their 8 completions, the exact-match score, the weighted total and the advantage
    TRL computed; its scores average to the step's logged reward."""
    _, reporter, _ = trained
    assert [s["step"] for s in reporter.samples_sent] == list(range(1, 13))
    for sample, point in zip(reporter.samples_sent, reporter.points):
        assert sample["groupsInStep"] == 2 and sample["completionsInStep"] == 16
        assert [g["prompt"] for g in sample["groups"]] == [PROMPT, PROMPT]
        completions = [c for g in sample["groups"] for c in g["completions"]]
        assert len(completions) == 16 and not any(c["truncated"] for c in completions)
        for c in completions:
            assert c["scores"]["exact_match"] in (0.0, 1.0) and c["reward"] == c["scores"]["exact_match"]
        assert sum(c["reward"] for c in completions) / 16 == pytest.approx(point["reward"])
        for group in sample["groups"]:
            rewards = [c["reward"] for c in group["completions"]]
            advantages = [c["advantage"] for c in group["completions"]]
            assert sum(advantages) == pytest.approx(0.0, abs=1e-4)  # centred on the group's mean
            if len(set(rewards)) > 1:  # a rewarded completion's advantage is above an unrewarded one's
                assert min(a for a, r in zip(advantages, rewards) if r == 1.0) > 0 > max(
                    a for a, r in zip(advantages, rewards) if r == 0.0)
    # (a step whose groups all scored alike says so: issue 29's warning, not a fault of the samples)
    assert not [m for level, m in reporter.events if level == "warn" and " learned nothing: " not in m]


def test_a_trl_whose_rollout_log_cannot_be_read_warns_once_and_training_goes_on():
    reporter = RecordingReporter()
    callback = grpo.GrpoReporterCallback(None, reporter, clock=grpo.StepClock(), reward_keys=["exact_match"], beta=0.0)
    callback.trainer = object()  # a trainer with no rollout log of the shape the engine reads
    callback.report_samples(1)
    callback.report_samples(2)
    assert reporter.events == [("warn", "this run keeps no rollout samples: the installed TRL does not log a step's "
                                        "rollouts as the GRPO engine reads them; training goes on")]
    assert reporter.samples_sent == []


def test_snapshots_and_the_rollout_server(trained, model_dir):
    job, reporter, _ = trained
    assert [(s["step"], s["final"]) for s in reporter.snapshots] == [(6, False), (12, True)]
    manifest = json.loads((job.snapshot_dir(12) / "snapshot.json").read_text())
    assert manifest["method"] == "grpo" and manifest["engine"] == "grpo-single"
    assert manifest["trainingState"] == {"format": "hf-trainer", "path": "training_state"}
    # Only the latest handed-off adapter is kept, and it holds adapter files only.
    handed = sorted(p.name for p in (job.work_dir / "rollouts" / "adapters").iterdir())
    assert handed == ["policy-11"]
    files = sorted(p.name for p in (job.work_dir / "rollouts" / "adapters" / "policy-11").iterdir())
    assert files == ["adapter_config.json", "adapter_model.safetensors"]
    assert "ready in" in reporter.what_trains() and "KL reference none" in reporter.what_trains()
    # The built-in server was started before the trainer had its model (loading beside it), with no
    # adapter: the first one was handed to it once it answered.
    spec = json.loads((job.work_dir / "rollouts" / "load_spec.json").read_text())
    assert spec["adapters"] == {}
    # The built-in server folds each adapter it is handed into its weights (shared/serving/adapter_fold.py).
    assert spec["adapterMode"] == "folded"


@pytest.fixture(scope="module")
def with_kl(model_dir, toy, tmp_path_factory):
    reporter = RecordingReporter()
    job = grpo_job(model_dir, tmp_path_factory.mktemp("kl"), toy, kl=0.1, maxSteps=6)
    run_grpo(job, reporter)
    return reporter


def test_kl_is_zero_at_the_first_step_and_grows_with_a_penalty(with_kl):
    kl = [p["kl"] for p in with_kl.points]
    assert kl[0] == pytest.approx(0.0, abs=1e-7)
    assert kl[-1] > 0.05 and max(kl[1:]) > kl[0], kl
    assert "KL reference base model" in with_kl.what_trains()


LENGTH = [{"function": "length", "target": 3, "weight": 1.0}]


@pytest.fixture(scope="module")
def weights_branch(trained, model_dir, toy, tmp_path_factory):
    job, _, _ = trained
    reporter = RecordingReporter()
    branch = grpo_job(model_dir, tmp_path_factory.mktemp("branch"), toy, kl=0.1, maxSteps=4, learningRate=0.02,
                      rewards=LENGTH, restore=Restore(what="weights", snapshot_dir=job.snapshot_dir(12)))
    run_grpo(branch, reporter)
    return branch, reporter


def test_a_weights_branch_keeps_the_inherited_adapter_as_reference(weights_branch):
    """Over an inherited adapter that has learned the task, KL starts at 0 (the reference is that
    adapter, not the base model, which it differs from a lot). The branch learns another reward
    (a length), so its policy moves away from the reference and KL grows."""
    _, reporter = weights_branch
    assert reporter.points[0]["kl"] == pytest.approx(0.0, abs=1e-7)
    assert reporter.points[-1]["kl"] > 0
    assert "KL reference inherited adapter" in reporter.what_trains()


def test_a_paused_weights_branch_resumes_with_the_same_reference(weights_branch, trained, model_dir, toy, tmp_path):
    """The reference travels in the training state: after a resume it is still the inherited
    adapter, not the adapter the run had reached when it paused."""
    job, _, _ = trained
    _, full = weights_branch
    paused = RecordingReporter(stop_after_step=1, stop_with="pause")
    first = grpo_job(model_dir, tmp_path, toy, kl=0.1, maxSteps=4, learningRate=0.02, rewards=LENGTH,
                     restore=Restore(what="weights", snapshot_dir=job.snapshot_dir(12)))
    assert run_grpo(first, paused).final_step == 2
    resumed = RecordingReporter()
    second = grpo_job(model_dir, tmp_path, toy, kl=0.1, maxSteps=4, learningRate=0.02, rewards=LENGTH,
                      restore=Restore(what="trainingState", snapshot_dir=first.snapshot_dir(2)))
    run_grpo(second, resumed)
    assert "KL reference inherited adapter" in resumed.what_trains()
    assert [p["kl"] for p in resumed.points] == pytest.approx([p["kl"] for p in full.points[2:]], abs=1e-6)
    assert resumed.points[-1]["kl"] > 0


def test_pause_then_resume_ends_with_the_uninterrupted_adapter(model_dir, toy, tmp_path):
    """With a KL penalty, so the resumed run must also keep its reference (the base model)."""
    full = RecordingReporter()
    run_grpo(grpo_job(model_dir, tmp_path / "full", toy, kl=0.1, maxSteps=6), full)
    # The user's pause arrives with the metrics of step 3; the run stops at the next step boundary.
    paused = RecordingReporter(stop_after_step=3, stop_with="pause")
    first = grpo_job(model_dir, tmp_path / "paused", toy, kl=0.1, maxSteps=6)
    result = run_grpo(first, paused)
    assert result.paused and result.final_step == 4 and [s["step"] for s in paused.snapshots] == [4]
    resumed = RecordingReporter()
    second = grpo_job(model_dir, tmp_path / "paused", toy, kl=0.1, maxSteps=6,
                      restore=Restore(what="trainingState", snapshot_dir=first.snapshot_dir(4)))
    run_grpo(second, resumed)
    assert [p["step"] for p in resumed.points] == [5, 6]
    assert resumed.points[0]["handoffBytes"] == 0  # the server started with the snapshot's adapter
    assert [p["kl"] for p in resumed.points] == pytest.approx([p["kl"] for p in full.points[4:]], abs=1e-6)
    assert [p["reward"] for p in resumed.points] == [p["reward"] for p in full.points[4:]]
    assert max_abs_diff(adapter_tensors(second.snapshot_dir(6)), adapter_tensors(tmp_path / "full" / "snapshots" /
                                                                                 "step-000006")) < 1e-6


def test_dataset_rows_of_every_format(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"prompt": "p1", "answer": "a1"},
        {"prompt": "p2", "completion": "c2"},
        {"messages": [{"role": "user", "content": "q3"}, {"role": "assistant", "content": "a3"}]},
    ]) + "\n")
    rows = load_prompt_rows(path)
    assert [(r["prompt"], r["answer"]) for r in rows] == [
        ("p1", "a1"), ("p2", "c2"), ([{"role": "user", "content": "q3"}], "a3")]
    path.write_text(json.dumps({"answer": "x"}) + "\n")
    with pytest.raises(WorkFailed, match="line 1 has no prompt"):
        load_prompt_rows(path)


class CountingServer(RolloutServer):
    """The real rollout server; the test counts the prompts each completions request carried."""

    requests: list[int] = []

    def sample(self, prompts, **kwargs):
        CountingServer.requests.append(len(prompts))
        return super().sample(prompts, **kwargs)


def test_a_steps_prompt_groups_are_sampled_in_one_request(model_dir, tmp_path):
    """Two prompts a step (batch 16, 8 generations): one request with both, sampled as one batch by
    the server, instead of one request per prompt."""
    answer, _ = toy_answer(model_dir)
    dataset = tmp_path / "two.jsonl"
    dataset.write_text("".join(json.dumps({"prompt": p, "answer": answer}) + "\n"
                               for p in ("What is the answer?", "What is the question here?")))
    CountingServer.requests.clear()
    reporter = RecordingReporter()
    run_grpo(grpo_job(model_dir, tmp_path / "work", dataset, maxSteps=2), reporter, rollout_server=CountingServer)
    assert CountingServer.requests == [2, 2] and [p["step"] for p in reporter.points] == [1, 2]


def test_groups_asking_for_as_many_completions_share_a_request_up_to_its_bound(monkeypatch):
    runs = [("a", 8), ("b", 8), ("c", 3), ("d", 8)]  # c: a group split with another device
    assert grpo._text_batches(runs, skip={}) == [[0, 1, 3], [2]]
    assert grpo._text_batches(runs, skip={1: None}) == [[0, 3], [2]]  # b went as a chat request
    monkeypatch.setattr(grpo, "MAX_ROLLOUT_BATCH", 16)
    assert grpo._text_batches(runs, skip={}) == [[0, 1], [3], [2]]


@dataclass
class PostingServer(RolloutServer):
    """The real rollout server (adapterMode as the engine picks it); the test keeps the path of each call it made."""

    def _post(self, path, body):
        self.posts.append(path)
        return super()._post(path, body)

    def __post_init__(self):
        self.posts: list[str] = []
        PostingServer.started.append(self)


PostingServer.started = []


@dataclass
class UnmergedPostingServer(PostingServer):
    adapter_mode: str | None = "unmerged"


def test_a_folding_rollout_server_samples_what_the_unmerged_adapter_does(model_dir, toy, tmp_path):
    """The same seeded run twice, its rollout server folding each adapter into its weights (the
    default) or serving it unmerged: the same completions, so the same rewards and losses; the
    folding server is never asked to unload (each adapter replaces the one before)."""
    runs = {}
    for mode, server_class in (("folded", PostingServer), ("unmerged", UnmergedPostingServer)):
        PostingServer.started.clear()
        reporter = RecordingReporter()
        job = grpo_job(model_dir, tmp_path / mode, toy, maxSteps=4)
        job.plan = amended(job.plan, {"grpo": {"maxCompletionLength": 4}})
        run_grpo(job, reporter, rollout_server=server_class)
        [server] = PostingServer.started
        runs[mode] = reporter.points, server.posts
        spec = json.loads((job.work_dir / "rollouts" / "load_spec.json").read_text())
        assert spec["adapterMode"] == mode
    (folded, folded_posts), (unmerged, unmerged_posts) = runs["folded"], runs["unmerged"]
    for key in ("reward", "completionLength", "handoffBytes"):
        assert [p[key] for p in folded] == [p[key] for p in unmerged], key
    assert [p["loss"] for p in folded] == pytest.approx([p["loss"] for p in unmerged], abs=1e-6)
    assert folded_posts.count("/v1/load_lora_adapter") == unmerged_posts.count("/v1/load_lora_adapter") == 4
    assert "/v1/unload_lora_adapter" not in folded_posts and unmerged_posts.count("/v1/unload_lora_adapter") == 3


def test_the_rollout_servers_peak_counts_with_its_ranks(trained):
    """A grpo run on a CPU slot: its built-in rollout server's peak resident set is measured before it
    is stopped and added to its rank's; the estimate (rollout server included) is not below the sum."""
    _, reporter, _ = trained
    estimate, peaks = reporter.memory_reports
    (rank,) = peaks["ranks"]
    assert rank["rolloutServerGiB"] > 0.1 and rank["trainerGiB"] > 0.1
    assert rank["peakGiB"] == pytest.approx(rank["trainerGiB"] + rank["rolloutServerGiB"], abs=0.002)
    assert estimate["estimate_gib"] >= rank["peakGiB"]
