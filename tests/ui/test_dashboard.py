"""The dashboard (/ui) in headless Chromium against a real stack: a real run with its metrics and
events, a branch started from the run page and shown in the lineage, a comparison started there,
the pools page, and the playground answered through the trainer's proxy, streamed."""

from __future__ import annotations

import json
import re

import pytest
import requests

from shared.models.tiny_models import ensure_builtin
from shared.store.artifacts import ArtifactRoot
from tests.e2e.test_run_through_services import SAMPLE, upload_sample, wait_terminal
from tests.trainer_worker.grpo_doubles import PROMPT, toy_answer, write_toy_dataset
from tests.ui.conftest import shoot

pytestmark = pytest.mark.e2e
expect = pytest.importorskip("playwright.sync_api", reason="playwright is in the test extra").expect

SMALL_ROWS = b"".join(SAMPLE.read_bytes().splitlines(keepends=True)[:4])


@pytest.fixture(scope="module")
def world(stack):
    """A finished run (12 steps, snapshots at 6 and 12, validation), a small dataset to compare on,
    and a READY endpoint of the base model for the playground."""
    dataset = upload_sample(stack)
    small = stack.post("/v1/datasets", files={"file": ("four-rows.jsonl", SMALL_ROWS)}, data={"name": "four-rows"})
    assert small.status_code == 201, small.text
    endpoint = stack.post("/v1/endpoints", json={"model": "builtin/tiny-qwen3", "name": "playground",
                                                 "idleTimeout": 0}).json()
    run = stack.post("/v1/runs", json={
        "model": "builtin/tiny-qwen3", "dataset": dataset, "validationDataset": dataset, "name": "ui-run", "tags": ["ui-demo"],
        "hyperparameters": {"maxSteps": 12, "learningRate": 0.003}, "snapshots": {"everySteps": 6}}).json()
    done = wait_terminal(stack, run["id"])
    assert done["status"] == "SUCCEEDED", done
    snapshots = sorted(stack.get(f"/v1/snapshots?run={run['id']}").json()["items"], key=lambda s: s["step"])
    return {"run": done, "dataset": dataset, "small": small.json()["id"], "endpoint": endpoint["id"],
            "snapshots": [s["id"] for s in snapshots]}


def open_ui(page, stack, route: str = "", token: str | None = None):
    """The dashboard at #ROUTE, signed in with the token (kept in session storage as the prompt keeps it)."""
    page.context.add_init_script(f"sessionStorage.setItem('trainer.token', {json.dumps(token or stack.token)})")
    page.goto(f"{stack.api_url}/ui/{route}")
    return page


def test_the_token_prompt_then_the_runs_list_with_its_filters(page, stack, world):
    run = world["run"]["id"]
    page.goto(f"{stack.api_url}/ui")
    expect(page.locator("#token-dialog")).to_be_visible()
    page.fill("#token-input", "not-a-token")
    page.click("#token-form button[type=submit]")
    expect(page.locator("#token-error")).to_have_text("this token is not known to the deployment")
    page.fill("#token-input", stack.token)
    page.click("#token-form button[type=submit]")
    row = page.locator(f"tr[data-run='{run}']")
    expect(row).to_contain_text("SUCCEEDED")
    expect(row.locator("progress")).to_have_attribute("value", "12")
    assert page.evaluate("sessionStorage.getItem('trainer.token')") == stack.token
    shoot(page, "runs")

    page.select_option("select[name=status]", "FAILED")
    expect(row).to_have_count(0)
    page.select_option("select[name=status]", "SUCCEEDED")
    expect(row).to_have_count(1)
    page.select_option("select[name=method]", "grpo")
    expect(page.locator("#runs-table")).to_have_text("no runs match")
    page.select_option("select[name=method]", "sft")
    page.fill("input[name=workload]", "nobody")
    page.dispatch_event("input[name=workload]", "change")
    expect(page.locator("#runs-table")).to_have_text("no runs match")


def test_ui_signs_in_from_the_address_and_the_runs_list_finds_runs_by_name_and_tag(page, stack, world):
    """`training ui` opens /ui/#token=TOKEN (training_cli/commands/ui.py): signed in, the token taken
    out of the address; the list asks the API for ?name= and ?tag= (issue 30)."""
    from training_cli.commands.ui import dashboard_url

    run = world["run"]["id"]
    page.goto(dashboard_url(stack.api_url, stack.token))
    row = page.locator(f"tr[data-run='{run}']")
    expect(row).to_contain_text("ui-demo")
    assert stack.token not in page.url and page.url.endswith("#/runs")
    assert page.evaluate("sessionStorage.getItem('trainer.token')") == stack.token
    for field, value, shown in (("name", "UI-R", 1), ("name", "no such name", 0), ("name", "", 1),
                                ("tags", "ui-demo", 1), ("tags", "ui-demo, other", 0), ("tags", "", 1)):
        page.fill(f"input[name={field}]", value)
        page.dispatch_event(f"input[name={field}]", "change")
        if shown:
            expect(row).to_have_count(1)
        else:
            expect(page.locator("#runs-table")).to_have_text("no runs match")


def test_the_run_page_charts_the_runs_points_and_lists_its_events_and_snapshots(page, stack, world):
    run = world["run"]["id"]
    points = stack.get(f"/v1/runs/{run}/metrics").json()["items"]
    losses = [p for p in points if p.get("loss") is not None]
    validation = [p for p in points if p.get("validationLoss") is not None]
    assert len(losses) == 12 and [p["step"] for p in validation] == [6, 12]
    open_ui(page, stack, f"#/runs/{run}")
    loss = page.locator("[data-chart='loss'] li[data-series='loss']")
    expect(loss).to_have_attribute("data-points", str(len(losses)))
    expect(page.locator("[data-chart='loss'] li[data-series='validation']")).to_have_attribute("data-points", "2")
    for title, series in (("learning rate", "learning rate"), ("grad norm", "grad norm"), ("tokens/s", "tokens/s")):
        expect(page.locator(f"[data-chart='{title}'] li[data-series='{series}']")).to_have_attribute(
            "data-points", str(sum(1 for p in points if p.get(_camel(series)) is not None)))
    # each point of the loss line is the run's: the legend shows the value at the step under the pointer
    for point in (losses[0], losses[6]):
        assert hover(page, "loss", point["step"]) == {"step": str(point["step"]), "loss": _num(point["loss"]),
                                                      "validation": "–" if point["step"] != 12 else _num(point["validationLoss"])}
    expect(page.locator("#events li").filter(has_text="training started: 12 steps")).to_have_count(1)
    expect(page.locator("#snapshots tr[data-snapshot]")).to_have_count(2)
    expect(page.locator("#run-status")).to_have_text("SUCCEEDED")
    expect(page.locator("#pause")).to_be_disabled()
    memory = stack.get(f"/v1/runs/{run}").json()["memory"]  # the estimate beside the measured peak
    expect(page.locator(".field").filter(has_text="memory")).to_contain_text(
        f"estimate {_num(memory['estimateGiB'], 3)} GiB · peak {_num(memory['peakGiB'], 3)} GiB")
    # its process log (issue 30): what the worker process saw, shown on demand
    page.click("#show-process-log")
    expect(page.locator("#process-log")).to_contain_text("INFO training started: 12 steps")
    expect(page.locator("#process-log")).to_contain_text("takes the run (attempt 0)")
    shoot(page, "run")


def hover(page, chart: str, step: int) -> dict[str, str]:
    """The chart's legend with the pointer over `step`: each series' name and the value it shows."""
    return page.evaluate("""([chart, step]) => {
      const figure = document.querySelector(`[data-chart='${chart}']`), u = figure.plot;
      u.setCursor({ left: u.valToPos(step, "x"), top: 5 });
      return Object.fromEntries([...figure.querySelectorAll(".u-legend .u-series")].map(
        (row) => [row.querySelector(".u-label").textContent, row.querySelector(".u-value").textContent]));
    }""", [chart, step])


def _camel(label: str) -> str:
    return {"learning rate": "learningRate", "grad norm": "gradNorm", "tokens/s": "tokensPerSecond"}[label]


def _num(value: float, digits: int = 4) -> str:
    """What the page's num() shows: four significant digits (or `digits`)."""
    return f"{float(f'{value:.{digits}g}')}".rstrip("0").rstrip(".") if abs(value) >= 1e-3 else f"{value:.2e}"


def test_a_live_run_follows_and_pauses_resumes_and_cancels_from_its_buttons(page, stack, world):
    run = stack.post("/v1/runs", json={"model": "builtin/tiny-qwen3", "dataset": world["dataset"],
                                       "hyperparameters": {"maxSteps": 5000}}).json()["id"]
    open_ui(page, stack, f"#/runs/{run}")
    expect(page.locator("#run-status")).to_have_text("RUNNING", timeout=60_000)
    loss = page.locator("[data-chart='loss'] li[data-series='loss']")
    expect(loss).to_have_attribute("data-points", re.compile(r"^[1-9]"), timeout=60_000)
    first = int(loss.get_attribute("data-points"))
    page.wait_for_function("n => Number(document.querySelector(\"[data-chart='loss'] li[data-series='loss']\")"
                           ".dataset.points) > n", arg=first, timeout=30_000)  # points arrive while it trains

    page.click("#pause")
    expect(page.locator("#run-status")).to_have_text("PAUSED", timeout=60_000)
    page.click("#resume")
    expect(page.locator("#run-status")).to_have_text(re.compile("QUEUED|STARTING|RUNNING"))
    expect(page.locator("#run-status")).to_have_text("RUNNING", timeout=60_000)
    page.click("#cancel")
    expect(page.locator("#run-status")).to_have_text("CANCELLED", timeout=60_000)
    # the events log followed it all, the last events (written as it ended) too
    stack.wait_until("the page to show every event", lambda: page.locator("#events li").all_text_contents() == [
        f"{e['time'][11:19]} {e['message']}" for e in stack.get(f"/v1/runs/{run}/events").json()["items"]],
        timeout_s=20)
    assert stack.get(f"/v1/runs/{run}").json()["detail"] == "cancelled by the user"


def test_a_branch_started_from_the_run_page_shows_in_the_lineage(page, stack, world):
    run, first_snapshot = world["run"]["id"], world["snapshots"][0]
    open_ui(page, stack, f"#/runs/{run}")
    page.click("#branch")
    page.select_option("#branch-form select[name=snapshot]", first_snapshot)
    page.select_option("#branch-form select[name=what]", "weights")
    page.fill("#branch-form input[name=maxSteps]", "4")
    page.click("#branch-form button[type=submit]")
    page.wait_for_url(lambda url: "#/runs/run-" in url and not url.endswith(run))
    branch = page.url.rsplit("/", 1)[1]
    doc = wait_terminal(stack, branch)
    assert doc["status"] == "SUCCEEDED" and doc["parent"] == {"snapshot": first_snapshot, "run": run, "restore": "weights"}
    world["branch"] = doc

    page.goto(f"{stack.api_url}/ui/#/lineage/{branch}")
    node = page.locator(f"[data-run='{run}'] li.snapshot-node[data-snapshot='{first_snapshot}']")
    expect(node.locator(f"li.branch[data-branch='{branch}'] .restore-weights")).to_have_text("⇢ weights")
    expect(node.locator(f"[data-run='{branch}'] li.snapshot-node")).to_have_count(len(doc["snapshots"]))
    loss_at_6 = next(p["loss"] for p in stack.get(f"/v1/runs/{run}/metrics").json()["items"] if p["step"] == 6)
    expect(node.locator(":scope > .metrics")).to_contain_text(f"step 6 · loss {_num(loss_at_6)}")
    expect(page.locator(f"[data-run='{branch}']")).to_have_class(re.compile("focus"))
    shoot(page, "lineage")


def test_a_chart_smooths_zooms_takes_a_log_scale_overlays_a_branch_and_downloads(page, stack, world, tmp_path):
    run, branch = world["run"], world["branch"]
    losses = [p for p in stack.get(f"/v1/runs/{run['id']}/metrics").json()["items"] if p.get("loss") is not None]
    branch_losses = [p for p in stack.get(f"/v1/runs/{branch['id']}/metrics").json()["items"] if p.get("loss") is not None]
    open_ui(page, stack, f"#/runs/{run['id']}")
    figure = page.locator("[data-chart='loss']")
    expect(figure.locator("li[data-series='loss']")).to_have_attribute("data-points", str(len(losses)))

    page.check(f"#overlay [data-overlay='{branch['id']}'] input")
    overlaid = f"{branch['id']} · loss"
    expect(figure.locator(f"li[data-series='{overlaid}']")).to_have_attribute("data-points", str(len(branch_losses)))
    first = branch_losses[0]
    assert hover(page, "loss", first["step"])[overlaid] == _num(first["loss"])

    figure.locator("select.smoothing").select_option("0.6")
    smoothed, last = [], 0.0
    for i, p in enumerate(losses, 1):  # the debiased moving average (TensorBoard's)
        last = last * 0.6 + 0.4 * p["loss"]
        smoothed.append(last / (1 - 0.6 ** i))
    shown = hover(page, "loss", 5)
    assert shown["loss"] == _num(smoothed[4]) and shown["loss (raw)"] == _num(losses[4]["loss"]), shown

    with page.expect_download() as got:
        figure.locator("button.csv").click()
    got.value.save_as(tmp_path / "loss.csv")
    lines = (tmp_path / "loss.csv").read_text().splitlines()
    steps = sorted({p["step"] for p in losses} | {p["step"] for p in branch_losses})
    assert lines[0].startswith('step,"loss","validation",') and len(lines) == 1 + len(steps)
    assert lines[5].split(",")[0] == str(steps[4]) and float(lines[5].split(",")[1]) == pytest.approx(smoothed[4])
    with page.expect_download() as got:
        figure.locator("button.png").click()
    assert got.value.suggested_filename == "loss.png"
    got.value.save_as(tmp_path / "loss.png")
    assert (tmp_path / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    figure.locator("input.log-scale").check()
    assert page.evaluate("document.querySelector(\"[data-chart='loss']\").plot.scales.y.distr") == 3
    # zoom as a user does: drag across steps 3 to 8 over the plot
    box = figure.locator(".u-over").bounding_box()
    x3, x8 = page.evaluate("""() => { const u = document.querySelector("[data-chart='loss']").plot;
      return [u.valToPos(3, "x"), u.valToPos(8, "x")]; }""")
    page.mouse.move(box["x"] + x3, box["y"] + 20)
    page.mouse.down()
    page.mouse.move(box["x"] + x8, box["y"] + 30, steps=5)
    page.mouse.up()
    zoomed = page.evaluate("(() => { const u = document.querySelector(\"[data-chart='loss']\").plot; "
                           "return [u.scales.x.min, u.scales.x.max]; })()")
    assert zoomed == pytest.approx([3, 8], abs=0.2)
    shoot(page, "run-charts")


def test_snapshots_ticked_in_the_lineage_start_a_comparison_with_the_best_marked(page, stack, world):
    run, branch = world["run"], world["branch"]
    picked = [run["latestSnapshot"], branch["latestSnapshot"]]
    open_ui(page, stack, f"#/lineage/{run['id']}")
    for snapshot in picked:
        page.check(f"li.snapshot-node[data-snapshot='{snapshot}'] > label input.pick")
    page.select_option("#compare-form select[name=dataset]", world["small"])
    page.check("#compare-base")  # issue 30: the base model as a column of its own
    page.click("#compare")
    page.wait_for_url(re.compile(r"#/comparisons/cmp-"))
    comparison = page.url.rsplit("/", 1)[1]
    for snapshot in [*picked, "base"]:
        expect(page.locator(f"#comparison-table th[data-snapshot='{snapshot}']")).to_have_count(1)
    expect(page.locator("#comparison-table th[data-snapshot='base']")).to_contain_text("base model")
    expect(page.locator("#comparison-status")).to_have_text("SUCCEEDED", timeout=180_000)
    doc = stack.get(f"/v1/comparisons/{comparison}").json()
    best_loss = doc["best"]["loss"]
    assert len(best_loss) == 1, doc
    columns = [th.get_attribute("data-snapshot") for th in page.locator("#comparison-table th[data-snapshot]").all()]
    assert columns == [row["snapshot"] or "base" for row in doc["rows"]] and set(columns) == {*picked, "base"}
    column = columns.index(best_loss[0]) + 2  # the metric's name, then one column per snapshot
    expect(page.locator(f"tr[data-metric='loss'] > :nth-child({column})")).to_have_attribute("data-best", "true")
    expect(page.locator("tr[data-metric='loss'] td[data-best]")).to_have_count(1)
    shoot(page, "comparison")

    # each evaluation's page shows its rows as the API stored them
    evaluation = doc["rows"][0]["evaluation"]
    page.click(f"a[href='#/evaluations/{evaluation}']")
    expect(page.locator("#evaluation-status")).to_have_text("SUCCEEDED")
    stored = [json.loads(line) for line in stack.get(f"/v1/evaluations/{evaluation}/rows").text.splitlines() if line]
    expect(page.locator("#rows-table tr[data-row]")).to_have_count(len(stored))
    first = page.locator(f"#rows-table tr[data-row='{stored[0]['row']}']")
    expect(first.locator("td[data-column='loss']")).to_have_text(_num(stored[0]["loss"]))
    expect(first.locator("td[data-column='completion']")).to_have_text(stored[0]["completion"])
    expect(page.locator("#rows-caption")).to_have_text(f"{len(stored)} of {len(stored)} row(s)")
    loss = doc["rows"][0]["metrics"]["loss"]
    expect(page.locator("#evaluation-summary .field").filter(has_text="loss")).to_contain_text(_num(loss))
    shoot(page, "evaluation")

    page.goto(f"{stack.api_url}/ui/#/comparisons")
    expect(page.locator(f"tr[data-comparison='{comparison}']")).to_contain_text("SUCCEEDED")


def test_a_grpo_runs_page_shows_its_rollout_samples_and_each_reward_on_its_own_chart(page, stack, tmp_path):
    """A real grpo run (exact match and a length reward of another scale): the total and each reward
    are charted apart, charts without points (KL with no penalty, validation) are hidden, and the
    samples table shows the step's completions with the scores the API stored."""
    answer, _ = toy_answer(ensure_builtin("tiny-qwen3", ArtifactRoot(tmp_path / "artifacts")))
    toy = write_toy_dataset(tmp_path / "toy.jsonl", answer)
    dataset = stack.post("/v1/datasets", files={"file": ("toy.jsonl", toy.read_bytes())}).json()["id"]
    run = stack.post("/v1/runs", json={
        "method": "grpo", "model": "builtin/tiny-qwen3", "dataset": dataset,
        "hyperparameters": {"maxSteps": 3, "batchSize": 8, "learningRate": 0.005},
        "grpo": {"numGenerations": 4, "maxCompletionLength": 2,
                 "rewards": [{"function": "exact_match", "weight": 1.0}, {"function": "length", "target": 40,
                                                                          "weight": 0.5}]}}).json()
    assert run.get("id"), run
    done = wait_terminal(stack, run["id"])
    assert done["status"] == "SUCCEEDED", done
    open_ui(page, stack, f"#/runs/{run['id']}")
    total = page.locator("[data-chart='reward (weighted total)'] li[data-series]")
    expect(total).to_have_count(1)
    expect(total).to_have_attribute("data-series", "weighted total")
    expect(total).to_have_attribute("data-points", "3")
    for key in ("exact_match", "length"):
        expect(page.locator(f"[data-chart='reward: {key}'] li[data-series]")).to_have_attribute("data-points", "3")
    for empty in ("KL", "validation loss"):
        expect(page.locator(f"[data-chart='{empty}']")).to_be_hidden()
    expect(page.locator("#charts-empty")).to_be_hidden()

    latest = stack.get(f"/v1/runs/{run['id']}/samples?step=3").json()["items"][0]
    expect(page.locator("#sample-step")).to_have_value("3")
    rows = page.locator("#samples-table tr[data-completion]")
    expect(rows).to_have_count(sum(len(g["completions"]) for g in latest["groups"]))
    first = latest["groups"][0]["completions"][0]
    cells = page.locator("#samples-table tr[data-group='1'][data-completion='1']")
    expect(cells.locator("td.sample-completion")).to_have_text(first["text"])
    expect(cells.locator("td[data-score='length']")).to_have_text(_num(first["scores"]["length"]))
    expect(cells.locator("td[data-reward]")).to_have_text(_num(first["reward"]))
    expect(cells.locator("td[data-advantage]")).to_have_text(_num(first["advantage"]) if first["advantage"] else "0")
    expect(page.locator("#samples-table td.sample-prompt").first).to_have_text(PROMPT)
    page.locator("#samples-section").scroll_into_view_if_needed()
    shoot(page, "run-grpo")
    page.click("#sample-prev")
    expect(page.locator("#samples-caption")).to_contain_text("step 2:")
    page.fill("#sample-step", "9")
    page.dispatch_event("#sample-step", "change")
    expect(page.locator("#samples .error")).to_have_text(
        f"run {run['id']} has no rollout sample of step 9: it keeps the last 200 steps, now steps 1 to 3")


def test_the_pools_page_shows_devices_their_holders_and_the_queue(page, stack, world):
    endpoint = world["endpoint"]
    stack.wait_until("the endpoint READY", lambda: stack.get(f"/v1/endpoints/{endpoint}").json()["phase"] == "READY")
    # two GPUs while the endpoint holds one of the two: it waits
    waiting = stack.post("/v1/runs", json={"model": "builtin/tiny-qwen3", "dataset": world["dataset"],
                                           "execution": {"gpus": 2}, "hyperparameters": {"maxSteps": 2}}).json()["id"]
    try:
        open_ui(page, stack, "#/pools")
        node = page.locator(".node[data-node='local']")
        expect(node.locator(".device")).to_have_count(2)
        holder = page.locator(f"tr[data-holder='{endpoint}']")
        expect(holder).to_contain_text("builtin/tiny-qwen3")
        device = stack.get(f"/v1/endpoints/{endpoint}").json()["scheduling"]["devices"][0]
        expect(node.locator(f".device[data-device='{device}']")).to_contain_text(endpoint)
        queued = page.locator(f"tr[data-queued='{waiting}']")
        expect(queued).to_contain_text("waiting_for_gpus")
        # the sentence names how long the endpoint has been idle, which moves on between the page's
        # refresh (every 3 s) and the API's answer: equal within one refresh, read again until then
        stack.wait_until("the page's waiting text as the API says it", lambda: queued.locator(".waiting").text_content()
                         == stack.get(f"/v1/runs/{waiting}").json()["scheduling"]["waitingText"])
        shoot(page, "pools")
    finally:
        requests.delete(f"{stack.api_url}/v1/runs/{waiting}", headers=stack.headers(), timeout=30)


def test_the_playground_gets_a_streamed_answer_through_the_proxy(page, stack, world):
    endpoint = world["endpoint"]
    stack.wait_until("the endpoint READY", lambda: stack.get(f"/v1/endpoints/{endpoint}").json()["phase"] == "READY")
    open_ui(page, stack, "#/endpoints")
    expect(page.locator(f"tr[data-endpoint='{endpoint}']")).to_contain_text("READY")
    page.click(f"tr[data-endpoint='{endpoint}'] a")
    expect(page.locator("#endpoint-phase")).to_have_text("READY")
    expect(page.locator("#serving-log")).not_to_be_empty()
    page.fill("#prompt", "Reverse: stone")
    page.fill("#max-tokens", "12")
    page.click("#send")
    answer = page.locator(".msg.assistant[data-state='done'] .answer")
    expect(answer).to_have_count(1, timeout=60_000)
    # greedy: the same words the proxy answers without streaming
    plain = stack.post("/v1/chat/completions", json={"model": "playground", "max_tokens": 12, "temperature": 0,
                                                      "messages": [{"role": "user", "content": "Reverse: stone"}]})
    assert plain.status_code == 200, plain.text
    assert answer.text_content() == plain.json()["choices"][0]["message"]["content"] != ""
    assert stack.get(f"/v1/endpoints/{endpoint}").json()["lastRequestAt"]
    expect(page.locator("#endpoint-summary")).to_contain_text("never (no idle timeout)")
    shoot(page, "endpoint")


def test_another_workloads_token_sees_none_of_it(page, stack, world, team_token):
    run, endpoint = world["run"]["id"], world["endpoint"]
    open_ui(page, stack, "#/runs", token=team_token)
    expect(page.locator("#runs-table")).to_have_text("no runs match")
    page.goto(f"{stack.api_url}/ui/#/runs/{run}")
    expect(page.locator("main .error")).to_have_text(f"run {run} does not exist")
    page.goto(f"{stack.api_url}/ui/#/endpoints/{endpoint}")
    expect(page.locator("main .error")).to_have_text(f"endpoint {endpoint} does not exist")
    page.goto(f"{stack.api_url}/ui/#/pools")
    holder = page.locator("table.holders tbody tr")
    expect(holder).to_have_count(1)
    expect(holder).to_contain_text("endpoint of another workload")
