"""Writes that are never seen half done.

A campaign can be killed at any moment (SIGINT, SIGTERM, a CI timeout). Every file it
leaves behind (report, state, corpus entries) is therefore written to a temporary name
in the same folder and renamed into place: rename is atomic on one file system, so a
reader sees either the old file or the new one, never a torn one.
"""

import json
import os
import tempfile


def write_text(path, text):
    """Writes text to path atomically (temp file in the same folder, fsync, rename)."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path, value):
    write_text(path, json.dumps(value, indent=2, sort_keys=True) + "\n")


def read_json(path, default=None):
    """Reads JSON, or returns default when the file is missing or unreadable as JSON.

    A corrupt state file must not stop the nightly: it starts afresh instead.
    """
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def move_file_into(src, folder):
    """Moves one file into folder under the same name, atomically (rename).

    Returns the destination path. src and folder must be on one file system.
    """
    os.makedirs(folder, exist_ok=True)
    dest = os.path.join(folder, os.path.basename(src))
    os.replace(src, dest)
    return dest
