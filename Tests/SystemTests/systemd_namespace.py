"""Boots a real systemd as PID 1 of its own namespaces, for rpcd's system tests.

The machine's files are shared, so everything that could write to them is kept inside the namespace:

- mount, PID, UTS, IPC, network and cgroup namespaces (`unshare`); mounts are private;
- private tmpfs on /run and /tmp; /etc and /var are overlays whose changes land in that tmpfs (so the
  `rpcd` user that systemd-sysusers adds, the journal and systemd's state never reach the disk);
- /usr/local is a read-only overlay of the staged `make install DESTDIR=...` tree over the real one;
- every boot unit that would touch the machine (tmpfiles, sysctl, remount-fs, timers, other daemons...) is
  masked in /run/systemd/system, and systemd starts only basic.target;
- systemd's cgroup is a fresh sub-cgroup, seen as the root inside the cgroup namespace.

With `root=DIR` it boots the systemd of another root file system instead (a Debian root made with
debootstrap, for the package test): DIR is used as it is (give it a throw-away copy), with private /proc,
/run, /tmp, a minimal /dev of bound device nodes, and the host's /sys read-only, pivoted to as "/".

systemd ignores SIGTERM as PID 1; `close()` ends it with SIGKILL, which ends the whole PID namespace, and
removes the cgroups it made. Every wait is bounded and polls for an event.
"""

import os
import shlex
import signal
import subprocess
import textwrap
import time

SYSTEMD = "/lib/systemd/systemd"

# Units masked whatever the machine has installed; every unit wanted by the host's own targets in /etc is
# masked too (see _masks).
ALWAYS_MASKED = [
    "systemd-tmpfiles-setup.service", "systemd-tmpfiles-setup-dev.service", "systemd-tmpfiles-clean.service",
    "systemd-tmpfiles-clean.timer", "systemd-remount-fs.service", "systemd-sysctl.service",
    "systemd-modules-load.service", "systemd-binfmt.service", "timers.target", "getty.target",
    "avahi-daemon.socket", "avahi-daemon.service", "systemd-timesyncd.service", "systemd-pstore.service",
    "postgresql.service", "e2scrub_all.timer", "e2scrub_all.service", "e2scrub_reap.service",
    "apt-daily.timer", "apt-daily.service", "apt-daily-upgrade.timer", "apt-daily-upgrade.service",
    "fstrim.timer", "fstrim.service", "systemd-random-seed.service", "systemd-update-utmp.service",
    "systemd-update-utmp-runlevel.service", "systemd-journal-flush.service", "systemd-sysusers.service",
    "systemd-firstboot.service", "systemd-machine-id-commit.service", "systemd-hwdb-update.service",
    "ldconfig.service", "systemd-udevd.service", "systemd-udevd-control.socket", "systemd-udevd-kernel.socket",
    "systemd-udev-trigger.service", "systemd-udev-settle.service", "dev-hugepages.mount", "dev-mqueue.mount",
    "sys-kernel-config.mount", "sys-kernel-debug.mount", "sys-kernel-tracing.mount",
    "sys-fs-fuse-connections.mount", "proc-sys-fs-binfmt_misc.automount", "proc-sys-fs-binfmt_misc.mount",
    "tmp.mount", "swap.target", "kmod-static-nodes.service", "systemd-repart.service",
    "systemd-pcrphase.service", "systemd-pcrphase-sysinit.service", "systemd-initctl.socket",
    "systemd-ask-password-console.path", "systemd-ask-password-wall.path", "cryptsetup.target",
    "veritysetup.target", "integritysetup.target", "man-db.timer", "dpkg-db-backup.timer", "hwclock.service",
    "procps.service", "systemd-journald-audit.socket", "console-getty.service", "remote-fs.target",
    "systemd-logind.service", "systemd-networkd.service", "systemd-resolved.service", "cron.service",
    "ssh.service", "ssh.socket", "rsyslog.service", "syslog.socket",
]


class NamespaceError(Exception):
    pass


class SystemdNamespace:
    """A running systemd in namespaces. `run(...)` executes a command inside; `close()` ends it all."""

    def __init__(self, workdir, stage=None, root=None):
        self.workdir = os.path.abspath(workdir)
        self.stage = os.path.abspath(stage) if stage else None
        self.root = os.path.abspath(root) if root else None
        self.unshare = None
        self.pid = None
        self.cgroup = None
        self.log_path = os.path.join(self.workdir, "systemd.log")

    # Lifecycle ---------------------------------------------------------------------------------------

    @classmethod
    def booted(cls, workdir, timeout=90, **options):
        """A namespace with systemd booted, or nothing left behind when the boot fails."""
        namespace = cls(workdir, **options)
        try:
            namespace.boot(timeout=timeout)
        except Exception:
            namespace.close()
            raise
        return namespace

    def boot(self, timeout=90):
        os.makedirs(self.workdir, exist_ok=True)
        self.cgroup = self._make_cgroup()
        script = os.path.join(self.workdir, "boot.sh")
        with open(script, "w") as file:
            file.write(self._boot_script())
        log = open(self.log_path, "wb")
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "container": "rpcd-test", "LANG": "C.UTF-8"}
        # The shell moves itself into the fresh cgroup before unsharing, so that cgroup is the namespace's root.
        command = (
            f"echo $$ > {shlex.quote(self.cgroup)}/cgroup.procs && exec unshare --cgroup --pid --fork --mount "
            f"--mount-proc --uts --ipc --net --propagation private /bin/bash {shlex.quote(script)}")
        self.unshare = subprocess.Popen(
            ["/bin/sh", "-c", command], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while self.pid is None:
            self._check_alive()
            self.pid = self._init_pid()
            if self.pid is None:
                self._pause(deadline, "systemd did not start")
        # Wait until PID 1 is systemd (the boot script execs it) and the boot job is done.
        state = ""
        while True:
            self._check_alive()
            try:
                with open(f"/proc/{self.pid}/comm") as file:
                    comm = file.read().strip()
            except OSError:
                comm = ""
            if comm == "systemd":
                result = self.run("systemctl", "is-system-running", check=False, timeout=10)
                state = result.stdout.strip()
                if state in ("running", "degraded"):
                    return state
            self._pause(deadline, f"systemd did not finish booting (state {state!r})")

    def close(self):
        """Kills systemd (and so the whole PID namespace) and removes the cgroups. Safe to call twice."""
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.unshare is not None:
            try:
                os.killpg(self.unshare.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.unshare.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self.pid = None
        if self.cgroup:
            self._remove_cgroup(self.cgroup)
            self.cgroup = None

    # Commands inside ---------------------------------------------------------------------------------

    def command(self, *args):
        """The argv that runs ARGS inside the namespaces, as root."""
        if self.pid is None:
            raise NamespaceError("systemd is not running")
        chroot = ["-r", "-w"] if self.root else []  # the root systemd pivoted to
        return ["nsenter", "-t", str(self.pid), "-m", "-p", "-u", "-i", "-n", "-C", *chroot, "--",
                "/usr/bin/env", "-i", "PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8",
                "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0", *args]

    def run(self, *args, check=True, timeout=60, input=None):
        result = subprocess.run(
            self.command(*args), input=input, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise NamespaceError(
                f"{' '.join(args)} exited {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}")
        return result

    def popen(self, *args):
        return subprocess.Popen(self.command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def show(self, unit, *properties):
        """`systemctl show` properties of UNIT as a dict."""
        result = self.run("systemctl", "show", unit, "-p", ",".join(properties))
        return dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)

    def wait_for(self, predicate, timeout, what, interval=0.1):
        """Polls PREDICATE until it returns something true; returns it, or raises naming WHAT."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise NamespaceError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(interval)

    # Internals ---------------------------------------------------------------------------------------

    def _pause(self, deadline, what):
        if time.monotonic() > deadline:
            raise NamespaceError(f"{what}; see {self.log_path}:\n{self._log_tail()}")
        time.sleep(0.1)

    def _check_alive(self):
        if self.unshare.poll() is not None:
            raise NamespaceError(f"the namespace exited with {self.unshare.returncode}:\n{self._log_tail()}")

    def _log_tail(self):
        try:
            with open(self.log_path, errors="replace") as file:
                return "".join(file.readlines()[-40:])
        except OSError:
            return ""

    def _init_pid(self):
        """The host PID of the namespace's PID 1: unshare's only child."""
        try:
            with open(f"/proc/{self.unshare.pid}/task/{self.unshare.pid}/children") as file:
                children = file.read().split()
        except OSError:
            return None
        return int(children[0]) if children else None

    @staticmethod
    def _cgroup2_root():
        for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
            if os.path.exists(os.path.join(root, "cgroup.procs")):
                return root
        raise NamespaceError("no cgroup2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified")

    def _make_cgroup(self):
        with open("/proc/self/cgroup") as file:
            own = next((line.split(":", 2)[2].strip() for line in file if line.startswith("0::")), "/")
        path = os.path.join(self._cgroup2_root(), own.lstrip("/"), f"rpcd-systemtest-{os.getpid()}")
        os.makedirs(path, exist_ok=True)
        return path

    def _remove_cgroup(self, path):
        deadline = time.monotonic() + 30
        while os.path.isdir(path):
            for current, directories, _ in os.walk(path, topdown=False):
                for directory in directories:
                    try:
                        os.rmdir(os.path.join(current, directory))
                    except OSError:
                        pass
            try:
                os.rmdir(path)
            except OSError:
                if time.monotonic() > deadline:
                    raise NamespaceError(f"cannot remove cgroup {path}: processes left in it?")
                time.sleep(0.1)

    def _masks(self):
        masks = set(ALWAYS_MASKED)
        for root in (os.path.join(self.root or "/", "etc/systemd/system"),):
            if not os.path.isdir(root):
                continue
            for entry in os.listdir(root):
                if entry.endswith(".wants") or entry.endswith(".requires"):
                    masks.update(os.listdir(os.path.join(root, entry)))
        return sorted(masks)

    # Every boot script starts here: nothing mounted inside propagates out, a host name and loopback of its own.
    PRELUDE = "set -eu\nmount --make-rprivate /\nhostname rpcd-test\nip link set lo up\n"

    def _boot_script(self):
        if self.root:
            return self._root_boot_script()
        stage = shlex.quote(self.stage)
        masks = " ".join(shlex.quote(unit) for unit in self._masks())
        return self.PRELUDE + textwrap.dedent(f"""\
            mount -t tmpfs -o mode=0755 tmpfs /run
            # The stage may live under /tmp (a checkout there): reach it through /run before /tmp is covered.
            mkdir -p /run/rpcd-systemtest-stage
            mount --bind {stage} /run/rpcd-systemtest-stage
            mount -t tmpfs -o mode=1777 tmpfs /tmp
            # Inside the cgroup namespace a fresh mount shows only our own sub-cgroup.
            mount -t cgroup2 cgroup2 /sys/fs/cgroup
            mkdir -p /tmp/.overlay/etc/upper /tmp/.overlay/etc/work /tmp/.overlay/var/upper /tmp/.overlay/var/work
            mount -t overlay overlay -o lowerdir=/run/rpcd-systemtest-stage/etc:/etc,upperdir=/tmp/.overlay/etc/upper,workdir=/tmp/.overlay/etc/work /etc
            mount -t overlay overlay -o lowerdir=/var,upperdir=/tmp/.overlay/var/upper,workdir=/tmp/.overlay/var/work /var
            if [ -d /var/log/journal ]; then mount -t tmpfs tmpfs /var/log/journal; fi
            mount -t overlay overlay -o lowerdir=/run/rpcd-systemtest-stage/usr/local:/usr/local /usr/local
            # The overlays hold on to their lower layers; the path itself is not needed any more.
            umount -l /run/rpcd-systemtest-stage && rmdir /run/rpcd-systemtest-stage
            mkdir -p /run/systemd/system
            for unit in {masks}; do ln -sf /dev/null "/run/systemd/system/$unit"; done
            # What installing a package would do, inside: the user, the directories, the catalog.
            systemd-sysusers /usr/local/lib/sysusers.d/rpcd.conf
            systemd-tmpfiles --create /usr/local/lib/tmpfiles.d/rpcd.conf
            journalctl --update-catalog
            exec {SYSTEMD} --system --unit=basic.target --log-target=journal --log-level=notice
            """)

    def _root_boot_script(self):
        root = shlex.quote(self.root)
        masks = " ".join(shlex.quote(unit) for unit in self._masks())
        return self.PRELUDE + textwrap.dedent(f"""\
            R={root}
            # The root must be a mount point of its own, and systemd must run with it as "/" (pivot_root, not
            # chroot): the units' sandboxing (ProtectSystem=, PrivateTmp=...) remounts "/" in namespaces of its own.
            mount --bind "$R" "$R"
            mount -t proc proc "$R/proc"
            mount --rbind /sys "$R/sys"
            mount -o remount,bind,ro "$R/sys"
            # Inside the cgroup namespace a fresh mount shows only our own sub-cgroup.
            mount -t cgroup2 cgroup2 "$R/sys/fs/cgroup"
            mount -t tmpfs -o mode=0755 tmpfs "$R/dev"
            for node in null zero full random urandom tty ptmx; do
                touch "$R/dev/$node"; mount --bind "/dev/$node" "$R/dev/$node"
            done
            mkdir "$R/dev/pts" "$R/dev/shm"
            mount -t tmpfs -o mode=1777 tmpfs "$R/dev/shm"
            ln -s /proc/self/fd "$R/dev/fd"
            mount -t tmpfs -o mode=0755 tmpfs "$R/run"
            mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"
            mkdir -p "$R/run/systemd/system" "$R/run/rpcd-old-root"
            for unit in {masks}; do ln -sf /dev/null "$R/run/systemd/system/$unit"; done
            cd "$R"
            pivot_root . run/rpcd-old-root
            umount -l /run/rpcd-old-root
            rmdir /run/rpcd-old-root
            exec /lib/systemd/systemd --system --unit=basic.target --log-target=journal --log-level=notice
            """)
