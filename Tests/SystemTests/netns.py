"""Private little networks for the Avahi system tests: network namespaces joined by veth pairs, each "host"
with its own host name (UTS namespace), its own /run (mount namespace), its own system D-Bus and its own
avahi-daemon. Nothing here touches the machine's own interfaces: the veth pairs are created directly inside
the namespaces, the namespaces have no other link than loopback, and avahi-daemon is told to use only the
veth. Everything started is stopped and every namespace deleted by Lab.close(), also when a test fails.

Needs root, iproute2 (ip), util-linux (unshare, nsenter), dbus-daemon and avahi-daemon.
"""

import os
import shutil
import signal
import subprocess
import threading
import time

AVAHI_CONF = """\
[server]
use-ipv4=yes
use-ipv6=no
allow-interfaces={interface}
enable-dbus=yes
disallow-other-stacks=yes
ratelimit-interval-usec=1000000
ratelimit-burst=1000

[wide-area]
enable-wide-area=no

[publish]
publish-hinfo=no
publish-workstation=no
publish-addresses=yes
publish-aaaa-on-ipv4=no
publish-a-on-ipv6=no

[reflector]
enable-reflector=no
"""

REQUIRED_TOOLS = ["ip", "unshare", "nsenter", "dbus-daemon", "avahi-daemon", "avahi-browse"]


def missing_prerequisites():
    """What keeps these tests from running here, as a sentence; None when everything is in place."""
    if os.geteuid() != 0:
        return "the Avahi system tests need root (network namespaces)"
    missing = [tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None
               and not os.path.exists("/usr/sbin/" + tool)]
    if missing:
        return "missing tools: " + ", ".join(missing) + " (run scripts/install-deps.sh)"
    return None


def wait_for(predicate, timeout, interval=0.05, what="condition"):
    """Polls predicate() until it returns something truthy, at most `timeout` seconds; returns that value or
    raises TimeoutError naming `what`. Bounded in time and in the number of polls."""
    deadline = time.monotonic() + timeout
    for _ in range(int(timeout / interval) + 2):
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def host_netns_avahi_daemons():
    """PIDs of avahi-daemons running in this process's network namespace (there must never be any)."""
    own = os.readlink("/proc/self/ns/net")
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as comm:
                if comm.read().strip() != "avahi-daemon":
                    continue
            if os.readlink(f"/proc/{entry}/ns/net") == own:
                pids.append(int(entry))
        except OSError:
            continue
    return pids


def run(command, timeout=30, check=True, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=check, **kwargs)


class Host:
    """One simulated machine: a network namespace plus a long-running anchor process holding a private mount
    and UTS namespace. Processes started with `spawn` or `run` enter all three."""

    def __init__(self, lab, name, netns, interface, address):
        self.lab = lab
        self.name = name
        self.netns = netns
        self.interface = interface
        self.address = address
        self.anchor = None
        self.dbus = None
        self.avahi = None
        self.processes = []
        self.directory = os.path.join(lab.directory, name)
        os.makedirs(self.directory, exist_ok=True)

    # -- namespaces --

    def start_anchor(self):
        # A tmpfs over /run hides the machine's D-Bus and avahi sockets and gives this host its own.
        script = (f"hostname {self.name} && mount -t tmpfs -o mode=755 tmpfs /run && "
                  "mkdir -p /run/dbus /run/avahi-daemon /run/rpcd && echo ready && exec sleep infinity")
        self.anchor = subprocess.Popen(
            ["ip", "netns", "exec", self.netns, "unshare", "--mount", "--uts", "--propagation", "private",
             "sh", "-c", script],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        line = self.anchor.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"host {self.name}: namespace setup failed: {self.anchor.stderr.read()}")
        # `ip netns exec` forks, `sh` execs sleep: the process to enter is the child holding the namespaces.
        self.anchor_pid = wait_for(self._find_sleep_pid, 5, what=f"host {self.name}'s anchor process")

    def _find_sleep_pid(self):
        own_uts = os.readlink("/proc/self/ns/uts")
        for pid in [self.anchor.pid] + self._descendants(self.anchor.pid):
            try:
                with open(f"/proc/{pid}/comm") as comm:
                    if comm.read().strip() == "sleep" and os.readlink(f"/proc/{pid}/ns/uts") != own_uts:
                        return pid
            except OSError:
                continue
        return None

    @staticmethod
    def _descendants(pid):
        result = []
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as children:
                for child in children.read().split():
                    result.append(int(child))
                    result.extend(Host._descendants(int(child)))
        except OSError:
            pass
        return result

    def enter(self, command):
        return ["nsenter", "-t", str(self.anchor_pid), "-m", "-u", "-n", "--"] + list(command)

    def path(self, inside):
        """A path inside this host's mount namespace, as seen from outside."""
        return f"/proc/{self.anchor_pid}/root{inside}"

    def run(self, command, timeout=30, check=False, env=None):
        return run(self.enter(command), timeout=timeout, check=check, env=env)

    def spawn(self, command, log_name, env=None):
        log = open(os.path.join(self.directory, log_name), "ab")
        process = subprocess.Popen(self.enter(command), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=env, start_new_session=True)
        log.close()
        process.log_path = os.path.join(self.directory, log_name)
        self.processes.append(process)
        return process

    # -- D-Bus and Avahi --

    def start_dbus(self):
        self.dbus = self.spawn(["dbus-daemon", "--system", "--nofork", "--nopidfile"], "dbus.log")
        wait_for(lambda: os.path.exists(self.path("/run/dbus/system_bus_socket")), 10,
                 what=f"host {self.name}'s D-Bus socket")

    def start_avahi(self, timeout=20, browse_domain=None):
        """avahi-daemon on this host; with `browse_domain`, wide-area browsing of that unicast domain too
        (through the servers of the /etc/resolv.conf this host sees)."""
        conf = os.path.join(self.directory, "avahi-daemon.conf")
        text = AVAHI_CONF.format(interface=self.interface)
        if browse_domain is not None:
            text = text.replace("[server]\n", f"[server]\nbrowse-domains={browse_domain}\n").replace(
                "enable-wide-area=no", "enable-wide-area=yes")
        with open(conf, "w") as file:
            file.write(text)
        log = os.path.join(self.directory, "avahi.log")
        start = len(read(log))
        self.avahi = self.spawn(["avahi-daemon", "-f", conf, "--no-drop-root", "--no-chroot", "--no-rlimits",
                                 "--no-proc-title"], "avahi.log")
        wait_for(lambda: "Server startup complete" in read(log)[start:], timeout,
                 what=f"host {self.name}'s avahi-daemon to start")

    def stop_avahi(self):
        stop(self.avahi)
        self.avahi = None

    def browse(self, type_, timeout=20):
        """`avahi-browse -rpt TYPE` on this host: the resolved instances as dicts."""
        result = self.run(["avahi-browse", "-rpt", "--no-db-lookup", type_], timeout=timeout)
        return parse_browse(result.stdout)

    def close(self):
        for process in reversed(self.processes):
            stop(process)
        if self.anchor is not None:
            stop(self.anchor)
            self.anchor.stdout.close()
            self.anchor.stderr.close()
            self.anchor = None


class Lab:
    """Hosts a, b, ... on one link: 10.231.N.1, .2, ... /24. Use as a context manager."""

    def __init__(self, directory, hosts=("a", "b"), subnet=None, without_dbus=()):
        self.directory = directory
        self.without_dbus = set(without_dbus)
        tag = f"{os.getpid() % 100000}"
        self.prefix = f"rpcdtest-{tag}"
        self.subnet = subnet or f"10.231.{os.getpid() % 200 + 1}"
        self.hosts = {}
        self.netns = []
        self.names = list(hosts)

    def __enter__(self):
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def __getitem__(self, name):
        return self.hosts[name]

    def _build(self):
        if len(self.names) != 2:
            raise ValueError("a lab is two hosts joined by one veth pair")
        for name in self.names:
            netns = f"{self.prefix}-{name}"
            # A namespace of this name can only be left over from a killed run of a process with our pid.
            run(["ip", "netns", "del", netns], check=False)
            run(["ip", "netns", "add", netns])
            self.netns.append(netns)
            run(["ip", "-n", netns, "link", "set", "lo", "up"])
        first, second = self.netns
        # Both ends are created inside the namespaces: the pair never exists in the machine's own namespace.
        run(["ip", "link", "add", "veth0", "netns", first, "type", "veth", "peer", "name", "veth0", "netns", second])
        for index, (name, netns) in enumerate(zip(self.names, self.netns), start=1):
            address = f"{self.subnet}.{index}"
            run(["ip", "-n", netns, "addr", "add", f"{address}/24", "dev", "veth0"])
            run(["ip", "-n", netns, "link", "set", "veth0", "up"])
            host = Host(self, name, netns, "veth0", address)
            self.hosts[name] = host
            host.start_anchor()
        for name, host in self.hosts.items():
            if name not in self.without_dbus:
                host.start_dbus()

    def close(self):
        for host in self.hosts.values():
            try:
                host.close()
            except Exception:
                pass
        for netns in self.netns:
            run(["ip", "netns", "del", netns], check=False)
        self.netns = []


def read(path):
    try:
        with open(path, "rb") as file:
            return file.read().decode("utf-8", "replace")
    except OSError:
        return ""


def stop(process, timeout=10):
    """SIGTERM, then SIGKILL after `timeout` seconds; waits for the exit. Only the process (and its session)
    this code started."""
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout)


def parse_browse(text):
    """The `=` (resolved) lines of `avahi-browse -p` output as dicts with interface, protocol, name, type,
    domain, host, address, port and txt (a dict)."""
    instances = []
    for line in text.splitlines():
        fields = split_parsable(line)
        if len(fields) < 10 or fields[0] != "=":
            continue
        txt = {}
        for item in parse_txt(fields[9]):
            key, _, value = item.partition("=")
            txt.setdefault(key.lower(), value)
        instances.append({"interface": fields[1], "protocol": fields[2], "name": fields[3], "type": fields[4],
                          "domain": fields[5], "host": fields[6], "address": fields[7], "port": int(fields[8]),
                          "txt": txt})
    return instances


def split_parsable(line):
    """avahi-browse -p separates fields with ';' and escapes ';', '\\' and others as \\DDD (decimal)."""
    fields = line.split(";")
    return [unescape(field) for field in fields[:9]] + ([";".join(fields[9:])] if len(fields) > 9 else [])


def unescape(text):
    out = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 3 < len(text) + 0 and text[i + 1:i + 4].isdigit():
            out.append(chr(int(text[i + 1:i + 4])))
            i += 4
        elif text[i] == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse_txt(field):
    """The TXT field: space-separated "quoted" strings."""
    items = []
    i = 0
    while i < len(field):
        if field[i] == '"':
            j = i + 1
            value = []
            while j < len(field) and field[j] != '"':
                if field[j] == "\\" and j + 1 < len(field):
                    value.append(field[j + 1])
                    j += 2
                    continue
                value.append(field[j])
                j += 1
            items.append("".join(value))
            i = j + 1
        else:
            i += 1
    return items


class LineStream:
    """A command left running on a host whose output lines are kept with the monotonic time each arrived."""

    def __init__(self, host, command):
        self.lines = []
        self.lock = threading.Lock()
        self.process = subprocess.Popen(host.enter(command), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True, start_new_session=True)
        host.processes.append(self.process)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.process.stdout:
            with self.lock:
                self.lines.append((time.monotonic(), line.rstrip("\n")))

    def since(self, start):
        with self.lock:
            return [(stamp, line) for stamp, line in self.lines if stamp >= start]

    def close(self):
        stop(self.process)
        self.thread.join(timeout=5)
        self.process.stdout.close()


class StreamingBrowse(LineStream):
    """`avahi-browse -rp TYPE` left running on a host, to time how fast records come ("=") and go ("-")."""

    def __init__(self, host, type_):
        super().__init__(host, ["stdbuf", "-oL", "avahi-browse", "-rp", "--no-db-lookup", type_])

    def _events(self, since, kind):
        for stamp, line in self.since(since):
            fields = split_parsable(line)
            if len(fields) >= 4 and fields[0] == kind:
                yield stamp, fields[3]

    def seen_since(self, since):
        """Instance names resolved at or after `since`, with the time each was first resolved."""
        first = {}
        for stamp, name in self._events(since, "="):
            first.setdefault(name, stamp)
        return first

    def removed_since(self, since):
        return {name for _, name in self._events(since, "-")}
