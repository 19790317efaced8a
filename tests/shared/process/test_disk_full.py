"""Telling a write that met a full disk from any other failure (shared/process/disk_full.py), with the
errors the real writers raise on a really full tmpfs (tests/conftest.small_disk): Python's own
OSError, safetensors' SafetensorError (which says it in words), torch.save's RuntimeError (which
does not: the filesystem is asked)."""

from __future__ import annotations

import errno

import pytest

from shared.process.disk_full import disk_full, no_space_left
from tests.conftest import fill_disk


def _raised(write) -> BaseException:
    with pytest.raises(Exception) as caught:
        write()
    return caught.value


def test_each_writer_s_error_on_a_full_disk_reads_as_a_full_disk(small_disk):
    import torch
    from safetensors.torch import save_file

    disk = small_disk(2)
    assert not no_space_left(disk)
    filler = fill_disk(disk)
    assert no_space_left(disk)

    own = _raised(lambda: (disk / "x.json").write_text("{}" * 10_000))
    assert isinstance(own, OSError) and own.errno == errno.ENOSPC and disk_full(own)

    safetensors = _raised(lambda: save_file({"w": torch.zeros(10_000)}, str(disk / "a.safetensors")))
    assert type(safetensors).__name__ == "SafetensorError" and disk_full(safetensors)

    silent = _raised(lambda: torch.save({"w": torch.zeros(10_000)}, disk / "o.pt"))
    assert isinstance(silent, RuntimeError) and "No space" not in str(silent)
    assert not disk_full(silent) and no_space_left(disk)  # the filesystem tells what the error does not

    filler.unlink()
    assert not no_space_left(disk)


def test_a_full_disk_is_found_through_the_exceptions_it_caused():
    try:
        try:
            raise OSError(errno.EDQUOT, "Disk quota exceeded")
        except OSError as exc:
            raise RuntimeError("could not write the checkpoint") from exc
    except RuntimeError as wrapped:
        assert disk_full(wrapped)
    assert not disk_full(RuntimeError("CUDA out of memory"))
    assert not disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not disk_full(None)
