//! Real mail servers for one test, from Debian's packages: Postfix accepting SMTP on a free
//! loopback port and delivering everything over LMTP into Dovecot, which serves the mailboxes
//! over IMAP on another. Configured in a temp dir and started in the foreground (as root, as
//! sessions and CI run); stopped when dropped. Mailboxes are Maildirs under the temp dir, so a
//! test can also see exactly what Dovecot holds (and its flags) without a second IMAP client.

use crate::redis_server::free_port;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The mailboxes and their passwords.
pub const USERS: [(&str, &str); 3] = [
    ("askbridge@askbridge.test", "bridge-pw"),
    ("alice@example.com", "alice-pw"),
    ("bob@example.org", "bob-pw"),
];

pub struct MailServers {
    pub smtp: u16,
    pub imap: u16,
    lmtp: u16,
    dir: tempfile::TempDir,
    postfix: Option<Child>,
    dovecot: Option<Child>,
}

fn need(binary: &str) {
    assert!(
        Path::new(binary).exists(),
        "{binary} is not installed: run ./scripts/test (it installs dovecot-imapd, dovecot-lmtpd \
         and postfix) or apt-get install them"
    );
}

fn wait_for_port(port: u16, what: &str, log: &Path) {
    // Generous: a loaded CI machine starts Dovecot and Postfix slowly.
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "{what} did not listen on {port}: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

impl MailServers {
    pub fn start() -> Self {
        need("/usr/sbin/dovecot");
        need("/usr/sbin/postfix");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        // Postfix's and Dovecot's unprivileged processes must reach their directories.
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (smtp, imap, lmtp) = (free_port(), free_port(), free_port());
        for sub in [
            "dovecot/run",
            "dovecot/state",
            "mail",
            "postfix",
            "spool",
            "data",
        ] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::set_permissions(root.join("mail"), std::fs::Permissions::from_mode(0o777))
            .unwrap();
        let d = root.display();
        let users: String = USERS
            .iter()
            .map(|(user, password)| format!("{user}:{{PLAIN}}{password}::::::\n"))
            .collect();
        std::fs::write(root.join("dovecot/users"), users).unwrap();
        std::fs::write(
            root.join("dovecot/dovecot.conf"),
            format!(
                r#"protocols = imap lmtp
listen = 127.0.0.1
base_dir = {d}/dovecot/run
state_dir = {d}/dovecot/state
log_path = {d}/dovecot/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
first_valid_uid = 1
mail_uid = nobody
mail_gid = nogroup
mail_location = maildir:{d}/mail/%u
recipient_delimiter = +
lmtp_save_to_detail_mailbox = no
default_login_user = dovenull
default_internal_user = dovecot
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {d}/dovecot/users
}}
userdb {{
  driver = passwd-file
  args = username_format=%u {d}/dovecot/users
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service lmtp {{
  inet_listener lmtp {{
    address = 127.0.0.1
    port = {lmtp}
  }}
}}
"#
            ),
        )
        .unwrap();
        let dovecot = spawn_dovecot(root);
        std::fs::write(
            root.join("postfix/main.cf"),
            format!(
                "compatibility_level = 3.6
queue_directory = {d}/spool
data_directory = {d}/data
mail_owner = postfix
setgid_group = postdrop
myhostname = mx.askbridge.test
mydomain = askbridge.test
myorigin = askbridge.test
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
relay_domains = static:ALL
smtpd_relay_restrictions = permit_mynetworks, reject
smtpd_recipient_restrictions = permit_mynetworks, reject
default_transport = lmtp:inet:127.0.0.1:{lmtp}
relay_transport = lmtp:inet:127.0.0.1:{lmtp}
maillog_file_prefixes = {d}
maillog_file = {d}/postfix.log
smtputf8_enable = yes
biff = no
append_dot_mydomain = no
alias_maps =
alias_database =
local_recipient_maps =
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
"
            ),
        )
        .unwrap();
        let services = [
            "pickup    unix  n - n 60 1 pickup",
            "cleanup   unix  n - n - 0 cleanup",
            "qmgr      unix  n - n 300 1 qmgr",
            "rewrite   unix  - - n - - trivial-rewrite",
            "bounce    unix  - - n - 0 bounce",
            "defer     unix  - - n - 0 bounce",
            "trace     unix  - - n - 0 bounce",
            "verify    unix  - - n - 1 verify",
            "flush     unix  n - n 1000? 0 flush",
            "proxymap  unix  - - n - - proxymap",
            "smtp      unix  - - n - - smtp",
            "relay     unix  - - n - - smtp",
            "showq     unix  n - n - - showq",
            "error     unix  - - n - - error",
            "retry     unix  - - n - - error",
            "discard   unix  - - n - - discard",
            "lmtp      unix  - - n - - lmtp",
            "anvil     unix  - - n - 1 anvil",
            "scache    unix  - - n - 1 scache",
            "postlog   unix-dgram n - n - 1 postlogd",
        ];
        std::fs::write(
            root.join("postfix/master.cf"),
            format!("{smtp} inet n - n - - smtpd\n{}\n", services.join("\n")),
        )
        .unwrap();
        // The master's lock file lives in data_directory, written as the postfix user.
        let chown = Command::new("chown")
            .arg("postfix")
            .arg(root.join("data"))
            .status()
            .unwrap();
        assert!(chown.success(), "chown postfix failed (not root?)");
        let postfix = postfix(root, "start-fg").spawn().unwrap();
        let servers = MailServers {
            smtp,
            imap,
            lmtp,
            postfix: Some(postfix),
            dovecot: Some(dovecot),
            dir,
        };
        wait_for_port(imap, "Dovecot", &servers.path("dovecot/dovecot.log"));
        wait_for_port(lmtp, "Dovecot's LMTP", &servers.path("dovecot/dovecot.log"));
        wait_for_port(smtp, "Postfix", &servers.path("postfix.log"));
        servers
    }

    /// Stops Dovecot (IMAP and LMTP) until [`MailServers::start_dovecot`].
    pub fn stop_dovecot(&mut self) {
        if let Some(dovecot) = self.dovecot.take() {
            stop(dovecot);
        }
    }

    /// Starts Dovecot again, on the same ports and mailboxes, and has Postfix deliver what it
    /// queued meanwhile at once (`postfix flush`), as an operator would: left to its own retry,
    /// Postfix once let a deferred mail wait over 20 s (a CI run, 2026-12-07, after "skipped,
    /// still being delivered" in its log).
    pub fn start_dovecot(&mut self) {
        assert!(self.dovecot.is_none(), "Dovecot is running");
        self.dovecot = Some(spawn_dovecot(self.dir.path()));
        let log = self.path("dovecot/dovecot.log");
        wait_for_port(self.imap, "Dovecot", &log);
        wait_for_port(self.lmtp, "Dovecot's LMTP", &log);
        let flushed = postfix(self.dir.path(), "flush").status().unwrap();
        assert!(flushed.success(), "postfix flush: {flushed}");
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    /// Sends `raw` over SMTP to Postfix, as a remote server would hand a mail to our MX: each
    /// command, then the whole mail, in one write each, without waiting for Nagle (each line
    /// written alone waited for Postfix's delayed ACK: 180 ms a mail, where askbridge's took 50).
    pub fn send(&self, from: &str, to: &str, raw: &[u8]) {
        let stream = TcpStream::connect(("127.0.0.1", self.smtp)).unwrap();
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        let expect = |code: &str, reader: &mut BufReader<TcpStream>| loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            assert!(
                line.starts_with(code),
                "SMTP: expected {code}, got {line:?}"
            );
            if line.as_bytes().get(3) != Some(&b'-') {
                break;
            }
        };
        expect("220", &mut reader);
        for (command, code) in [
            ("EHLO client.test".to_owned(), "250"),
            (format!("MAIL FROM:<{from}>"), "250"),
            (format!("RCPT TO:<{to}>"), "250"),
            ("DATA".to_owned(), "354"),
        ] {
            writer
                .write_all(format!("{command}\r\n").as_bytes())
                .unwrap();
            expect(code, &mut reader);
        }
        let text = String::from_utf8_lossy(raw).replace("\r\n", "\n");
        let mut data = String::with_capacity(text.len() + 64);
        for line in text.lines() {
            if line.starts_with('.') {
                data.push('.');
            }
            data.push_str(line);
            data.push_str("\r\n");
        }
        data.push_str(".\r\n");
        writer.write_all(data.as_bytes()).unwrap();
        expect("250", &mut reader);
        writer.write_all(b"QUIT\r\n").unwrap();
    }

    /// Every mail `user` holds (INBOX and folders) as Dovecot stores them, oldest first, with
    /// their Maildir flags (`S` for \Seen; lower-case letters for keywords).
    pub fn mailbox(&self, user: &str) -> Vec<(Vec<u8>, String)> {
        maildir(self.files(user))
    }

    /// The files of the mails `user` holds, without reading them (cheap enough for the email
    /// benchmark to look every 200 µs).
    pub fn files(&self, user: &str) -> Vec<PathBuf> {
        files_in(&self.maildirs(user))
    }

    /// `user`'s INBOX and folders.
    fn maildirs(&self, user: &str) -> Vec<PathBuf> {
        let base = self.path("mail").join(user);
        let mut dirs = vec![base.clone()];
        if let Ok(entries) = std::fs::read_dir(&base) {
            dirs.extend(
                entries
                    .flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
                    .map(|e| e.path()),
            );
        }
        dirs
    }

    /// The mails in one of `user`'s folders (`INBOX`, or a folder such as `Askbridge`).
    pub fn folder(&self, user: &str, folder: &str) -> Vec<(Vec<u8>, String)> {
        let base = self.path("mail").join(user);
        let dir = if folder == "INBOX" {
            base
        } else {
            base.join(format!(".{folder}"))
        };
        maildir(files_in(&[dir]))
    }

    /// Dovecot's log (its logins, for the IDLE test).
    pub fn dovecot_log(&self) -> String {
        std::fs::read_to_string(self.path("dovecot/dovecot.log")).unwrap_or_default()
    }

    /// Postfix's log (for assertion messages).
    pub fn postfix_log(&self) -> String {
        std::fs::read_to_string(self.path("postfix.log")).unwrap_or_default()
    }
}

impl Drop for MailServers {
    fn drop(&mut self) {
        // A test failing with the servers up: their logs go with the temporary directory, so
        // their ends are printed beside the failure (where a mail waited, or why a login failed).
        if std::thread::panicking() {
            for (name, text) in [
                ("Postfix", self.postfix_log()),
                ("Dovecot", self.dovecot_log()),
            ] {
                let lines: Vec<&str> = text.lines().collect();
                let tail = lines[lines.len().saturating_sub(LOG_TAIL)..].join("\n");
                eprintln!("--- the last {LOG_TAIL} lines of {name}'s log ---\n{tail}");
            }
        }
        let _ = postfix(self.dir.path(), "stop").status();
        // SIGTERM, so that each master stops its own children.
        for child in [self.postfix.take(), self.dovecot.take()]
            .into_iter()
            .flatten()
        {
            stop(child);
        }
    }
}

/// How many lines of each server's log a failing test prints.
const LOG_TAIL: usize = 80;

/// `postfix -c <root>/postfix <action>`, its output discarded (it logs to its own file).
fn postfix(root: &Path, action: &str) -> Command {
    let mut command = Command::new("/usr/sbin/postfix");
    command
        .arg("-c")
        .arg(root.join("postfix"))
        .arg(action)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// The mails' files in Maildirs `dirs` (delivered, `new`, and seen by a client, `cur`).
fn files_in(dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs.iter()
        .flat_map(|dir| ["new", "cur"].map(|sub| dir.join(sub)))
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flat_map(|entries| entries.flatten().map(|entry| entry.path()))
        .collect()
}

/// The mails in `files`, oldest first, with their Maildir flags.
fn maildir(mut files: Vec<PathBuf>) -> Vec<(Vec<u8>, String)> {
    // Maildir names start with the delivery time in seconds, then a unique part.
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    files
        .into_iter()
        .filter_map(|path| {
            let name = path.file_name()?.to_string_lossy().into_owned();
            let flags = name
                .split_once(":2,")
                .map(|(_, f)| f.to_owned())
                .unwrap_or_default();
            // A mail moved between listing and reading is read at its new place next time.
            Some((std::fs::read(&path).ok()?, flags))
        })
        .collect()
}

fn spawn_dovecot(root: &Path) -> Child {
    Command::new("/usr/sbin/dovecot")
        .args(["-F", "-c"])
        .arg(root.join("dovecot/dovecot.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// SIGTERM, so that a master stops its own children, then waits for it.
fn stop(mut child: Child) {
    let _ = Command::new("kill")
        .arg(child.id().to_string())
        .stderr(Stdio::null())
        .status();
    let _ = child.wait();
}
