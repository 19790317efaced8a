"""Where no browser can be installed, the browser tests skip saying why (tests/ui/chromium.py)."""

from __future__ import annotations

import subprocess

from tests.ui import chromium


def test_a_browser_on_path_is_used_as_it_is(monkeypatch):
    monkeypatch.setattr(chromium.shutil, "which", lambda name: "/opt/bin/chromium" if name == "chromium" else None)
    monkeypatch.setattr(chromium, "_apt", lambda *args: (_ for _ in ()).throw(AssertionError("apt-get ran")))
    assert chromium.ensure_chromium() == ("/opt/bin/chromium", "")


def test_without_apt_get_or_root_it_says_why(monkeypatch):
    monkeypatch.setattr(chromium.shutil, "which", lambda name: None)
    assert chromium.ensure_chromium() == (
        None, "no chromium on PATH and no apt-get to install Debian's chromium package")
    monkeypatch.setattr(chromium.shutil, "which", lambda name: "/usr/bin/apt-get" if name == "apt-get" else None)
    monkeypatch.setattr(chromium.os, "geteuid", lambda: 1000)
    assert chromium.ensure_chromium() == (None, "no chromium on PATH, and installing Debian's chromium package "
                                                "needs root (apt-get install chromium)")


def test_a_failed_install_updates_the_package_lists_once_then_says_what_apt_get_said(monkeypatch):
    calls = []
    monkeypatch.setattr(chromium.shutil, "which", lambda name: "/usr/bin/apt-get" if name == "apt-get" else None)
    monkeypatch.setattr(chromium.os, "geteuid", lambda: 0)

    def apt(*args):
        calls.append(args)
        return subprocess.CompletedProcess(args, 100, "", "E: Unable to locate package chromium")

    monkeypatch.setattr(chromium, "_apt", apt)
    assert chromium.ensure_chromium() == (None, "apt-get install chromium failed: E: Unable to locate package chromium")
    assert [c[0] for c in calls] == ["install", "update", "install"]
