"""The web console in a real browser: headless Chromium (Debian's chromium and chromium-driver) driven by
Selenium, against a real rpcd serving the example modules on an http:// listener (make test-browser).

What a person at the console does: open it, call calc.add through the generated form and read 3, watch
kv.changed arrive after another client's kv.set (rpcctl on the Unix socket), and again after rpcd restarted
(the console subscribes again by itself and marks the gap in the log), see a refused call shown as
"Access denied" after an administrator tightened the rules; and what a page of another origin cannot do: call
rpcd, open its WebSocket, or post a form-like "simple request". A screenshot of the console is saved under
the build folder and its path printed.

RPCD_BIN_DIR names the directory holding rpcd, rpcctl and the example modules (make sets it);
RPCD_SCREENSHOT_DIR where the screenshots go (default: RPCD_BIN_DIR/browser-tests).
"""

import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "../.."))
BIN_DIR = os.path.abspath(os.environ.get("RPCD_BIN_DIR", os.path.join(ROOT, ".build/debug")))
SCREENSHOT_DIR = os.environ.get("RPCD_SCREENSHOT_DIR", os.path.join(BIN_DIR, "browser-tests"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
WAIT = 15  # seconds any one thing may take to appear in the page


class Daemon:
    """rpcd on an ephemeral http:// loopback port and a Unix socket, serving config/handlers.d with drop-ins
    written by the test (`drop_in`), modules from BIN_DIR."""

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="rpcd-browser-")
        self.handlers = os.path.join(self.directory, "handlers.d")
        shutil.copytree(os.path.join(ROOT, "config/handlers.d"), self.handlers)
        self.socket_path = os.path.join(self.directory, "rpcd.sock")
        # kv.set for any local peer, so rpcctl on the Unix socket can change a key whoever runs the test.
        self.drop_in("kv", "[Access]\nAllow=local\n")
        self.start("http://127.0.0.1:0")

    def start(self, listen):
        config = os.path.join(self.directory, "rpcd.conf")
        with open(config, "w") as f:
            f.write(f"[Server]\nListen={listen}\nListen={self.socket_path}\n")
        self.process = subprocess.Popen(
            [os.path.join(BIN_DIR, "rpcd"), "--config", config, "--handlers-dir", self.handlers, "--module-dir", BIN_DIR],
            stderr=subprocess.PIPE, text=True)
        self.lines = []
        found = threading.Event()

        def read():
            for line in self.process.stderr:
                self.lines.append(line)
                match = re.search(r"rpcd_listener=http://(127\.0\.0\.1:\d+)", line)
                if match and not found.is_set():
                    self.authority = match.group(1)
                    found.set()
            found.set()

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not found.wait(30) or not hasattr(self, "authority"):
            self.stop()
            raise RuntimeError("rpcd did not start an http:// listener:\n" + "".join(self.lines[-20:]))
        self.url = f"http://{self.authority}"

    def restart(self):
        """Stops rpcd (SIGTERM: rpc.goingAway, then the close) and starts a new one on the same address."""
        self.process.terminate()
        self.process.wait(30)
        self.reader.join(10)
        self.process.stderr.close()
        self.start(f"http://{self.authority}")

    def drop_in(self, service, text):
        directory = os.path.join(self.handlers, f"{service}.conf.d")
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "50-browser-test.conf"), "w") as f:
            f.write(text)

    def post(self, method, params=None):
        """One call over HTTP POST, as curl would make it; the decoded reply."""
        body = {"jsonrpc": "2.0", "method": method, "id": 1}
        if params is not None:
            body["params"] = params
        request = urllib.request.Request(
            self.url + "/rpc", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def rpcctl(self, *arguments):
        return subprocess.run(
            [os.path.join(BIN_DIR, "rpcctl"), "--address", self.socket_path, *arguments],
            capture_output=True, text=True, timeout=30)

    def reload(self, until):
        """SIGHUP, then waits until `until()` holds (the new rules are in force)."""
        self.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if until():
                return
            time.sleep(0.1)
        raise AssertionError("the reload did not take effect:\n" + "".join(self.lines[-20:]))

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.reader.join(10)
        shutil.rmtree(self.directory, ignore_errors=True)


class OtherOrigin:
    """A plain web server on another loopback port: the origin of a page that is not rpcd's."""

    def __init__(self):
        page = b"<!doctype html><title>another site</title><p>Another site's page.</p>"

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def chromium():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1440,1150", "--no-first-run", "--disable-extensions",
                     "--disable-background-networking", "--disable-component-update"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The driver is Debian's: Selenium Manager, which would download one, is never asked.
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


@unittest.skipUnless(os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK),
                     "needs Debian's chromium and chromium-driver (scripts/install-deps.sh)")
class ConsoleInChromium(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        cls.addClassCleanup(cls.daemon.stop)
        cls.other = OtherOrigin()
        cls.addClassCleanup(cls.other.stop)
        cls.browser = chromium()
        cls.addClassCleanup(cls.browser.quit)
        os.makedirs(SCREENSHOT_DIR, exist_ok=True)

    def wait(self, condition, message):
        return WebDriverWait(self.browser, WAIT).until(condition, message)

    def console_errors(self):
        """The browser console's errors: a CSP violation of the console's own page shows up here."""
        return [entry["message"] for entry in self.browser.get_log("browser") if entry["level"] == "SEVERE"]

    def open_method(self, name):
        button = self.wait(EC.element_to_be_clickable((By.CSS_SELECTOR, f'button[data-method="{name}"]')),
                           f"{name} is not listed in the console")
        button.click()
        self.wait(EC.text_to_be_present_in_element((By.ID, "method-title"), name), f"the form of {name} did not open")

    def subscribe_to_kv_changed(self):
        select = Select(self.wait(EC.presence_of_element_located((By.CSS_SELECTOR, '#event-select option[value="kv.changed"]')),
                                  "kv.changed is not offered").find_element(By.XPATH, ".."))
        select.select_by_value("kv.changed")
        self.browser.find_element(By.ID, "subscribe-button").click()
        self.wait(EC.presence_of_element_located((By.CSS_SELECTOR, '#subscriptions li[data-event="kv.changed"]')),
                  "the subscription did not start")

    def call_calc_add(self):
        self.browser.find_element(By.ID, "call-button").click()
        return self.wait(EC.visibility_of_element_located((By.CSS_SELECTOR, "#reply .result-value, #reply .reply-error")),
                         "no reply shown")

    def test_1_calls_calc_add_through_the_generated_form(self):
        self.browser.get(self.daemon.url + "/")
        self.assertEqual(self.browser.title, "rpcd console")
        self.wait(EC.text_to_be_present_in_element((By.ID, "status"), "uptime"), "rpcd.info not shown")
        self.open_method("calc.add")
        a = self.browser.find_element(By.CSS_SELECTOR, 'input[name="a"]')
        b = self.browser.find_element(By.CSS_SELECTOR, 'input[name="b"]')
        # The form comes from the params' schema: numbers, both required, each with its label.
        self.assertEqual(a.get_attribute("type"), "number")
        self.assertEqual(a.get_attribute("aria-required"), "true")
        self.assertIn("a", self.browser.find_element(By.CSS_SELECTOR, f'label[for="{a.get_attribute("id")}"]').text)
        # An empty required field is refused in the page, before any call.
        self.browser.find_element(By.ID, "call-button").click()
        self.wait(EC.text_to_be_present_in_element((By.CSS_SELECTOR, ".param.invalid .problem"), "Required"),
                  "an empty required parameter was not flagged")
        a.send_keys("1")
        b.send_keys("2")
        b.send_keys(Keys.CONTROL, Keys.ENTER)  # the keyboard shortcut submits
        result = self.wait(EC.visibility_of_element_located((By.CSS_SELECTOR, "#reply .result-value")), "no result shown")
        self.assertEqual(result.text, "3")
        self.assertEqual(self.console_errors(), [])

    def test_1b_methods_that_take_any_params_get_a_params_field(self):
        # rpc.discover describes calc.sum (a list by position) and echo.echo (anything, as sent) with
        # x-rpcd-params, so the form offers one field for the whole params, not "No parameters." (issue 40).
        self.browser.get(self.daemon.url + "/#calc.add")
        self.open_method("echo.echo")
        params = self.browser.find_element(By.CSS_SELECTOR, 'textarea[name="params"]')
        params.send_keys('{"a": [1, 2]}')
        self.browser.find_element(By.ID, "call-button").click()
        self.wait(EC.text_to_be_present_in_element((By.ID, "result-value"), "a"), "echo.echo's reply not shown")
        shown = self.browser.find_element(By.ID, "result-value").text
        self.assertEqual("".join(shown.split()), '{"a":[1,2]}')
        self.open_method("calc.sum")
        params = self.browser.find_element(By.CSS_SELECTOR, 'textarea[name="params"]')
        params.send_keys("[1, 2, 3.5]")
        self.browser.find_element(By.ID, "call-button").click()
        self.wait(EC.text_to_be_present_in_element((By.ID, "result-value"), "6.5"), "calc.sum's reply not shown")
        # The methods a POST can do nothing with are not offered, and the note says why.
        self.assertEqual(self.browser.find_elements(By.CSS_SELECTOR, 'button[data-method="rpc.subscribe"]'), [])
        self.assertEqual(self.browser.find_elements(By.CSS_SELECTOR, 'button[data-method="rpc.cancel"]'), [])
        self.assertIn("rpc.subscribe", self.browser.find_element(By.ID, "methods-note").text)
        self.assertEqual(self.console_errors(), [])

    def test_2_shows_kv_changed_after_another_clients_set(self):
        self.browser.get(self.daemon.url + "/#calc.add")
        self.subscribe_to_kv_changed()
        done = self.daemon.rpcctl("call", "kv.set", "key=greeting", 'value="hello from rpcctl"')
        self.assertEqual(done.returncode, 0, done.stderr)
        event = self.wait(EC.visibility_of_element_located((By.CSS_SELECTOR, '#event-log li[data-event="kv.changed"]')),
                          "no kv.changed event shown")
        self.assertIn("hello from rpcctl", event.text)
        self.assertIn("greeting", event.text)
        # Paused, events are held and counted, and shown on resume.
        self.browser.find_element(By.ID, "pause-button").click()
        self.daemon.rpcctl("call", "kv.set", "key=greeting", 'value="while paused"')
        self.wait(EC.text_to_be_present_in_element((By.ID, "pause-button"), "Resume (1)"), "a held event was not counted")
        self.assertNotIn("while paused", self.browser.find_element(By.ID, "event-log").text)
        self.browser.find_element(By.ID, "pause-button").click()
        self.wait(EC.text_to_be_present_in_element((By.ID, "event-log"), "while paused"), "held events not shown on resume")
        # Another key, for the screenshot: the JSON view of the events.
        self.daemon.rpcctl("call", "kv.set", "key=motd", 'value={"text": "maintenance at 22:00", "by": "ops"}')
        self.wait(EC.text_to_be_present_in_element((By.ID, "event-log"), "maintenance"), "the third event was not shown")
        self.open_method("calc.add")
        self.browser.find_element(By.CSS_SELECTOR, 'input[name="a"]').send_keys("1")
        self.browser.find_element(By.CSS_SELECTOR, 'input[name="b"]').send_keys("2")
        self.assertEqual(self.call_calc_add().text, "3")
        self.browser.find_element(By.ID, "json-toggle").click()
        self.wait(EC.presence_of_element_located((By.CSS_SELECTOR, "#event-log pre.json")), "no JSON view")
        path = os.path.join(SCREENSHOT_DIR, "console.png")
        self.browser.save_screenshot(path)
        print(f"\nscreenshot: {path}", flush=True)
        self.assertEqual(self.console_errors(), [])

    def test_2b_subscribes_again_after_rpcd_restarts_and_marks_the_gap(self):
        self.browser.get(self.daemon.url + "/")
        self.subscribe_to_kv_changed()
        self.daemon.restart()
        self.wait(EC.text_to_be_present_in_element((By.ID, "event-log"), "subscribed again to kv.changed"),
                  "no gap marker after the restart")
        self.wait(EC.presence_of_element_located((By.CSS_SELECTOR, '#subscriptions li[data-event="kv.changed"]')),
                  "the subscription is not listed again")
        done = self.daemon.rpcctl("call", "kv.set", "key=after", 'value="after the restart"')
        self.assertEqual(done.returncode, 0, done.stderr)
        self.wait(EC.text_to_be_present_in_element((By.ID, "event-log"), "after the restart"),
                  "no event from the new rpcd")
        self.assertEqual(self.console_errors(), [])

    def test_3_shows_access_denied_as_such(self):
        self.browser.get(self.daemon.url + "/#calc.add")
        self.open_method("calc.add")
        self.browser.find_element(By.CSS_SELECTOR, 'input[name="a"]').send_keys("1")
        self.browser.find_element(By.CSS_SELECTOR, 'input[name="b"]').send_keys("2")
        # The administrator takes calc away from TCP peers while the form is open (Unix-socket root only).
        self.daemon.drop_in("calc", "[Access]\nAllow=user:root\nAllowRead=user:root\n")
        self.daemon.reload(lambda: "error" in self.daemon.post("calc.add", [1, 2]))
        self.assertEqual(self.daemon.post("calc.add", [1, 2])["error"]["code"], -32007)
        error = self.call_calc_add()
        self.assertEqual(error.get_attribute("data-code"), "-32007")
        self.assertIn("Access denied", error.text)
        self.assertIn("calc.add", error.text)
        path = os.path.join(SCREENSHOT_DIR, "console-access-denied.png")
        self.browser.save_screenshot(path)
        print(f"\nscreenshot: {path}", flush=True)
        # Reloaded, the console no longer offers what it may not call.
        self.browser.get(self.daemon.url + "/")
        self.wait(EC.presence_of_element_located((By.CSS_SELECTOR, 'button[data-method="kv.get"]')), "methods not listed")
        self.assertEqual(self.browser.find_elements(By.CSS_SELECTOR, 'button[data-method="calc.add"]'), [])

    def test_4_a_page_of_another_origin_cannot_call_rpcd(self):
        self.browser.get(self.other.url)
        outcome = self.browser.execute_async_script("""
            const [rpc, done] = [arguments[0], arguments[arguments.length - 1]];
            const call = {jsonrpc: "2.0", method: "kv.set", params: {key: "cross-site", value: 1}, id: 1};
            const results = {};
            try {  // a script's JSON POST: the browser asks first (CORS preflight), and rpcd refuses
                const response = await fetch(rpc + "/rpc", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(call)});
                results.json = "answered " + response.status + ": " + await response.text();
            } catch (error) { results.json = "refused: " + error; }
            try {  // a form-like "simple request", sent blind: refused by its Origin and its Content-Type
                await fetch(rpc + "/rpc", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: JSON.stringify(call)});
                results.simple = "sent";
            } catch (error) { results.simple = "refused: " + error; }
            results.socket = await new Promise((resolve) => {
                const socket = new WebSocket(rpc.replace("http:", "ws:") + "/rpc");
                socket.onopen = () => { socket.close(); resolve("open"); };
                socket.onerror = () => resolve("refused");
            });
            done(results);
        """, self.daemon.url)
        self.assertTrue(outcome["json"].startswith("refused"), outcome)
        self.assertEqual(outcome["socket"], "refused", outcome)
        # Whatever the blind request did, it set nothing.
        self.assertEqual(self.daemon.post("kv.get", {"key": "cross-site"})["error"]["code"], 1)
        # rpcd itself says why, to a client that shows it an Origin.
        request = urllib.request.Request(
            self.daemon.url + "/rpc", data=b'{"jsonrpc":"2.0","method":"rpcd.ping","id":1}',
            headers={"Content-Type": "application/json", "Origin": self.other.url.rstrip("/")})
        with self.assertRaises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        self.assertEqual(refused.exception.code, 403)

    def test_5_serves_its_files_with_validators_and_a_strict_policy(self):
        with urllib.request.urlopen(self.daemon.url + "/", timeout=10) as page:
            headers = page.headers
            self.assertEqual(headers["Content-Type"], "text/html; charset=utf-8")
            self.assertEqual(headers["Cache-Control"], "no-cache")
            self.assertEqual(headers["X-Content-Type-Options"], "nosniff")
            self.assertIn("frame-ancestors 'none'", headers["Content-Security-Policy"])
            self.assertIn(f"connect-src 'self' ws://{self.daemon.authority}", headers["Content-Security-Policy"])
            etag = headers["ETag"]
        with self.assertRaises(urllib.error.HTTPError) as cached:
            urllib.request.urlopen(urllib.request.Request(self.daemon.url + "/", headers={"If-None-Match": etag}), timeout=10)
        self.assertEqual(cached.exception.code, 304)
        for path, kind in (("/console.js", "text/javascript"), ("/console.css", "text/css"), ("/favicon.svg", "image/svg+xml")):
            with urllib.request.urlopen(self.daemon.url + path, timeout=10) as asset:
                self.assertTrue(asset.headers["Content-Type"].startswith(kind), path)
        with self.assertRaises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(self.daemon.url + "/index.html", timeout=10)
        self.assertEqual(missing.exception.code, 404)


if __name__ == "__main__":
    unittest.main()
