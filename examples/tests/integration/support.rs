//! Running the example binaries as child processes, and waiting for them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long a step of a test may take.
pub const DEADLINE: Duration = Duration::from_secs(90);

/// A name unique to this test run (lowercase, DNS-safe).
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{prefix}-{}-{nanos:x}", std::process::id())
}

/// Polls `f` every 200 ms until it returns `Some`, panicking after [`DEADLINE`].
pub async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(value) = f().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A free port on 127.0.0.1 (free when asked; the process binds it shortly after).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The status line and body of `GET http://127.0.0.1:<port><path>`, or `None` when nothing
/// answers.
pub async fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).await.ok()?;
    let code = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((code, body))
}

/// A running example binary; killed when dropped. Its output goes to `<log>`.
pub struct Process {
    name: String,
    child: Mutex<Child>,
    log: PathBuf,
}

impl Process {
    /// Starts `binary` with `args`, its stdout and stderr in `log`.
    pub fn start(binary: &str, args: &[String], log: &Path) -> Self {
        Self::start_in(binary, args, log, &std::env::current_dir().unwrap())
    }

    /// Starts `binary` with `args` in the working directory `cwd`, its output in `log`.
    pub fn start_in(binary: &str, args: &[String], log: &Path, cwd: &Path) -> Self {
        let file = std::fs::File::create(log).unwrap();
        let child = Command::new(binary)
            .args(args)
            .current_dir(cwd)
            // Each binary's own default log level.
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        Self {
            name: Path::new(binary)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned(),
            child: Mutex::new(child),
            log: log.to_path_buf(),
        }
    }

    /// What the process wrote so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Panics with the process's output when it has exited already.
    pub fn assert_running(&self) {
        if let Some(status) = self.try_wait() {
            panic!("{} exited with {status}:\n{}", self.name, self.output());
        }
    }

    fn try_wait(&self) -> Option<ExitStatus> {
        self.child.lock().unwrap().try_wait().unwrap()
    }

    /// Sends SIGTERM and waits (up to [`DEADLINE`]) for the process to exit.
    pub async fn terminate(self) -> ExitStatus {
        let pid = self.child.lock().unwrap().id();
        let status = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -TERM failed");
        self.wait().await
    }

    /// Waits (up to [`DEADLINE`]) for the process to exit.
    pub async fn wait(&self) -> ExitStatus {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.try_wait() {
                return status;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} did not exit in time:\n{}",
                self.name,
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let child = self
            .child
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Runs `binary` with `args` to its end (up to [`DEADLINE`]); its exit status and output.
pub async fn run_to_end(binary: &str, args: &[String], log: &Path) -> (ExitStatus, String) {
    let process = Process::start(binary, args, log);
    let status = process.wait().await;
    (status, process.output())
}
