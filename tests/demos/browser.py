"""A headless Chromium driven through ChromeDriver's W3C WebDriver protocol: plain HTTP and JSON,
so the browser tests need no Python package beyond the standard library.

    with Browser() as b:                     # raises Unavailable where no browser is installed
        b.open("file:///tmp/page.html")
        b.hover(b.find(".tok.q[data-i='2']"))    # a real pointer move, so :hover and mouseenter fire
        b.run("return document.title")
        b.screenshot("page.png"); b.console_errors()

.ci/run installs Debian's chromium and chromium-driver; tests skip cleanly without them.
"""
import base64
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"   # the W3C key of an element reference


class Unavailable(RuntimeError):
    pass


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    def __init__(self, width=1400, height=1000):
        self.chrome = shutil.which("chromium") or shutil.which("chromium-browser")
        self.driver = shutil.which("chromedriver")
        if not self.chrome or not self.driver:
            raise Unavailable("chromium and chromedriver are not installed "
                              "(apt-get install chromium chromium-driver)")
        self.size = (width, height)
        self.proc = None
        self.session = None

    def __enter__(self):
        port = _free_port()
        self.base = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([self.driver, f"--port={port}"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while True:
            try:
                self._call("GET", "/status")
                break
            except (urllib.error.URLError, ConnectionError):
                if time.time() > deadline or self.proc.poll() is not None:
                    self.close()
                    raise Unavailable("chromedriver did not start") from None
                time.sleep(0.1)
        self.profile = tempfile.mkdtemp(prefix="tinyattn-chromium-")
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", f"--user-data-dir={self.profile}",
                f"--window-size={self.size[0]},{self.size[1]}"]
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome", "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {"binary": self.chrome, "args": args}}}}
        try:
            self.session = self._call("POST", "/session", caps)["sessionId"]
        except Exception as e:
            self.close()
            raise Unavailable(f"chromium did not start: {e}") from None
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.session:
            try:
                self._call("DELETE", f"/session/{self.session}")
            except Exception:
                pass
            self.session = None
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None
        if getattr(self, "profile", None):
            shutil.rmtree(self.profile, ignore_errors=True)

    def _call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read() or b"{}").get("value", {})
        except urllib.error.HTTPError as e:
            detail = json.loads(e.read() or b"{}").get("value", {})
            raise RuntimeError(f"webdriver {method} {path}: {detail.get('message', detail)}") \
                from None

    def _s(self, method, path, body=None):
        return self._call(method, f"/session/{self.session}{path}", body)

    def open(self, url):
        self._s("POST", "/url", {"url": url})

    def run(self, script, *args):
        return self._s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find(self, css):
        return self._s("POST", "/element", {"using": "css selector", "value": css})

    def find_all(self, css):
        return self._s("POST", "/elements", {"using": "css selector", "value": css})

    def _pointer(self, *steps):
        self._s("POST", "/actions", {"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": list(steps)}]})

    def hover(self, element):
        self._pointer({"type": "pointerMove", "duration": 0, "origin": element, "x": 0, "y": 0})

    def click(self, element):
        self._s("POST", f"/element/{element[ELEMENT]}/click", {})

    def screenshot(self, path):
        png = base64.b64decode(self._s("GET", "/screenshot"))
        with open(path, "wb") as f:
            f.write(png)
        return png

    def console_errors(self):
        """Console messages at level SEVERE (uncaught errors, console.error) since the last call."""
        logs = self._s("POST", "/se/log", {"type": "browser"})
        return [e["message"] for e in logs if e.get("level") == "SEVERE"]
