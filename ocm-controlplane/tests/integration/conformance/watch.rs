//! Watch steps: the stream is opened just before the first of its `after_steps` and read in the
//! background until the server closes it, a deadline passes, or (once those steps ran) the
//! recorded number of events arrived and the stream stayed quiet for a moment.

use std::pin::Pin;
use std::time::Duration;

use hyper::body::Body as _;
use serde_json::Value;
use tokio::sync::watch as signal;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::target::{Answer, Outgoing, parse_warnings};

/// When to stop reading a watch.
#[derive(Debug, Clone)]
pub struct StopRule {
    /// Stop once this many events arrived (and the stream stayed quiet), unless `None`.
    pub count: Option<usize>,
    /// How long the stream must stay quiet after the count is reached.
    pub quiet: Duration,
    /// Give up this long after the `after_steps` ran (or after opening when there are none).
    pub window: Duration,
    /// Read until the server closes the stream (bounded by this), ignoring `count`.
    pub until_close: Option<Duration>,
}

impl StopRule {
    /// The rule for a recorded watch: its event count, `until` text and `timeoutSeconds`.
    pub fn for_recorded(events: usize, until: &str, timeout_seconds: Option<u64>) -> Self {
        let quiet = seconds_before(until, "s quiet").unwrap_or(1.0);
        let within = until
            .find("within ")
            .and_then(|at| seconds_before(&until[at..], "s"));
        let mut rule = Self {
            count: Some(events),
            quiet: Duration::from_secs_f64(quiet),
            window: Duration::from_secs(10),
            until_close: None,
        };
        if let Some(within) = within {
            rule.count = None;
            rule.window = Duration::from_secs_f64(within);
        }
        if let Some(timeout) = timeout_seconds {
            rule.count = None;
            rule.until_close = Some(Duration::from_secs(timeout + 5));
        }
        rule
    }
}

/// The number right before the first `suffix` in `text` (`"then 1.5s quiet"` -> 1.5).
fn seconds_before(text: &str, suffix: &str) -> Option<f64> {
    let end = text.find(suffix)?;
    let start = text[..end]
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(0, |i| i + 1);
    text[start..end].parse().ok()
}

/// One event as streamed.
#[derive(Debug, Clone)]
pub struct StreamedEvent {
    /// The parsed line (`{"type": ..., "object": ...}`), or the raw text if it was not JSON.
    pub value: Result<Value, String>,
}

/// What a watch produced.
#[derive(Debug, Clone)]
pub struct WatchOutcome {
    /// The HTTP answer; its body is set only when the server refused the watch.
    pub answer: Answer,
    /// The events, in order.
    pub events: Vec<StreamedEvent>,
    /// Why reading stopped.
    pub ended: String,
}

/// An open watch being read in the background.
pub struct OpenWatch {
    steps_done: signal::Sender<Option<Instant>>,
    task: JoinHandle<WatchOutcome>,
}

impl OpenWatch {
    /// Sends the watch request and starts reading.
    pub async fn open(client: &kube::Client, request: &Outgoing, rule: StopRule) -> Self {
        let (steps_done, mut done_rx) = signal::channel(None);
        let opened = Instant::now();
        let response = match request.build() {
            Ok(built) => client
                .send(built)
                .await
                .map_err(|e| format!("sending the watch {}: {e}", request.uri)),
            Err(e) => Err(e),
        };
        let task = tokio::spawn(async move {
            let response = match response {
                Ok(response) => response,
                Err(error) => {
                    return WatchOutcome {
                        answer: Answer {
                            status: 0,
                            content_type: None,
                            warnings: Vec::new(),
                            body: Vec::new(),
                        },
                        events: Vec::new(),
                        ended: error,
                    };
                }
            };
            let (parts, mut body) = response.into_parts();
            let mut answer = Answer {
                status: parts.status.as_u16(),
                content_type: parts
                    .headers
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string),
                warnings: parts
                    .headers
                    .get_all("warning")
                    .iter()
                    .filter_map(|v| v.to_str().ok())
                    .flat_map(parse_warnings)
                    .collect(),
                body: Vec::new(),
            };
            if answer.status != 200 {
                answer.body = match body.collect_bytes().await {
                    Ok(bytes) => bytes.to_vec(),
                    Err(error) => format!("(reading the body failed: {error})").into_bytes(),
                };
                return WatchOutcome {
                    answer,
                    events: Vec::new(),
                    ended: "refused".into(),
                };
            }
            let mut buffer: Vec<u8> = Vec::new();
            let mut events = Vec::new();
            let mut last_event = opened;
            let ended = loop {
                let done_at = *done_rx.borrow();
                let now = Instant::now();
                let deadline = match (rule.until_close, done_at) {
                    (Some(limit), _) => opened + limit,
                    (None, Some(done)) => {
                        let give_up: Instant = done + rule.window;
                        match rule.count {
                            Some(count) if events.len() >= count => {
                                give_up.min(last_event.max(done) + rule.quiet)
                            }
                            _ => give_up,
                        }
                    }
                    // The after_steps have not run yet: keep reading.
                    (None, None) => now + Duration::from_secs(3600),
                };
                if now >= deadline {
                    break "stopped reading (deadline or quiet after the recorded count)".to_string();
                }
                let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx));
                tokio::select! {
                    frame = frame => match frame {
                        None => break "server closed the stream".to_string(),
                        Some(Err(error)) => break format!("stream error: {error}"),
                        Some(Ok(frame)) => {
                            if let Ok(data) = frame.into_data() {
                                buffer.extend_from_slice(&data);
                                let before = events.len();
                                drain_lines(&mut buffer, &mut events);
                                if events.len() > before {
                                    last_event = Instant::now();
                                }
                            }
                        }
                    },
                    changed = done_rx.changed(), if done_at.is_none() => {
                        if changed.is_err() {
                            break "watch abandoned".to_string();
                        }
                    }
                    () = tokio::time::sleep_until(deadline) => {}
                }
            };
            if !buffer.iter().all(u8::is_ascii_whitespace) {
                events.push(StreamedEvent {
                    value: Err(String::from_utf8_lossy(&buffer).into_owned()),
                });
            }
            WatchOutcome {
                answer,
                events,
                ended,
            }
        });
        Self { steps_done, task }
    }

    /// Tells the reader that the `after_steps` ran.
    pub fn steps_done(&self) {
        let _ = self.steps_done.send(Some(Instant::now()));
    }

    /// Waits for the reader to stop.
    pub async fn finish(self) -> WatchOutcome {
        self.steps_done();
        match self.task.await {
            Ok(outcome) => outcome,
            Err(error) => WatchOutcome {
                answer: Answer {
                    status: 0,
                    content_type: None,
                    warnings: Vec::new(),
                    body: Vec::new(),
                },
                events: Vec::new(),
                ended: format!("reader task failed: {error}"),
            },
        }
    }
}

/// Moves every complete line of `buffer` into `events`.
fn drain_lines(buffer: &mut Vec<u8>, events: &mut Vec<StreamedEvent>) {
    while let Some(end) = buffer.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = buffer.drain(..=end).collect();
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value = serde_json::from_slice::<Value>(&line)
            .map_err(|_| String::from_utf8_lossy(&line).trim().to_string());
        events.push(StreamedEvent { value });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_rules_from_until() {
        let rule = StopRule::for_recorded(3, "3 events (ADDED, MODIFIED, DELETED) then 1.5s quiet", None);
        assert_eq!((rule.count, rule.quiet), (Some(3), Duration::from_millis(1500)));
        let rule = StopRule::for_recorded(
            5,
            "whatever arrives within 3s (served from the watch cache)",
            None,
        );
        assert_eq!((rule.count, rule.window), (None, Duration::from_secs(3)));
        let rule = StopRule::for_recorded(1, "server closes the stream after timeoutSeconds", Some(5));
        assert_eq!(
            (rule.count, rule.until_close),
            (None, Some(Duration::from_secs(10)))
        );
    }

    #[test]
    fn lines_split_across_frames() {
        let mut buffer = br#"{"type":"ADDED","object":{}}"#.to_vec();
        buffer.extend_from_slice(b"\n{\"type\":\"DEL");
        let mut events = Vec::new();
        drain_lines(&mut buffer, &mut events);
        assert_eq!(events.len(), 1);
        buffer.extend_from_slice(b"ETED\",\"object\":{}}\n");
        drain_lines(&mut buffer, &mut events);
        assert_eq!(events[1].value.as_ref().unwrap()["type"], "DELETED");
    }
}
