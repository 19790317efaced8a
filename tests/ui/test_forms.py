"""The dashboard's forms in headless Chromium against a real stack (issue 30): a dataset uploaded,
previewed and deleted; a run started from the new-run form (after its errors were shown beside the
fields they name); the plan panel's defaults and a branch's diff; each snapshot's actions (evaluate,
serve, download, branch); an endpoint started from its form; `/` leading to the dashboard."""

from __future__ import annotations

import json
import tarfile

import pytest
import requests

from tests.e2e.test_run_through_services import SAMPLE, wait_terminal
from tests.ui.conftest import shoot
from tests.ui.test_dashboard import open_ui

pytestmark = pytest.mark.e2e
expect = pytest.importorskip("playwright.sync_api", reason="playwright is in the test extra").expect

FOUR_ROWS = b"".join(SAMPLE.read_bytes().splitlines(keepends=True)[:4])
MODEL = "builtin/tiny-qwen3"


@pytest.fixture(scope="module")
def made() -> dict:
    """What one test creates through a form and a later one uses."""
    return {}


def replay(stack, request) -> dict:
    """The API's error for the body the page sent, asked again outside the browser."""
    resp = requests.request(request.method, stack.api_url + request.url.split(stack.api_url, 1)[1],
                            headers=stack.headers(), json=json.loads(request.post_data), timeout=30)
    assert resp.status_code >= 400, resp.text
    return resp.json()["error"]


def submit_and_catch(page, form: str, path: str):
    """Submit the form, returning the request it sent to `path`."""
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith(path)) as sent:
        page.click(f"#{form} button[type=submit]")
    return sent.value


def upload(page, name: str, rows: bytes, as_name: str = ""):
    page.set_input_files("#dataset-form input[data-field=file]",
                         files=[{"name": name, "mimeType": "application/octet-stream", "buffer": rows}])
    page.fill("#dataset-form input[data-field=name]", as_name)
    page.click("#dataset-form button[type=submit]")


def test_the_datasets_page_uploads_previews_and_deletes(page, stack, made):
    open_ui(page, stack, "#/datasets")
    page.click("#dataset-form button[type=submit]")  # no file
    expect(page.locator("#dataset-form [data-error-for=file]")).to_have_text("upload the JSONL as the multipart form field `file`")

    bad = b'{"messages": [{"role": "robot", "content": "x"}]}\n'
    upload(page, "bad.jsonl", bad)
    said = stack.post("/v1/datasets", files={"file": ("bad.jsonl", bad)}).json()["error"]["message"]
    expect(page.locator("#dataset-form [data-error-for=file]")).to_have_text(said)

    upload(page, "four.jsonl", FOUR_ROWS, "four-rows")
    upload(page, "sample.jsonl", SAMPLE.read_bytes(), "sample")
    expect(page.locator("#datasets tr[data-dataset]")).to_have_count(2)
    listed = {d["name"]: d for d in stack.get("/v1/datasets").json()["items"]}
    assert set(listed) == {"four-rows", "sample"} and listed["four-rows"]["rows"] == 4
    made["small"], made["sample"] = listed["four-rows"]["id"], listed["sample"]["id"]
    expect(page.locator(f"tr[data-dataset='{made['sample']}']")).to_have_class("fresh")

    page.click(f"tr[data-dataset='{made['small']}'] .preview-button")
    shown = page.locator(f"[data-preview='{made['small']}'] pre.row-json")
    expect(shown).to_have_count(4)
    assert [json.loads(t) for t in shown.all_text_contents()] == [json.loads(x) for x in FOUR_ROWS.splitlines()]
    page.click(f"tr[data-dataset='{made['sample']}'] .preview-button")
    expect(page.locator(f"[data-preview='{made['sample']}'] pre.row-json")).to_have_count(5)
    expect(page.locator("#dataset-preview")).to_contain_text(f"first 5 of {listed['sample']['rows']} rows of sample")
    shoot(page, "datasets")

    upload(page, "gone.jsonl", FOUR_ROWS, "gone")
    gone = next(d["id"] for d in stack.get("/v1/datasets").json()["items"] if d["name"] == "gone")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click(f"tr[data-dataset='{gone}'] .delete-button")
    expect(page.locator(f"tr[data-dataset='{gone}']")).to_have_count(0)
    assert stack.get(f"/v1/datasets/{gone}").status_code == 404


def test_the_run_form_places_the_apis_errors_then_starts_a_run(page, stack, made):
    open_ui(page, stack, "#/runs")
    page.click("#new-run")
    model = stack.get(f"/v1/base-models/{MODEL}").json()
    startable = [r for r in model["startableRuns"] if r["restore"] == "none"]  # branches start from a snapshot
    expect(page.locator("table.startable tbody tr")).to_have_count(len(startable))
    sft = next(r for r in startable if r["method"] == "sft")
    page.click(f"tr[data-startable='sft/{sft['gpus']}/{sft['precision']}'] button.use")
    assert page.input_value("#run-form select[data-field=method]") == "sft"
    assert page.input_value("#run-form select[data-field=precision]") == sft["precision"]
    assert page.input_value("#run-form select[data-field='execution.pool']") == sft["pools"][0]
    assert page.input_value("#run-form [data-field='execution.gpus']") == str(sft["gpus"])
    page.select_option("#run-form select[data-field=dataset]", made["sample"])

    page.fill("#run-form [data-field='hyperparameters.maxSteps']", "0")
    # grpo's part of the form, sent as the plan's grpo fields (refused here for its 0 steps: nothing trains)
    expect(page.locator("#run-form .grpo-part")).to_be_hidden()
    page.select_option("#run-form select[data-field=method]", "grpo")
    page.fill("#run-form [data-field='grpo.rewards']", "exact_match, length")
    page.fill("#run-form [data-field='grpo.numGenerations']", "2")
    sent = submit_and_catch(page, "run-form", "/v1/runs")
    body = json.loads(sent.post_data)
    assert body["method"] == "grpo" and body["grpo"] == {"rewards": [{"function": "exact_match"}, {"function": "length"}],
                                                         "numGenerations": 2}
    expect(page.locator("#run-form [data-error-for='hyperparameters.maxSteps']")).not_to_have_text("")
    page.select_option("#run-form select[data-field=method]", "sft")
    expect(page.locator("#run-form .grpo-part")).to_be_hidden()

    page.fill("#run-form [data-field='adapter.rank']", "5000")
    error = replay(stack, submit_and_catch(page, "run-form", "/v1/runs"))
    for field in ("hyperparameters.maxSteps", "adapter.rank"):  # each bad field beside its input
        expect(page.locator(f"#run-form [data-error-for='{field}']")).to_have_text(
            "; ".join(error["details"]["fields"][field]))
        expect(page.locator(f"#run-form [data-field='{field}']")).to_have_class("invalid")
    shoot(page, "new-run")

    page.fill("#run-form [data-field='hyperparameters.maxSteps']", "4")
    page.fill("#run-form [data-field='adapter.rank']", "")
    page.fill("#run-form textarea[data-field=plan]", '{"execution": {"pool": "nowhere"}}')
    error = replay(stack, submit_and_catch(page, "run-form", "/v1/runs"))
    assert error["details"]["field"] == "execution.pool"
    expect(page.locator("#run-form [data-error-for='execution.pool']")).to_have_text(error["message"])
    expect(page.locator("#run-form [data-error-for='hyperparameters.maxSteps']")).to_have_text("")
    page.fill("#run-form textarea[data-field=plan]", "{")
    page.click("#run-form button[type=submit]")
    expect(page.locator("#run-form [data-error-for=plan]")).to_contain_text("not JSON")

    page.fill("#run-form textarea[data-field=plan]", "")
    page.fill("#run-form [data-field=name]", "form-run")
    page.fill("#run-form [data-field='hyperparameters.learningRate']", "0.003")
    page.fill("#run-form [data-field='snapshots.everySteps']", "2")
    page.click("#run-form button[type=submit]")
    page.wait_for_url(lambda url: "#/runs/run-" in url)
    run = wait_terminal(stack, page.url.rsplit("/", 1)[1])
    assert run["status"] == "SUCCEEDED", run
    plan = run["plan"]
    assert (run["name"] if "name" in run else plan["name"]) == "form-run"
    assert plan["dataset"] == made["sample"] and plan["hyperparameters"]["maxSteps"] == 4
    assert plan["hyperparameters"]["learningRate"] == 0.003 and plan["snapshots"]["everySteps"] == 2
    made["run"] = run


def test_the_plan_panel_marks_defaults_and_diffs_a_branch_against_its_parent(page, stack, made):
    run = made["run"]
    open_ui(page, stack, f"#/runs/{run['id']}")
    page.click("#plan-panel > summary")
    row = lambda path: page.locator(f"#plan-panel tr[data-path='{path}']")  # noqa: E731
    expect(row("hyperparameters.batchSize")).to_have_class("default")
    expect(row("hyperparameters.batchSize").locator(".tag")).to_have_text("default")
    expect(row("hyperparameters.maxSteps").locator(".value")).to_have_text("4")
    expect(row("hyperparameters.maxSteps")).not_to_have_class("default")
    expect(row("hyperparameters.learningRate").locator(".value")).to_have_text("0.003")
    defaults = stack.get("/v1/plans/defaults").json()["defaults"]
    leaves = flatten(run["plan"])
    marked = {p for p, v in leaves.items() if p in defaults and v == defaults[p]}
    assert set(page.locator("#plan-panel tr.default").evaluate_all("rows => rows.map(r => r.dataset.path)")) == marked

    snapshot = sorted(stack.get(f"/v1/snapshots?run={run['id']}").json()["items"], key=lambda s: s["step"])[0]
    body = {k: v for k, v in run["plan"].items() if v is not None and k != "name"}
    body["restore"] = {"snapshot": snapshot["id"], "what": "weights"}
    body["hyperparameters"] = {**run["plan"]["hyperparameters"], "maxSteps": 2, "learningRate": 0.001}
    branch = stack.post("/v1/runs", json=body).json()
    assert "id" in branch, branch
    open_ui(page, stack, f"#/runs/{branch['id']}")
    page.click("#plan-panel > summary")
    ours, theirs = flatten(branch["plan"]), flatten(run["plan"])
    changed = {p for p in set(ours) | set(theirs) if ours.get(p) != theirs.get(p)}
    assert {"hyperparameters.maxSteps", "hyperparameters.learningRate", "restore.snapshot"} <= changed
    expect(page.locator("#plan-panel tr.changed")).to_have_count(len(changed))
    assert set(page.locator("#plan-panel tr.changed").evaluate_all("rows => rows.map(r => r.dataset.path)")) == changed
    expect(row("hyperparameters.learningRate").locator(".parent-value")).to_have_text("0.003changed")
    page.check("#plan-only-changed")
    expect(page.locator("#plan-panel tr[data-path]:visible")).to_have_count(len(changed))
    shoot(page, "plan")
    wait_terminal(stack, branch["id"])


def flatten(value, prefix: str = "") -> dict:
    """The plan panel's leaves: nested objects by dotted path, lists and scalars as they are."""
    if isinstance(value, dict):
        out = {}
        for key, inner in value.items():
            out.update(flatten(inner, f"{prefix}.{key}" if prefix else key))
        return out
    return {prefix: value}


def test_a_snapshots_actions_evaluate_download_branch_and_serve_it(page, stack, made, tmp_path):
    run = made["run"]
    snapshot = sorted(stack.get(f"/v1/snapshots?run={run['id']}").json()["items"], key=lambda s: s["step"])[0]
    open_ui(page, stack, f"#/runs/{run['id']}")
    actions = page.locator(f"#snapshots tr[data-snapshot='{snapshot['id']}'] .snapshot-actions")

    actions.locator(".evaluate").click()
    page.select_option("#evaluate-form select[data-field=dataset]", made["small"])
    page.click("#evaluate-form button[type=submit]")
    listed = page.locator("#evaluations tr[data-evaluation]")
    expect(listed).to_have_count(1)
    evaluation = stack.get(f"/v1/evaluations/{listed.get_attribute('data-evaluation')}").json()
    assert (evaluation["snapshot"], evaluation["dataset"], evaluation["model"]) == (snapshot["id"], made["small"], MODEL)
    expect(listed.locator(".badge")).to_have_text("SUCCEEDED", timeout=180_000)

    with page.expect_download() as got:
        actions.locator(".download").click()
    assert got.value.suggested_filename == f"{snapshot['id']}-adapter.tar.gz"
    kept = tmp_path / "adapter.tar.gz"
    got.value.save_as(kept)
    with tarfile.open(kept) as archive:
        assert {"adapter_config.json", "adapter_model.safetensors"} <= {m.name.rsplit("/", 1)[-1] for m in archive}

    actions.locator(".branch-from").click()
    assert page.input_value("#branch-form select[name=snapshot]") == snapshot["id"]
    shoot(page, "snapshot-actions")

    actions.locator(".serve").click()
    page.wait_for_url(lambda url: "#/endpoints/ep-" in url)
    endpoint = page.url.rsplit("/", 1)[1]
    try:
        doc = stack.get(f"/v1/endpoints/{endpoint}").json()
        assert (doc["model"], doc["snapshot"]) == (MODEL, snapshot["id"])
        expect(page.locator("#endpoint-phase")).to_have_text("READY", timeout=120_000)
    finally:
        requests.delete(f"{stack.api_url}/v1/endpoints/{endpoint}", headers=stack.headers(), timeout=30)


def test_the_endpoint_form_places_its_error_then_starts_one(page, stack):
    open_ui(page, stack, "#/endpoints")
    page.click("#new-endpoint > summary")
    page.fill("#endpoint-form [data-field=name]", "ep-mine")
    error = replay(stack, submit_and_catch(page, "endpoint-form", "/v1/endpoints"))
    assert error["details"]["field"] == "name"
    # beside the field: its problems, as a plan's are (the message names the field: said by the label here)
    expect(page.locator("#endpoint-form [data-error-for=name]")).to_have_text(
        "; ".join(error["details"].get("fields", {}).get("name", [error["message"]])))
    page.fill("#endpoint-form [data-field=snapshot]", "snap-nothing")
    page.fill("#endpoint-form [data-field=name]", "from-form")
    error = replay(stack, submit_and_catch(page, "endpoint-form", "/v1/endpoints"))
    expect(page.locator("#endpoint-form [data-error-for=snapshot]")).to_have_text(error["message"])
    expect(page.locator("#endpoint-form [data-error-for=name]")).to_have_text("")
    shoot(page, "endpoint-form")

    page.fill("#endpoint-form [data-field=snapshot]", "")
    page.fill("#endpoint-form [data-field=idleTimeout]", "0")
    page.click("#endpoint-form button[type=submit]")
    page.wait_for_url(lambda url: "#/endpoints/ep-" in url)
    endpoint = page.url.rsplit("/", 1)[1]
    try:
        doc = stack.get(f"/v1/endpoints/{endpoint}").json()
        assert (doc["name"], doc["model"], doc["snapshot"], doc["idleTimeout"]) == ("from-form", MODEL, None, 0)
        expect(page.locator("#endpoint-phase")).to_have_text("READY", timeout=120_000)
    finally:
        requests.delete(f"{stack.api_url}/v1/endpoints/{endpoint}", headers=stack.headers(), timeout=30)


def test_the_root_address_leads_to_the_dashboard(page, stack):
    page.goto(f"{stack.api_url}/")
    assert page.url == f"{stack.api_url}/ui/"
    expect(page.locator("#token-dialog")).to_be_visible()
