//! Driving a full-screen program in a private tmux server: start it in a
//! detached session of 120×36, type keys, read the screen.

#![allow(dead_code, clippy::unwrap_used)]

use std::process::Command;
use std::time::{Duration, Instant};

/// A private tmux server (its own socket), killed when dropped.
pub struct Tmux {
    /// The socket name (`tmux -L`).
    pub socket: String,
}

impl Tmux {
    /// A private server for this test (its own socket, named by `tag` and
    /// the process); fails the test when tmux is missing (see
    /// [`super::needs`]).
    pub fn private(tag: &str) -> Self {
        super::needs::tmux();
        Self {
            socket: format!("strata-{tag}-{}", std::process::id()),
        }
    }

    pub fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .unwrap()
    }

    pub fn start(&self, name: &str, shell_command: &str) {
        let out = self.cmd(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "120",
            "-y",
            "36",
            shell_command,
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    pub fn screen(&self, name: &str) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", name]).stdout).into_owned()
    }

    pub fn keys(&self, name: &str, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", name];
        args.extend_from_slice(keys);
        self.cmd(&args);
    }

    /// Waits (20 s at most) until the screen of `name` contains `what`.
    pub async fn wait_for(&self, name: &str, what: &str) -> String {
        self.wait_until(name, what, Duration::from_secs(20), |s| s.contains(what))
            .await
    }

    /// Waits up to `limit` until `done` holds for the screen of `name`;
    /// `what` names the wait in the failure message.
    pub async fn wait_until(
        &self,
        name: &str,
        what: &str,
        limit: Duration,
        done: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let screen = self.screen(name);
            if done(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "'{what}' never appeared; the screen:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}
