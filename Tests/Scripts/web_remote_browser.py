#!/usr/bin/env python3
"""The web remote in a real browser: Debian's Chromium, headless, driven by Selenium through
chromedriver. It opens the page tonearmd serves and checks what a person would do with it, against
the daemon's own state read over its Unix socket (JSON-RPC), with mpc and tonearmctl acting from
outside. Prints one line per check; exits non-zero at the first failure, saying what was seen.

Usage: web_remote_browser.py open URL CONTROL_SOCKET MPD_SOCKET TONEARMCTL ARTIFACTS
       web_remote_browser.py password URL PASSWORD ARTIFACTS
       web_remote_browser.py paint URL RUNS   (the benchmark: first contentful paint, ms, per fresh browser)"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

SCALE = float(os.environ.get("TIME_SCALE", "1"))  # slower under the sanitizers

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def check(condition, what, seen=""):
    if not condition:
        print(f"FAIL: {what}" + (f" (seen: {seen})" if seen != "" else ""), flush=True)
        sys.exit(1)
    print(f"ok: {what}", flush=True)


class Control:
    """JSON-RPC on the control socket, one request at a time."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.file = self.sock.makefile("rwb")
        self.next = 1

    def call(self, method, params=None):
        request = {"jsonrpc": "2.0", "id": self.next, "method": method}
        if params is not None:
            request["params"] = params
        self.next += 1
        self.file.write((json.dumps(request) + "\n").encode())
        self.file.flush()
        while True:
            reply = json.loads(self.file.readline())
            if reply.get("id") == request["id"]:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]


def browser(width, height):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={width},{height}", f"--user-data-dir={tempfile.mkdtemp(prefix='tonearm-chromium-')}"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def wait(driver, condition, what, timeout=5.0, poll=0.02):
    try:
        # The page redraws as events come: an element found a moment ago may be gone (stale);
        # the condition is then asked again, as if it did not hold yet.
        result = WebDriverWait(driver, timeout * (1 if timeout < 1 else SCALE), poll_frequency=poll,
                               ignored_exceptions=[StaleElementReferenceException, NoSuchElementException, IndexError]
                               ).until(lambda d: condition(d))
        print(f"ok: {what}", flush=True)
        return result
    except Exception:
        shown = driver.find_element(By.ID, "app").text[:400] if driver.find_elements(By.ID, "app") else ""
        check(False, what, f"{shown}; console: {driver.get_log('browser')}")


def retried(action, attempts=10):
    """Runs `action`, again if the page redrew the element under it (stale) meanwhile."""
    for attempt in range(attempts):
        try:
            return action()
        except (StaleElementReferenceException, IndexError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.1)


def text(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def console_errors(driver):
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def tool(command, env=None):
    result = subprocess.run(command, capture_output=True, text=True, timeout=20, env=env)
    check(result.returncode == 0, " ".join(command[:3]), result.stdout + result.stderr)
    return result.stdout


def main_open(url, control_path, mpd_path, tonearmctl, artifacts):
    control = Control(control_path)
    driver = browser(390, 844)
    try:
        started = time.monotonic()
        driver.get(url)
        wait(driver, lambda d: text(d, "connection") == "connected", "the page connects its WebSocket")
        paint = driver.execute_script(
            "const p = performance.getEntriesByType('paint').find(e => e.name === 'first-contentful-paint'); return p ? p.startTime : null;")
        print(f"first contentful paint: {paint} ms; page connected after {(time.monotonic() - started) * 1000:.0f} ms")

        # Cross-protocol: a track added and played through mpc shows within 500 ms.
        mpd_env = dict(os.environ, MPD_HOST=mpd_path)
        tool(["mpc", "add", "Alpha/One/01 First.flac"], mpd_env)
        tool(["mpc", "play"], mpd_env)
        shown = time.monotonic()
        wait(driver, lambda d: text(d, "title") == "First", "mpc's play shows its title", timeout=0.5 * SCALE)
        print(f"now playing shown {(time.monotonic() - shown) * 1000:.0f} ms after mpc answered")
        check(text(driver, "artist") == "Alpha" and text(driver, "album") == "One", "artist and album shown",
              text(driver, "artist") + " / " + text(driver, "album"))
        first = float(driver.find_element(By.ID, "seek").get_attribute("value"))
        time.sleep(0.6)
        second = float(driver.find_element(By.ID, "seek").get_attribute("value"))
        check(second > first, "the progress bar moves while playing", f"{first} then {second}")

        # Through tonearmctl: the next song, by its own path.
        ctl_env = dict(os.environ, TONEARM_SOCKET=control_path)
        music = control.call("library.stats")  # the library answers: the tree is scanned
        check(music["songs"] == 3, "the library holds the three songs", music)
        tool([tonearmctl, "add", "--play", "Alpha/One/02 Second.flac"], ctl_env)
        shown = time.monotonic()
        wait(driver, lambda d: text(d, "title") == "Second", "tonearmctl's play shows its title", timeout=0.5 * SCALE)
        print(f"now playing shown {(time.monotonic() - shown) * 1000:.0f} ms after tonearmctl answered")

        # The page's controls change the daemon's state.
        driver.find_element(By.ID, "toggle").click()
        wait(driver, lambda d: control.call("status")["state"]["state"] == "paused", "pause from the page")
        driver.find_element(By.ID, "toggle").click()
        wait(driver, lambda d: control.call("status")["state"]["state"] == "playing", "play from the page")
        driver.find_element(By.ID, "previous").click()
        wait(driver, lambda d: text(d, "title") == "First" and control.call("status")["current"] == control.call("queue")["items"][0]["id"],
             "previous from the page")
        driver.find_element(By.ID, "next").click()
        wait(driver, lambda d: text(d, "title") == "Second", "next from the page")
        seek = driver.find_element(By.ID, "seek")
        ActionChains(driver).click_and_hold(seek).move_by_offset(seek.size["width"] // 3, 0).release().perform()
        wait(driver, lambda d: control.call("status")["position"] > 12, "dragging the bar seeks",
             timeout=3)
        driver.find_element(By.ID, "repeat").click()
        wait(driver, lambda d: control.call("queue")["repeat"] is True, "repeat from the page")
        volume = driver.find_element(By.ID, "volume")
        ActionChains(driver).click_and_hold(volume).move_by_offset(-volume.size["width"] // 2, 0).release().perform()
        wait(driver, lambda d: control.call("status")["volume"] < 50, "the volume slider sets the volume")

        # The queue: reorder by dragging, remove, clear.
        control.call("add", {"urls": ["Beta/Two/01 Third.flac"]})
        wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#queue .row")) == 3, "the queue shows three items")
        before = [item["id"] for item in control.call("queue")["items"]]
        retried(lambda: ActionChains(driver).click_and_hold(
            driver.find_elements(By.CSS_SELECTOR, "#queue .row")[2].find_element(By.CSS_SELECTOR, ".handle"))
            .move_by_offset(0, -115).release().perform())
        wait(driver, lambda d: [item["id"] for item in control.call("queue")["items"]] == [before[2], before[0], before[1]],
             "dragging an item reorders the queue")
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#queue .row .text span")[0].text == "Third",
             "the page shows the new order")
        retried(lambda: driver.find_elements(By.CSS_SELECTOR, "#queue .row button[aria-label^='Remove']")[0].click())
        wait(driver, lambda d: len(control.call("queue")["items"]) == 2, "remove from the page")
        driver.find_element(By.ID, "clear").click()
        wait(driver, lambda d: len(control.call("queue")["items"]) == 0, "clear from the page")
        wait(driver, lambda d: text(d, "queue-count") == "Empty", "the page shows the queue empty")

        # The library: artist, album, add the album; then a search as you type.
        driver.find_element(By.ID, "tab-library").click()
        wait(driver, lambda d: "Alpha" in text(d, "library"), "the library lists the artists")
        retried(lambda: driver.find_element(By.XPATH, "//*[@id='library']//*[@aria-label='Open Alpha']").click())
        wait(driver, lambda d: "One" in text(d, "library"), "an artist's albums")
        retried(lambda: driver.find_element(By.XPATH, "//*[@id='library']//*[@aria-label='Open One']").click())
        wait(driver, lambda d: "Second" in text(d, "library"), "an album's songs")
        retried(lambda: driver.find_element(By.CSS_SELECTOR, "#library button[aria-label='Add the album']").click())
        wait(driver, lambda d: [item["url"].split("/")[-1] for item in control.call("queue")["items"]] == ["01 First.flac", "02 Second.flac"],
             "add the album from the page")
        driver.find_element(By.ID, "search").send_keys("thi")
        wait(driver, lambda d: "Third" in text(d, "library"), "search as you type finds a title")
        retried(lambda: driver.find_element(By.CSS_SELECTOR, "#library button[aria-label='Play Third now']").click())
        wait(driver, lambda d: control.call("status")["state"]["state"] == "playing" and text(d, "title") == "Third",
             "play a search result now")

        # Stored playlists: the queue saved from the page is MPD's too; loading it plays it.
        retried(lambda: driver.find_element(By.CSS_SELECTOR, "#crumbs button[aria-label='Stored playlists']").click())
        wait(driver, lambda d: "No stored playlists yet." in text(d, "library"), "the page lists no playlists yet")
        driver.find_element(By.CSS_SELECTOR, "#library input[aria-label='Name of the new playlist']").send_keys("Evening")
        driver.find_element(By.CSS_SELECTOR, "#library button[aria-label='Save the queue as a playlist']").click()
        wait(driver, lambda d: "Evening" in text(d, "library"), "the page saves the queue as a playlist")
        listed = tool(["mpc", "lsplaylists"], mpd_env).split()
        check(listed == ["Evening"], "mpc sees the playlist the page saved", listed)
        control.call("clear")
        retried(lambda: driver.find_element(By.CSS_SELECTOR, "#library button[aria-label='Play the playlist Evening']").click())
        wait(driver, lambda d: len(control.call("queue")["items"]) == 3 and control.call("status")["state"]["state"] == "playing",
             "playing a stored playlist from the page")
        control.call("play", {"id": control.call("queue")["items"][2]["id"]})
        wait(driver, lambda d: text(d, "title") == "Third", "the page follows")

        # The WebSocket speaks the control socket's JSON-RPC.
        replies = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const ws = new WebSocket(`ws://${location.host}/rpc`);
            const seen = [];
            ws.onopen = () => {
              ws.send(JSON.stringify({jsonrpc: "2.0", id: 1, method: "status"}));
              ws.send(JSON.stringify({jsonrpc: "2.0", id: 2, method: "subscribe", params: {events: ["transition"]}}));
              ws.send(JSON.stringify({jsonrpc: "2.0", id: 3, method: "pause"}));
            };
            ws.onmessage = (m) => { seen.push(JSON.parse(m.data)); if (seen.some(r => r.method === "event")) { ws.close(); done(seen); } };
            setTimeout(() => done(seen), 3000);
        """)
        status = next((r for r in replies if r.get("id") == 1), {})
        check(status.get("result", {}).get("state", {}).get("state") == "playing", "status over the WebSocket", replies)
        check(any(r.get("id") == 2 and "result" in r for r in replies), "subscribe over the WebSocket", replies)
        check(any(r.get("method") == "event" and r["params"]["type"] == "transition" for r in replies),
              "a transition event over the WebSocket", replies)

        # Names, errors and pictures.
        unnamed = [b.get_attribute("outerHTML")[:80] for b in driver.find_elements(By.TAG_NAME, "button")
                   if b.is_displayed() and not b.accessible_name.strip()]
        check(not unnamed, "every button has an accessible name", unnamed)
        errors = console_errors(driver)
        check(not errors, "no console errors", errors)
        driver.save_screenshot(os.path.join(artifacts, "web-remote-390x844.png"))
        driver.set_window_size(1280, 800)
        driver.find_element(By.ID, "tab-queue").click()
        time.sleep(0.3)
        driver.save_screenshot(os.path.join(artifacts, "web-remote-1280x800.png"))
        check(not console_errors(driver), "no console errors on a desktop window")
    finally:
        driver.quit()


def main_password(url, password, artifacts):
    driver = browser(390, 844)
    try:
        driver.get(url)
        wait(driver, lambda d: d.find_element(By.ID, "login").is_displayed(), "the page asks for the password")
        check(not driver.find_element(By.ID, "app").is_displayed(), "nothing else is shown before it")
        field = driver.find_element(By.ID, "password")
        field.send_keys("not the password")
        driver.find_element(By.CSS_SELECTOR, "#login button[type='submit']").click()
        wait(driver, lambda d: "wrong password" in text(d, "login-error"), "a wrong password is refused in words")
        time.sleep(1.1)  # the wait a wrong password costs
        field.clear()
        field.send_keys(password)
        driver.find_element(By.CSS_SELECTOR, "#login button[type='submit']").click()
        wait(driver, lambda d: text(d, "connection") == "connected", "the right password opens the remote")
        driver.refresh()
        wait(driver, lambda d: text(d, "connection") == "connected", "the token survives a reload")
        check(not driver.find_element(By.ID, "login").is_displayed(), "no password asked after the reload")
        cookie = driver.execute_script("return document.cookie")
        check("tonearm_token" not in cookie, "the token is out of the page's scripts' reach (HttpOnly)", cookie)
        driver.save_screenshot(os.path.join(artifacts, "web-remote-password.png"))
        errors = [e for e in console_errors(driver) if "/login" not in e]  # the refused login's 401
        check(not errors, "no console errors but the refused login's", errors)
    finally:
        driver.quit()


def main_paint(url, runs):
    """The benchmark's figure: first contentful paint of the page, once per fresh load."""
    for _ in range(int(runs)):
        driver = browser(390, 844)
        try:
            driver.get(url)
            wait(driver, lambda d: text(d, "connection") == "connected", "the page connects")
            paint = driver.execute_script(
                "const p = performance.getEntriesByType('paint').find(e => e.name === 'first-contentful-paint'); return p ? p.startTime : null;")
            print(f"paint {paint}", flush=True)
        finally:
            driver.quit()


if __name__ == "__main__":
    if sys.argv[1] == "paint":
        main_paint(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "open":
        main_open(*sys.argv[2:7])
    else:
        main_password(*sys.argv[2:5])
