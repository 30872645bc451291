"""Drives Thunderbird (headless) through the profile's actions over Marionette.

Thunderbird starts with an empty profile and Marionette on a private port.
In its chrome context the script does what the account wizard and a person
would: trusts the lab's CA (for SMTP over implicit TLS), stores the password
in the login manager, creates the IMAP account and the SMTP server, then opens
the Inbox in the 3-pane tab, selects a message, moves it with the 3-pane's own
command (cmd_moveMessage), deletes one (cmd_delete: to Trash, the default),
sends one through a compose window (SMTP, then a copy into Sent) and types in
the quick filter bar (a local search). Every setting not named here is
Thunderbird's default (offline download of every folder on, IDLE on,
new-mail check every 10 minutes, cached connections up to 5).
"""

import argparse
import base64
import json
import os
import shutil
import subprocess
import time

from actions import ActionLog, wait_until
from marionette_driver.marionette import Marionette

PREFS = """// Written by scripts/record/thunderbird.py: no first-run dialogs, Marionette on a private port.
user_pref("marionette.port", {port});
user_pref("mail.shell.checkDefaultClient", false);
user_pref("mail.provider.suppress_dialog_on_startup", true);
user_pref("mailnews.start_page.enabled", false);
user_pref("mail.spotlight.firstRunDone", true);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("app.update.enabled", false);
user_pref("mail.rights.override", true);
user_pref("browser.dom.window.dump.enabled", true);
"""

SETUP = """
const [host, imapPort, smtpPort, user, password, caBase64] = arguments;
const { MailServices } = ChromeUtils.importESModule("resource:///modules/MailServices.sys.mjs");
const certdb = Cc["@mozilla.org/security/x509certdb;1"].getService(Ci.nsIX509CertDB);
certdb.addCertFromBase64(caBase64, "C,C,C");
for (const origin of ["imap://" + host, "smtp://" + host]) {
  const login = Cc["@mozilla.org/login-manager/loginInfo;1"].createInstance(Ci.nsILoginInfo);
  login.init(origin, null, origin, user, password, "", "");
  await Services.logins.addLoginAsync(login);
}
// The getter throws while there are no Local Folders yet.
try { MailServices.accounts.localFoldersServer; } catch (e) { MailServices.accounts.createLocalMailAccount(); }
const server = MailServices.accounts.createIncomingServer(user, host, "imap");
server.port = imapPort;
server.socketType = Ci.nsMsgSocketType.plain;  // plain IMAP: the pre-login rawlog can read it
server.authMethod = Ci.nsMsgAuthMethod.passwordCleartext;
const identity = MailServices.accounts.createIdentity();
identity.email = user + "@bench.test";
identity.fullName = "Recorded Thunderbird user";
const smtp = MailServices.outgoingServer.createServer("smtp");
smtp.QueryInterface(Ci.nsISmtpServer);
smtp.hostname = host;
smtp.port = smtpPort;
smtp.socketType = Ci.nsMsgSocketType.SSL;
smtp.authMethod = Ci.nsMsgAuthMethod.passwordCleartext;
smtp.username = user;
identity.smtpServerKey = smtp.key;
const account = MailServices.accounts.createAccount();
account.incomingServer = server;
account.addIdentity(identity);
MailServices.accounts.defaultAccount = account;
MailServices.accounts.saveAccountInfo();
return account.key;
"""

INBOX = """
const { MailServices } = ChromeUtils.importESModule("resource:///modules/MailServices.sys.mjs");
const server = MailServices.accounts.defaultAccount.incomingServer;
return server.rootFolder.getFolderWithFlags(Ci.nsMsgFolderFlags.Inbox)?.URI ?? null;
"""

ABOUT3PANE = "const win = Services.wm.getMostRecentWindow('mail:3pane'); const about3Pane = win.gTabmail.currentAbout3Pane;"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lab-config", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--idle", type=int, default=600)
    parser.add_argument("--to", required=True)
    parser.add_argument("--marionette-port", type=int, default=0, help="default: the lab's port base + 828")
    parser.add_argument("--warm", action="store_true",
                        help="start again with the profile of the previous run (its account, caches and offline "
                             "copies): a day's normal start, not the first one; writes actions-warm.json")
    args = parser.parse_args()
    lab = json.load(open(args.lab_config, encoding="utf-8"))["config"]
    password = os.environ["PEAKHOUR_RECORD_PASSWORD"]
    marionette_port = args.marionette_port or lab["ports"]["imap"] - 143 + 828
    profile = os.path.join(args.work, "profile")
    if args.warm:
        if not os.path.exists(os.path.join(profile, "prefs.js")):
            raise SystemExit(f"error: --warm needs the profile of a previous run in {profile}")
        with open(os.path.join(profile, "user.js"), "w", encoding="utf-8") as out:
            out.write(PREFS.format(port=marionette_port))
    else:
        shutil.rmtree(profile, ignore_errors=True)
        os.makedirs(profile)
        with open(os.path.join(profile, "user.js"), "w", encoding="utf-8") as out:
            out.write(PREFS.format(port=marionette_port))
    suffix = "-warm" if args.warm else ""
    with open(os.path.join(lab["dir"], "tls", "ca.pem"), encoding="utf-8") as pem:
        ca = "".join(line.strip() for line in pem if "-----" not in line)
    env = dict(os.environ, MOZ_HEADLESS="1")
    env.pop("PEAKHOUR_RECORD_PASSWORD", None)
    console = open(os.path.join(args.work, f"thunderbird{suffix}.log"), "w", encoding="utf-8")
    launched = time.time()
    process = subprocess.Popen(["thunderbird", "--headless", "--marionette", "--remote-allow-system-access", "--no-remote", "--profile", profile],
                               env=env, stdout=console, stderr=subprocess.STDOUT)
    log = ActionLog(os.path.join(args.work, f"actions{suffix}.json"))
    client = None
    try:
        client = Marionette(host="127.0.0.1", port=marionette_port, startup_timeout=120)
        client.start_session()
        client.set_context(client.CONTEXT_CHROME)
        client.timeout.script = 120

        def js(script, *arguments):
            return client.execute_async_script(
                "const done = arguments[arguments.length - 1];"
                "(async () => {" + script + "})(...Array.from(arguments).slice(0, -1)).then(done, e => done('ERROR ' + e));",
                script_args=list(arguments))

        def check(result, what):
            if isinstance(result, str) and result.startswith("ERROR"):
                raise RuntimeError(f"{what}: {result}")
            return result

        wait_until(lambda: client.execute_script(
            "return !!Services.wm.getMostRecentWindow('mail:3pane')?.gTabmail?.currentAbout3Pane;"), 120,
            what="the 3-pane window")
        log.add("launch", "Thunderbird started until its 3-pane window is up (a warm start logs in here, "
                "since the Inbox it shows is the one it showed when it quit)", launched, time.time())
        if not args.warm:
            with log.action("account_setup", "account, password and SMTP server created as the account wizard would"):
                check(js(SETUP, "127.0.0.1", lab["ports"]["imap"], lab["ports"]["submissions"], args.user, password,
                         ca), "account setup")
        with log.action("open_inbox", "the Inbox shown in the 3-pane tab (folder discovery, then the header list)"):
            inbox = wait_until(lambda: client.execute_script(INBOX), 120, step=1, what="the Inbox folder")
            check(js(ABOUT3PANE + "about3Pane.displayFolder(arguments[0]); return true;", inbox), "display Inbox")
            wait_until(lambda: client.execute_script(
                ABOUT3PANE + "return about3Pane.gDBView?.rowCount > 0;"), 120, step=1, what="the Inbox's rows")
            time.sleep(10)
        with log.action("read", "the first row selected: the message pane shows it"):
            check(js(ABOUT3PANE + "about3Pane.threadTree.selectedIndex = 0; return true;"), "select")
            time.sleep(8)
        with log.action("move", "cmd_moveMessage to Folder1 (what drag and drop and Move To do)"):
            wait_until(lambda: client.execute_script(
                ABOUT3PANE + "return !!about3Pane.gFolder.server.rootFolder.getChildNamed('Folder1');"), 120, step=1,
                what="Folder1 to be discovered")
            check(js(ABOUT3PANE + """
                const inbox = about3Pane.gFolder;
                const target = inbox.server.rootFolder.getChildNamed("Folder1");
                if (!target.canFileMessages) return "ERROR Folder1 cannot take messages: " + target.URI;
                if (about3Pane.gDBView.numSelected < 1) return "ERROR nothing selected; index " + about3Pane.threadTree.selectedIndex;
                about3Pane.commandController.doCommand("cmd_moveMessage", target);
                return target.URI;"""), "move")
            time.sleep(8)
        with log.action("delete", "the next row selected, cmd_delete (moves it to Trash, the default)"):
            check(js(ABOUT3PANE + """
                about3Pane.threadTree.selectedIndex = 0;
                await new Promise(r => win.setTimeout(r, 3000));
                about3Pane.commandController.doCommand("cmd_delete");
                return true;"""), "delete")
            time.sleep(8)
        with log.action("send", f"a compose window to {args.to}, Send Now: SMTP, then a copy into Sent"):
            check(js("""
                const { MailServices } = ChromeUtils.importESModule("resource:///modules/MailServices.sys.mjs");
                const fields = Cc["@mozilla.org/messengercompose/composefields;1"].createInstance(Ci.nsIMsgCompFields);
                fields.to = arguments[0];
                fields.subject = "Recorded from Thunderbird";
                fields.body = "Hello,\\n\\nrecorded by scripts/record-clients.sh.\\n";
                const params = Cc["@mozilla.org/messengercompose/composeparams;1"].createInstance(Ci.nsIMsgComposeParams);
                params.composeFields = fields;
                params.identity = MailServices.accounts.defaultAccount.defaultIdentity;
                params.format = Ci.nsIMsgCompFormat.PlainText;
                params.type = Ci.nsIMsgCompType.New;
                MailServices.compose.OpenComposeWindowWithParams(null, params);
                return true;""", args.to), "open compose")
            wait_until(lambda: client.execute_script(
                "const w = Services.wm.getMostRecentWindow('msgcompose'); return !!(w && w.gMsgCompose);"), 60,
                what="the compose window")
            time.sleep(3)
            check(js("const w = Services.wm.getMostRecentWindow('msgcompose'); w.goDoCommand('cmd_sendNow'); return true;"),
                  "send")
            wait_until(lambda: client.execute_script(
                "return !Services.wm.getMostRecentWindow('msgcompose');"), 90, what="the compose window to close")
            time.sleep(5)
        with log.action("search", "'meeting' typed in the quick filter bar (searches the local copy)") as entry:
            result = js(ABOUT3PANE + """
                const bar = about3Pane.quickFilterBar;
                bar.filterer.setFilterValue("text", {text: "meeting", states: {sender: true, recipients: true, subject: true, body: true}});
                bar.updateSearch();
                await new Promise(r => win.setTimeout(r, 5000));
                return about3Pane.gDBView.rowCount;""")
            entry["outcome"] = f"rows shown: {result}"
            time.sleep(3)
        with log.action("idle", f"left with the Inbox shown for {args.idle} s") as entry:
            deadline = time.monotonic() + args.idle
            while time.monotonic() < deadline:
                time.sleep(min(30, max(0, deadline - time.monotonic())))
            entry["seconds"] = args.idle
        with log.action("quit", "Thunderbird quits (its connections LOGOUT)"):
            client.execute_script("Services.startup.quit(Ci.nsIAppStartup.eForceQuit);")
            process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


if __name__ == "__main__":
    main()
