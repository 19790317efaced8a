"""API errors render as `error: MESSAGE` (+ detail lines), exit code 1, never a traceback."""

from __future__ import annotations

from click.testing import CliRunner

from shared.process.ports import free_port
from training_cli.main import cli


def test_404_renders_the_message(training):
    result = training("runs", "get", "run-nope")
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == "error: run run-nope does not exist"
    assert "Traceback" not in result.output


def test_422_renders_the_resolvers_sentence(training, api, tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text('{"messages": []}\n')
    ds = training("datasets", "create", str(data), "-o", "json")
    dataset_id = __import__("json").loads(ds.output)["id"]
    result = training("runs", "create", "--method", "sft", "--dataset", dataset_id, "--gpus", "4")
    assert result.exit_code == 1
    assert "error: this deployment does not train sft on 4 GPU(s)" in result.output
    assert api.state["runs"] == {}


def test_dataset_faults_are_listed_line_by_line(training, tmp_path):
    data = tmp_path / "bad.jsonl"
    data.write_text('{"messages": []}\nnot json\n{"ok": 1}\n{broken\n')
    result = training("datasets", "create", str(data))
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "error: dataset line 2, field (line): is not valid JSON",
        "  line 2, field (line): is not valid JSON",
        "  line 4, field (line): is not valid JSON",
    ]


def test_bad_token_is_an_error_not_a_traceback(training):
    result = training("info", env={"TRAINING_TOKEN": "wrong"})
    assert result.exit_code == 1
    assert result.output.startswith("error: this request needs a valid token")


def test_unreachable_api_says_how_to_start_it():
    url = f"http://127.0.0.1:{free_port()}"
    result = CliRunner().invoke(cli, ["--api-url", url, "runs", "get"], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"error: cannot reach the trainer API at {url} (is the stack up? run: training up)"
    )


def test_non_json_error_body_is_still_an_error():
    import requests

    from training_cli.client import _api_error

    response = requests.Response()
    response.status_code = 502
    response._content = b"<html>Bad Gateway</html>"
    error = _api_error(response)
    assert error.message == "the trainer API answered HTTP 502: <html>Bad Gateway</html>"
    assert error.status == 502
