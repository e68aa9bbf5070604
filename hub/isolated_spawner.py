"""Each user's server as one Unix user, isolated as pods are: the hub of HUB_EXCHANGE=ngshare.

On Zero to JupyterHub every server runs as the same Unix user (``jovyan``), each
in a pod of its own. :class:`IsolatedSpawner` is that on one machine: every
user's server runs as the one Unix user ``shared_user``, each in its own
bubblewrap, where it sees

- its own processes only (its own pid namespace and ``/proc``), so no server can
  read another's environment (its hub token) or signal it;
- its own ``/tmp`` and ``/dev/shm``, and its own home, ``/home/<user>``, the only
  place it may write (``homes/<user>`` on the machine, made for it);
- nothing of anyone's home: ``/home``, ``/root``, ``/run`` and the homes' folder
  are empty; the rest of the machine read-only.

Such servers share no filesystem with each other or with the instructor, so
nbgrader's exchange is ngshare's service (:mod:`autograder.serve.ngshare`), which
knows each request's user from their hub token.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid
from traitlets import List, Unicode

HIDDEN = ("/home", "/root", "/run", "/var/tmp")  #: empty in every server's view


class IsolatedSpawner(LocalProcessSpawner):
    """Every server as ``shared_user``, each in a bubblewrap of its own (see the module)."""

    shared_user = Unicode(
        "jovyan", help="The one Unix user every server runs as (made if missing)"
    ).tag(config=True)
    homes = Unicode(
        "/srv/tiny-gpt-08/homes", help="The folder of the users' homes, one folder each"
    ).tag(config=True)
    visible = List(
        Unicode(), help="Folders every server sees, read-only, though hidden (the users' env)"
    ).tag(config=True)

    def host_home(self) -> Path:
        """The user's home on the machine."""
        return Path(self.homes) / self.user.name

    def home(self) -> str:
        """The user's home as their server sees it."""
        return f"/home/{self.user.name}"

    def make_preexec_fn(self, name: str):  # noqa: ANN201 (JupyterHub's)
        return set_user_setuid(self.shared_user, chdir=False)

    def user_env(self, env: dict[str, str]) -> dict[str, str]:
        env.update(USER=self.user.name, HOME=self.home(), SHELL="/bin/bash")
        return env

    def sandbox(self) -> list[str]:
        """bubblewrap's arguments for this user's server (see the module's docstring)."""
        args = ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc"]
        args += ["--unshare-uts", "--unshare-cgroup-try", "--ro-bind", "/", "/"]
        args += ["--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc", "--tmpfs", "/tmp"]
        for path in [*HIDDEN, self.homes]:
            if os.path.isdir(path):
                args += ["--tmpfs", path]
        for path in self.visible:  # the users' environment, wherever it is (under /tmp too)
            args += ["--ro-bind", path, path]
        args += ["--bind", str(self.host_home()), self.home(), "--chdir", self.home()]
        return [*args, "--setenv", "HOME", self.home(), "--"]

    def prepare_home(self) -> None:
        """The user's home, theirs alone (0700, owned by the shared user)."""
        user = pwd.getpwnam(self.shared_user)
        root = Path(self.homes)
        root.mkdir(parents=True, exist_ok=True)
        root.chmod(0o711)  # servers pass through it to their own; none lists it
        home = self.host_home()
        home.mkdir(exist_ok=True)
        os.chown(home, user.pw_uid, user.pw_gid)
        home.chmod(0o700)

    async def start(self):  # noqa: ANN201 (JupyterHub's)
        self.prepare_home()
        configured = list(self.cmd)
        self.cmd = [*self.sandbox(), *configured]
        try:
            return await super().start()
        finally:
            self.cmd = configured

    async def move_certs(self, paths):  # noqa: ANN001, ANN201 (JupyterHub's; no internal SSL here)
        return paths


def ensure_user(name: str) -> None:
    """Make the shared Unix user ``name`` if the machine has none (as root)."""
    try:
        pwd.getpwnam(name)
        return
    except KeyError:
        pass
    if shutil.which("useradd") is None or os.geteuid() != 0:
        raise SystemExit(f"error: no Unix user {name} to run the servers as: make one")
    subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                    "--shell", "/usr/sbin/nologin", name], check=True)  # fmt: skip
    print(f"made the Unix user {name}, which every server runs as", flush=True)
