//! A benchmark's local server in a child process (the benchmark binary re-run with a
//! `--serve-…` argument): its own process group, so the client's CPU time is its own;
//! ended by closing its stdin, and by pid.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

pub(crate) struct ServerChild {
    child: Child,
    pub base_url: String,
}

impl ServerChild {
    /// Starts `<this binary> <arg>` and reads the `http://addr` line it prints.
    pub(crate) fn start(arg: &str) -> ServerChild {
        Self::start_with(arg, |_| {})
    }

    /// [`ServerChild::start`], with `configure` applied to the command first (e.g. pinning).
    pub(crate) fn start_with(arg: &str, configure: impl FnOnce(&mut Command)) -> ServerChild {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        configure(&mut cmd);
        let mut child = cmd
            .arg(arg)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the server child");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        ServerChild {
            child,
            base_url: line.trim().to_string(),
        }
    }

    pub(crate) fn port(&self) -> u16 {
        self.base_url.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// Server-side first-chunk delays by request id (`GET /timings`).
    pub(crate) fn timings(&self) -> HashMap<String, f64> {
        self.get("timings")
    }

    pub(crate) fn get<T: serde::de::DeserializeOwned>(&self, what: &str) -> T {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let client = reqwest::Client::builder().no_proxy().build().unwrap();
            let url = format!("{}/{what}", self.base_url);
            let r = client.get(url).send().await.unwrap();
            r.json::<T>().await.unwrap()
        })
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
