"""Drives Roundcube (webmail) in headless Chromium through the profile's actions.

Roundcube runs from Debian's package with a private configuration
(ROUNDCUBE_CONFIG_DIR), a private SQLite database and PHP's built-in web
server on the lab's loopback; only the IMAP and SMTP endpoints and the
storage paths differ from the package's defaults (no IMAP cache, no message
cache, refresh every 60 s, 50 messages a page). Selenium clicks and types
where a person would; the move and delete use Roundcube's own client-side
command (`rcmail.command`), the call its drag-and-drop and toolbar make.
"""

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import time

from actions import ActionLog, wait_until

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.common.exceptions import StaleElementReferenceException


def configure(work, lab, port):
    config_dir = os.path.join(work, "config")
    os.makedirs(config_dir, exist_ok=True)
    for name in ("defaults.inc.php", "mimetypes.php"):
        shutil.copy(f"/etc/roundcube/{name}", config_dir)
    for name in ("logs", "temp"):
        os.makedirs(os.path.join(work, name), exist_ok=True)
    database = os.path.join(work, "roundcube.sqlite")
    if not os.path.exists(database):
        with sqlite3.connect(database) as db:
            db.executescript(open("/usr/share/roundcube/SQL/sqlite.initial.sql", encoding="utf-8").read())
    ca = os.path.join(lab["dir"], "tls", "ca.pem")
    with open(os.path.join(config_dir, "config.inc.php"), "w", encoding="utf-8") as out:
        out.write(f"""<?php
// Written by scripts/record/roundcube.py; everything else is defaults.inc.php.
$config = [];
$config['db_dsnw'] = 'sqlite:///{database}?mode=0640';
$config['log_dir'] = '{work}/logs/';
$config['temp_dir'] = '{work}/temp/';
// Plain IMAP so that Dovecot's pre-login rawlog can read the session too.
$config['imap_host'] = '127.0.0.1:{lab['ports']['imap']}';
$config['smtp_host'] = 'ssl://127.0.0.1:{lab['ports']['submissions']}';
$config['smtp_user'] = '%u';
$config['smtp_pass'] = '%p';
$config['smtp_conn_options'] = ['ssl' => ['cafile' => '{ca}', 'verify_peer' => true]];
$config['mail_domain'] = 'bench.test';
$config['des_key'] = 'peakhour-record-0123456789';
$config['plugins'] = [];
$config['skin'] = 'elastic';
$config['enable_spellcheck'] = false;
""")
    env = dict(os.environ, ROUNDCUBE_CONFIG_DIR=config_dir)
    env.pop("PEAKHOUR_RECORD_PASSWORD", None)
    log = open(os.path.join(work, "php.log"), "w", encoding="utf-8")
    server = subprocess.Popen(
        ["php", "-S", f"127.0.0.1:{port}", "-t", "/var/lib/roundcube/public_html"],
        cwd="/var/lib/roundcube/public_html", env=env, stdout=log, stderr=subprocess.STDOUT)
    return server


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lab-config", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--idle", type=int, default=600)
    parser.add_argument("--to", required=True)
    parser.add_argument("--port", type=int, default=0, help="web port (default: the lab's port base + 90)")
    args = parser.parse_args()
    lab = json.load(open(args.lab_config, encoding="utf-8"))["config"]
    password = os.environ["PEAKHOUR_RECORD_PASSWORD"]
    port = args.port or lab["ports"]["imap"] - 143 + 90
    server = configure(args.work, lab, port)
    browser = None
    log = ActionLog(os.path.join(args.work, "actions.json"))
    try:
        time.sleep(1)
        options = webdriver.ChromeOptions()
        for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000",
                     f"--user-data-dir={args.work}/chromium"):
            options.add_argument(flag)
        browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        browser.set_page_load_timeout(60)
        base = f"http://127.0.0.1:{port}/"

        def ready():
            return browser.execute_script(
                "return window.rcmail && !rcmail.busy && document.readyState === 'complete'")

        def click_first_row():
            def attempt():
                try:
                    rows = browser.find_elements(By.CSS_SELECTOR, "#messagelist tbody tr")
                    if rows:
                        rows[0].click()
                        return True
                except StaleElementReferenceException:
                    pass
                return False
            wait_until(attempt, 30, what="a message row to click")

        with log.action("open_inbox", "log in on the login page; Roundcube shows the INBOX list"):
            browser.get(base)
            wait_until(lambda: browser.find_elements(By.ID, "rcmloginuser"), 30, what="login form")
            browser.find_element(By.ID, "rcmloginuser").send_keys(args.user)
            browser.find_element(By.ID, "rcmloginpwd").send_keys(password)
            browser.find_element(By.ID, "rcmloginsubmit").click()
            wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#messagelist tbody tr"), 60,
                       what="message list")
            wait_until(ready, 60, what="Roundcube idle")
            time.sleep(2)
        with log.action("read", "click the first message: it opens in the preview pane"):
            click_first_row()
            wait_until(lambda: browser.execute_script(
                "var f=document.getElementById('messagecontframe');"
                "return !!(f && f.contentDocument && f.contentDocument.querySelector('#messagebody'));"), 60,
                what="message preview")
            wait_until(ready, 60, what="Roundcube idle")
            time.sleep(2)
        with log.action("move", "rcmail.command('move', 'Folder1') on the selected message (drag and drop's call)"):
            browser.execute_script("rcmail.command('move', 'Folder1')")
            time.sleep(1)
            wait_until(ready, 60, what="Roundcube idle")
            time.sleep(2)
        with log.action("delete", "select the first message (message_list.select_first, what a click does), "
                        "rcmail.command('delete'): moves it to Trash"):
            browser.execute_script("rcmail.message_list.select_first()")
            wait_until(ready, 60, what="Roundcube idle")
            time.sleep(1)
            browser.execute_script("rcmail.command('delete')")
            time.sleep(1)
            wait_until(ready, 60, what="Roundcube idle")
            time.sleep(2)
        with log.action("send", f"Compose, to {args.to}, subject, body, Send (SMTP, then APPEND to Sent)"):
            browser.execute_script("rcmail.command('compose')")
            wait_until(lambda: browser.find_elements(By.ID, "compose-subject"), 60, what="compose form")
            wait_until(ready, 60, what="Roundcube idle")
            # Elastic's recipient widget types into an input of its own and
            # keeps the form's #_to textarea in step; the textarea is what is posted.
            browser.execute_script("$('#_to').val(arguments[0]).change()", args.to)
            browser.find_element(By.ID, "compose-subject").send_keys("Recorded from Roundcube")
            browser.find_element(By.ID, "composebody").send_keys("Hello,\n\nrecorded by scripts/record-clients.sh.\n")
            browser.execute_script("rcmail.command('send', '')")
            wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#messagelist tbody tr"), 90,
                       what="back to the message list after sending")
            wait_until(ready, 60, what="Roundcube idle")
            time.sleep(2)
        with log.action("search", "type 'meeting' in the search box, Enter (subject search in INBOX)"):
            box = browser.find_element(By.CSS_SELECTOR, "#mailsearchform")
            box.send_keys("meeting")
            box.send_keys(Keys.ENTER)
            time.sleep(2)
            wait_until(ready, 60, what="Roundcube idle")
            time.sleep(2)
        with log.action("idle", f"the INBOX list left open for {args.idle} s (Roundcube refreshes it itself)") as entry:
            deadline = time.monotonic() + args.idle
            while time.monotonic() < deadline:
                time.sleep(min(30, max(0, deadline - time.monotonic())))
            entry["seconds"] = args.idle
        with log.action("logout", "rcmail.command('logout')"):
            browser.execute_script("rcmail.command('logout')")
            wait_until(lambda: browser.find_elements(By.ID, "rcmloginuser"), 60, what="login page again")
    finally:
        if browser is not None:
            try:
                browser.save_screenshot(os.path.join(args.work, "last-screen.png"))
            except Exception:  # noqa: BLE001 - best effort, for debugging
                pass
            browser.quit()
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
