import pytest

from tests.e2e.stack import start_stack, stop_stack


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_url):
    stack = start_stack(tmp_path_factory.mktemp("stack"), redis_url)
    yield stack
    stop_stack(stack)
