"""Writes that are never seen half done.

A campaign can be killed at any moment (SIGINT, SIGTERM, a CI timeout). Every file it
leaves behind (report, state, corpus entries) is therefore written to a temporary name
in the same folder and renamed into place: rename is atomic on one file system, so a
reader sees either the old file or the new one, never a torn one.

What a campaign leaves is meant to be read by others (a CI artifact, a web server, a
colleague's account): files are written 0644 and folders 0755, whatever the umask, and
make_readable() sets those modes on a whole folder.
"""

import json
import os
import stat
import tempfile

FILE_MODE = 0o644
DIR_MODE = 0o755


def write_text(path, text):
    """Writes text to path atomically (temp file in the same folder, fsync, rename)."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=folder)
    try:
        os.fchmod(fd, FILE_MODE)  # mkstemp creates 0600
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


def make_readable(folder, skip=()):
    """Sets every file under folder to 0644 and every folder to 0755, the top one
    included (nothing a campaign writes is a program); top-level names in skip are left
    alone."""
    def fix(path, want):
        try:
            st = os.lstat(path)
            if not stat.S_ISLNK(st.st_mode) and stat.S_IMODE(st.st_mode) != want:
                os.chmod(path, want)
        except OSError:
            pass  # a file another step is replacing right now

    fix(folder, DIR_MODE)
    for root, dirs, files in os.walk(folder):
        if root == folder:
            dirs[:] = [d for d in dirs if d not in skip]
            files = [f for f in files if f not in skip]
        for d in dirs:
            fix(os.path.join(root, d), DIR_MODE)
        for f in files:
            fix(os.path.join(root, f), FILE_MODE)
