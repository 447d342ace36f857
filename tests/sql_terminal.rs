//! The interactive `hummer sql` client driven through a pseudo-terminal, as a user types at
//! it: a statement over several lines, a query's result drawn as a table, the history brought
//! back with the up arrow, a running query stopped with Ctrl-C without ending the client,
//! `HELP` and `QUIT`.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A pseudo-terminal's two ends: the one the client gets, and ours.
fn pty() -> (OwnedFd, OwnedFd) {
    let (mut ours, mut theirs) = (0, 0);
    // SAFETY: openpty writes two new descriptors into the integers it is given.
    let rc = unsafe {
        libc::openpty(
            &mut ours,
            &mut theirs,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned by nothing else.
    unsafe { (OwnedFd::from_raw_fd(ours), OwnedFd::from_raw_fd(theirs)) }
}

/// What the client printed so far, read by a thread, and waited on.
struct Screen {
    text: String,
    chunks: mpsc::Receiver<String>,
}

impl Screen {
    /// Waits until the screen holds `needle` `times` times (or fails, showing it).
    fn wait_for(&mut self, needle: &str, times: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.text.matches(needle).count() < times {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.chunks.recv_timeout(left) {
                Ok(chunk) => self.text.push_str(&chunk),
                Err(_) => panic!(
                    "'{needle}' x{times} did not show; the screen:\n{}",
                    self.text
                ),
            }
        }
    }
}

/// Types `keys` at the terminal.
fn type_keys(input: &mut std::fs::File, keys: &str) {
    input.write_all(keys.as_bytes()).expect("type");
    input.flush().expect("flush");
}

#[test]
fn the_interactive_client_edits_shows_stops_and_quits() {
    let home = tempfile::tempdir().expect("temp dir");
    let data = home.path().join("bids");
    std::fs::create_dir(&data).expect("mkdir");
    std::fs::write(data.join("part-0.csv"), "1,100\n2,250\n1,300\n").expect("write");
    let (ours, theirs) = pty();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hummer"))
        .arg("sql")
        .env("HOME", home.path())
        .env("TERM", "xterm")
        .stdin(Stdio::from(theirs.try_clone().expect("dup")))
        .stdout(Stdio::from(theirs.try_clone().expect("dup")))
        .stderr(Stdio::from(theirs))
        .spawn()
        .expect("start hummer sql");
    let mut input = std::fs::File::from(ours.try_clone().expect("dup"));
    let mut output = std::fs::File::from(ours);
    let (tx, chunks) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = output.read(&mut buf) {
            if n == 0
                || tx
                    .send(String::from_utf8_lossy(&buf[..n]).into_owned())
                    .is_err()
            {
                break;
            }
        }
    });
    let mut screen = Screen {
        text: String::new(),
        chunks,
    };
    // Types a line once the client prompts for it (input typed ahead of a prompt may be
    // dropped when the terminal's mode changes), and waits for the next prompt.
    let line = |input: &mut std::fs::File, screen: &mut Screen, keys: &str| {
        let prompts = screen.text.matches("> ").count();
        type_keys(input, &format!("{keys}\r"));
        screen.wait_for("> ", prompts + 1);
    };
    screen.wait_for("Hummer SQL> ", 1);
    // A statement over two lines: the second prompt says it goes on.
    line(
        &mut input,
        &mut screen,
        "CREATE TABLE bid (auction BIGINT, price BIGINT)",
    );
    line(
        &mut input,
        &mut screen,
        &format!(
            "WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');",
            data.display()
        ),
    );
    screen.wait_for("Execute statement succeeded.", 1);
    // A GROUP BY: its table shows the final sums (the update of auction 1 replaced its row).
    line(
        &mut input,
        &mut screen,
        "SELECT auction, SUM(price) AS total FROM bid GROUP BY auction;",
    );
    screen.wait_for("2 rows in the result", 1);
    assert!(screen.text.contains("400"), "{}", screen.text);
    // The up arrow brings the query back; run again, it shows again.
    line(&mut input, &mut screen, "\x1b[A");
    screen.wait_for("2 rows in the result", 2);
    // A query that would run for ever, stopped by Ctrl-C; the client goes on.
    line(
        &mut input,
        &mut screen,
        "CREATE TABLE events (event_type INT, person ROW<id BIGINT, name VARCHAR, \
         emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR, \
         `dateTime` TIMESTAMP(3), extra VARCHAR>, auction ROW<id BIGINT, itemName VARCHAR, \
         description VARCHAR, initialBid BIGINT, reserve BIGINT, `dateTime` TIMESTAMP(3), \
         expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR>, bid ROW<auction \
         BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `dateTime` \
         TIMESTAMP(3), extra VARCHAR>) WITH ('connector' = 'nexmark');",
    );
    screen.wait_for("Execute statement succeeded.", 2);
    let prompts = screen.text.matches("> ").count();
    type_keys(
        &mut input,
        "SELECT event_type, COUNT(*) AS n FROM events GROUP BY event_type;\r",
    );
    screen.wait_for("event_type", 2);
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill sends a signal to the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    screen.wait_for("[INFO] Query stopped", 1);
    screen.wait_for("> ", prompts + 1);
    line(&mut input, &mut screen, "HELP;");
    screen.wait_for("QUIT", 2);
    type_keys(&mut input, "QUIT;\r");
    screen.wait_for("Exiting Hummer SQL", 1);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().expect("the client's status") {
            assert!(status.success(), "{status}: {}", screen.text);
            break;
        }
        assert!(Instant::now() < deadline, "the client did not end");
        std::thread::sleep(Duration::from_millis(50));
    }
    let history =
        std::fs::read_to_string(home.path().join(".hummer_sql_history")).expect("the history file");
    assert!(history.contains("GROUP BY auction"), "{history}");
}
